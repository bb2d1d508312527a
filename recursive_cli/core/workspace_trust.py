"""Whether a workspace's own configuration counts, and which of its config keys loosen what
the user set (issue 29).

A cloned repository's `.recursive/config.toml` could price every model at nothing (and so
disarm `--max-cost`), point your API key at its own server or allow every command. Such a
key is held back — left out, and named on stderr — until the workspace is trusted
(`recursive trust`, `--trust-workspace`). A key that only narrows what the user set (fewer
steps, a deny rule, a stricter mode or sandbox) or that moves no limit at all (a model name,
the output format, a prompt) takes effect at once. The record of trusted folders is kept by
`features/trust/`; `load_settings` asks it through a `TrustCheck`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

# The workspace's own files that can run commands or loosen limits, as `recursive trust`
# fingerprints them (relative to the workspace).
WORKSPACE_FILES = (".claude/settings.json", ".claude/settings.local.json", ".recursive/settings.json",
                   ".mcp.json", ".recursive/config.toml")
# The workspace's own subagents (features/subagents): each `.claude/agents/NAME.md` is one of its config files too.
AGENT_FOLDER = ".claude/agents"
# The workspace's own skills (features/skills): each `<folder>/NAME/SKILL.md` is one of its config files too.
SKILL_FOLDERS = (".claude/skills", ".agents/skills")

# Keys a workspace may never set before it is trusted, whatever their value: where the key
# goes and what answers (api-base, provider, script), what a run costs (prices), what the
# tools reach (add-dir, workspace, the ports a sandboxed command may connect to), the skills
# the model is offered (skill), and trust itself.
ALWAYS_HELD = frozenset({"api_base", "provider", "script", "prices", "add_dir", "workspace",
                         "trust_workspace", "sandbox_allow_ports", "skill"})
# Limits a lower value narrows (None: no limit at all).
LIMITS = {"max_steps": 100, "max_cost": None, "max_duration": None, "shell_timeout": 120.0,
          "mcp_timeout": 30.0}
# Switches that loosen when on.
LOOSE_WHEN_ON = frozenset({"sandbox_network", "allow_private_network", "no_session", "no_checkpoints"})
# Choices from the strictest to the loosest.
RANKS = {"permission_mode": ("read-only", "ask", "accept-edits", "auto"),
         "sandbox": ("read-only", "workspace-write", "off")}


def own_files(workspace: Path, home: Path) -> tuple[str, ...]:
    """The workspace's own config files that exist (`WORKSPACE_FILES`); one that is a file of
    the user's (`$RECURSIVE_HOME/…`: a workspace at `~` has it as `.recursive/config.toml`)
    is theirs, not the workspace's."""
    return tuple(name for name in (*WORKSPACE_FILES, *skill_files(workspace), *agent_files(workspace))
                 if (workspace / name).is_file() and not users_file(workspace / name, home))


def skill_files(workspace: Path) -> list[str]:
    """The workspace's SKILL.md files (`SKILL_FOLDERS`), relative to it, in order; a listing
    of each folder, which most workspaces do not have."""
    found: list[str] = []
    for folder in SKILL_FOLDERS:
        try:
            names = sorted(entry.name for entry in os.scandir(workspace / folder))
        except OSError:
            continue
        found += [f"{folder}/{name}/SKILL.md" for name in names]
    return found


def agent_files(workspace: Path) -> list[str]:
    """The workspace's agent files (`AGENT_FOLDER/*.md`), relative to it, by name; a listing
    of a folder most workspaces do not have."""
    try:
        names = sorted(entry.name for entry in os.scandir(workspace / AGENT_FOLDER) if entry.name.endswith(".md"))
    except OSError:
        return []
    return [f"{AGENT_FOLDER}/{name}" for name in names]


def users_file(path: Path, home: Path) -> bool:
    """Whether `path` is one of the user's own files under `home`."""
    for name in ("config.toml", "settings.json", "mcp.json"):
        try:
            if os.path.samefile(path, home / name):
                return True
        except OSError:  # (either is missing)
            continue
    return False


class TrustVerdict(NamedTuple):
    """Whether `workspace`'s own configuration counts (`trusted`), and why or why not
    (`reason`: `--trust-workspace`, `trusted 2026-…`, `.mcp.json changed since you trusted
    it`…); `files`: its own config files that exist (`WORKSPACE_FILES`); `quiet`: skip them
    without a note (the user chose it: `--bare`)."""

    workspace: Path
    trusted: bool
    reason: str
    files: tuple[str, ...] = ()
    quiet: bool = False

    @property
    def skips(self) -> bool:
        """Whether something of the workspace's own is left out and should be said."""
        return not self.trusted and not self.quiet and bool(self.files)


TrustCheck = Callable[[Path, Path], TrustVerdict]  # (workspace, home) → verdict


class HeldKey(NamedTuple):
    """A key of the workspace's config left out until the workspace is trusted."""

    key: str  # as a config file spells it: `permission-mode`, `prices."MODEL"`
    value: str  # as TOML would write it
    where: str  # `FILE:LINE`


def loosens(key: str, value: Any, base: Mapping[str, Any]) -> bool:
    """Whether the workspace's `key = value` loosens what `base` (the user's config over the
    defaults) sets; a value that cannot be compared counts as loosening."""
    if key in ALWAYS_HELD:
        return True
    if key == "allow":  # a rule allows what the mode would not
        return bool(value)
    if key in LOOSE_WHEN_ON:
        return value is not False
    if key in LIMITS:
        return _raises(key, value, base.get(key, LIMITS[key]))
    if key == "sandbox":
        return _looser(key, value, base.get("sandbox") or _mode_sandbox(base.get("permission_mode")))
    if key in RANKS:
        return _looser(key, value, base.get(key) or RANKS[key][-1])
    return False


def _raises(key: str, value: Any, limit: Any) -> bool:
    try:
        new, old = _seconds(value), _seconds(limit if limit is not None else LIMITS[key])
    except (TypeError, ValueError):
        return True
    if new is None:
        return False
    return old is not None and new > old


def _seconds(value: Any) -> float | None:
    """A limit as a number (a duration's text in seconds); None for no limit."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError("a switch is no limit")
    if isinstance(value, str):
        from .settings import parse_duration  # (settings imports this module)

        return parse_duration(value)
    return float(value)


def _looser(key: str, value: Any, current: Any) -> bool:
    order = RANKS[key]
    if value not in order:
        return True
    return order.index(value) > (order.index(current) if current in order else len(order))


def _mode_sandbox(mode: Any) -> str:
    return "read-only" if mode == "read-only" else "workspace-write"


def toml_value(value: Any) -> str:
    """`value` as a config file would write it: `"auto"`, `true`, `["run_shell"]`, `3`."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, default=str)
