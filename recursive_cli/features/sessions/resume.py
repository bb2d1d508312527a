"""Which session `resume` continues, and the settings it continues with (SPEC §5)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ...core.settings import ENV_VARS, LoadedSettings, Settings
from .meta import SessionMeta
from .records import SessionNotFoundError
from .store import SessionStore

RESTORED = ("model", "provider", "api_base", "workspace", "permission_mode", "allow", "deny",
            "max_cost", "max_steps", "script", "sandbox", "sandbox_network", "sandbox_allow_ports",
            "effort", "thinking_budget")
# What `sessions import` keeps out of a bundle (quarantine.py): never the bundle's, even should
# its meta.json be edited after the import.
IMPORTER_CHOOSES = ("api_base", "script", "permission_mode", "allow", "max_cost", "max_steps", "sandbox",
                    "sandbox_network", "sandbox_allow_ports")


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
        "sandbox": meta.sandbox, "sandbox_network": meta.sandbox_network,
        "sandbox_allow_ports": meta.sandbox_allow_ports,
        "effort": meta.effort, "thinking_budget": meta.thinking_budget,
    }


def restore_settings(loaded: LoadedSettings, meta: SessionMeta) -> tuple[Settings, list[str]]:
    """The session's saved settings, overridden only by flags given now (and, for the api
    base, by the environment: the user's own variables choose where their key goes); notes
    say what changed. An imported session takes what its import kept out from the user."""
    current = loaded.settings
    saved = saved_values(meta)
    values: dict[str, Any] = {}
    notes: list[str] = []
    for key in RESTORED:  # (provider before api_base: the base variable read is the provider's)
        source, now = _given(loaded, key, values.get("provider"))
        unset = saved[key] in ("", None) and key != "max_cost"
        if source and not unset and now != saved[key]:
            notes.append(_override_note(key, saved[key], now, source))
        ours = bool(source) or unset or meta.imported is not None and key in IMPORTER_CHOOSES
        values[key] = now if ours else saved[key]
    values["api_key"] = loaded.api_key_for(values["provider"])
    return replace(current, **values), notes


def _given(loaded: LoadedSettings, key: str, provider: str | None) -> tuple[str, Any]:
    """Where the user gave `key` now ("" when not by a flag, nor for the api base by an
    environment variable) and its value now."""
    source = loaded.sources.get(key, "")
    now = getattr(loaded.settings, key)
    if source == "flag" or key == "api_base" and source == f"env {ENV_VARS['api_base']}":
        return source, now
    if key == "api_base":  # OPENAI_BASE_URL or ANTHROPIC_BASE_URL: the session's provider's
        var = "ANTHROPIC_BASE_URL" if provider == "anthropic" else "OPENAI_BASE_URL"
        value = loaded.env.get(var)
        return (f"env {var}", value) if value else ("", now)
    return "", now


def _override_note(key: str, old: Any, new: Any, source: str = "flag") -> str:
    given = "--" + key.replace("_", "-") if source == "flag" else source.removeprefix("env ")
    if key in ("permission_mode", "allow", "deny", "sandbox", "sandbox_network", "sandbox_allow_ports"):
        return f"note: {given} given: permissions change from {_show(old)} to {_show(new)} for this session"
    return f"note: {given} overrides the session's {_show(old)} with {_show(new)}"


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]" if value else "none"
    return "none" if value is None else str(value)
