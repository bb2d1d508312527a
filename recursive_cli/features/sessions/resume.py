"""Which session `resume` continues, and the settings it continues with (SPEC §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.settings import LoadedSettings, Settings
from .meta import SessionMeta
from .records import SessionNotFoundError
from .store import SessionStore

RESTORED = ("model", "provider", "api_base", "workspace", "permission_mode", "allow", "deny",
            "max_cost", "max_steps", "script")


def pick_session(store: SessionStore, ref: str | None, workspace: Path) -> str:
    """The id for `ref` (id or unique prefix), or this workspace's latest session when None."""
    if ref:
        return store.resolve(ref)
    latest = store.latest(workspace)
    if latest is None:
        raise SessionNotFoundError(f"no session for workspace {workspace} (see `recursive sessions list`)")
    return latest


def saved_values(meta: SessionMeta) -> dict[str, Any]:
    """The settings a session was running with, as Settings fields."""
    return {
        "model": meta.model or None, "provider": meta.provider or None, "api_base": meta.api_base,
        "workspace": Path(meta.workspace), "permission_mode": meta.permission_mode,
        "allow": meta.allow, "deny": meta.deny, "max_cost": meta.budgets.max_cost,
        "max_steps": meta.budgets.max_steps or 100, "script": Path(meta.script) if meta.script else None,
    }


def restore_settings(loaded: LoadedSettings, meta: SessionMeta) -> tuple[Settings, list[str]]:
    """The session's saved settings, overridden only by flags given now; notes say what changed."""
    current = loaded.settings
    saved = saved_values(meta)
    values: dict[str, Any] = {}
    notes: list[str] = []
    for key in RESTORED:
        given = loaded.sources.get(key) == "flag" or saved[key] in ("", None) and key != "max_cost"
        now = getattr(current, key)
        if given and now != saved[key]:
            notes.append(_override_note(key, saved[key], now))
        values[key] = now if given else saved[key]
    values["api_key"] = loaded.api_key_for(values["provider"])
    return current.model_copy(update=values), notes


def _override_note(key: str, old: Any, new: Any) -> str:
    flag = "--" + key.replace("_", "-")
    if key in ("permission_mode", "allow", "deny"):
        return f"note: {flag} given: permissions change from {_show(old)} to {_show(new)} for this session"
    return f"note: {flag} overrides the session's {_show(old)} with {_show(new)}"


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]" if value else "none"
    return "none" if value is None else str(value)
