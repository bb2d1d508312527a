"""Whether a workspace's own configuration counts for a run, and what of it is left out
when it does not (issue 29).

A workspace is trusted for a run by the user (`--trust-workspace`, `RECURSIVE_TRUST_WORKSPACE`,
their config), or as `recursive trust` recorded it (`store.py`), never with `--bare`.
What a workspace's own configuration would do — its hooks, its MCP servers, its skills, the
config keys that loosen yours — is gathered by `workspace_offer`: `recursive trust` shows it before
recording, and a run that leaves it out names each part on stderr (`run_notes`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.settings import LoadedSettings
from ...core.workspace_trust import HeldKey, TrustVerdict, agent_files, own_files

if TYPE_CHECKING:
    from ..hooks.config import HookCommand
    from ..mcp.config import ServerEntry
    from ..skills import Skill

ALL_PARTS = frozenset({"hooks", "mcp", "skills", "config", "agents"})  # what a workspace's configuration is made of


def check_trust(workspace: Path, home: Path) -> TrustVerdict:
    """The recorded trust of `workspace` (`load_settings`'s `TrustCheck`): a workspace with no
    config files of its own costs a few stats, and the record is not read."""
    workspace = workspace.resolve()
    if not own_files(workspace, home):
        return TrustVerdict(workspace, False, "it has no configuration of its own")
    from .store import TrustStore

    return TrustStore(home).check(workspace)


def verdict_for(loaded: LoadedSettings, workspace: Path) -> TrustVerdict:
    """Whether `workspace`'s own hooks and servers count for a run with these settings: the
    verdict made while they were loaded when it is that folder (a resumed session's may be
    another), else the same rules: never with `--bare`, always with `--trust-workspace`."""
    workspace = workspace.resolve()
    if loaded.trust is not None and loaded.trust.workspace == workspace:
        return loaded.trust
    settings = loaded.settings
    if settings.bare:
        return TrustVerdict(workspace, False, "--bare", quiet=True)
    if settings.trust_workspace:
        source = loaded.sources.get("trust_workspace", "flag")
        return TrustVerdict(workspace, True, "--trust-workspace" if source == "flag" else source)
    return check_trust(workspace, loaded.home)


@dataclass(slots=True)
class WorkspaceOffer:
    """What a workspace's own configuration would do: the hooks it would run, the MCP servers
    it would start, the config keys that loosen yours, the skills it would offer the model, and
    the files that cannot be used."""

    workspace: Path
    hooks: list[HookCommand]
    servers: list[ServerEntry]
    keys: list[HeldKey]
    problems: list[str]
    skills: list[Skill] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)  # its agent files (`.claude/agents/NAME.md`)

    def __bool__(self) -> bool:
        return bool(self.hooks or self.servers or self.keys or self.problems or self.skills or self.agents)

    def lines(self, parts: frozenset[str] = ALL_PARTS) -> list[str]:
        """One line per hook, server, key and unusable file (of `parts` only), as `trust` shows them."""
        lines = [_hook_line(hook, self.workspace) for hook in self.hooks] if "hooks" in parts else []
        lines += [_server_line(entry) for entry in self.servers] if "mcp" in parts else []
        lines += [f"skill {skill.name} ({_short(str(skill.path), self.workspace)})"
                  for skill in self.skills] if "skills" in parts else []
        lines += [f"config {key.key} = {key.value} ({_short(key.where, self.workspace)})"
                  for key in self.keys] if "config" in parts else []
        lines += [f"subagent {Path(path).stem} ({path})" for path in self.agents] if "agents" in parts else []
        return lines + [_short(problem, self.workspace) for problem in self.problems]


def workspace_offer(workspace: Path, home: Path, env: Mapping[str, str], keys: list[HeldKey],
                    parts: frozenset[str] = ALL_PARTS) -> WorkspaceOffer:
    """What `workspace`'s own files would do (`keys`: its loosening config keys, as
    `load_settings` held them); its hook and MCP files read only for `parts`, never run."""
    workspace = workspace.resolve()
    hooks: list[HookCommand] = []
    servers: list[ServerEntry] = []
    problems: list[str] = []
    if "hooks" in parts:
        from ..hooks.config import workspace_hooks

        hooks, problems = workspace_hooks(workspace, home)
    if "mcp" in parts and (workspace / ".mcp.json").is_file():
        from ..mcp.config import McpConfigError, project_servers

        try:
            servers = list(project_servers(workspace, env).servers.values())
        except McpConfigError as exc:
            problems.append(str(exc))
    skills = _workspace_skills(workspace, home) if "skills" in parts else []
    agents = agent_files(workspace) if "agents" in parts else []
    return WorkspaceOffer(workspace, hooks, servers, keys, problems, skills, agents)


def _workspace_skills(workspace: Path, home: Path) -> list[Skill]:
    """The skills of the workspace's own `.claude/skills` and `.agents/skills` (not read at all
    when it has none)."""
    from ...core.workspace_trust import skill_files

    if not skill_files(workspace):
        return []
    from ..skills import SkillChoice, find_skills

    catalog = find_skills(workspace, home, SkillChoice(user="not the workspace's"))
    return [entry.skill for entry in catalog.entries if entry.skill.origin == "workspace"]


def run_notes(loaded: LoadedSettings, parts: frozenset[str] = ALL_PARTS) -> list[str]:
    """A stderr line for each part of an untrusted workspace's configuration (of `parts`) a
    run leaves out, saying what, why and how to trust it; none when nothing is left out."""
    verdict = verdict_for(loaded, loaded.settings.workspace.expanduser())
    if not verdict.skips:
        return []
    same = loaded.trust is not None and loaded.trust.workspace == verdict.workspace
    keys = loaded.held if same and "config" in parts else []
    offer = workspace_offer(verdict.workspace, loaded.home, loaded.env, keys, parts)
    how = f"`recursive trust {folder_hint(verdict.workspace)}` trusts it, `--trust-workspace` for one run"
    return [f"note: skipped the workspace's {line}: {verdict.reason}; {how}" for line in offer.lines(parts)]


def folder_hint(workspace: Path) -> str:
    """How to name `workspace` on a command line: `.` for the current folder."""
    import shlex

    return "." if workspace == Path.cwd().resolve() else shlex.quote(str(workspace))


def _hook_line(hook: HookCommand, workspace: Path) -> str:
    return f"hook {hook.event} [{hook.matcher or '*'}] {hook.command!r} ({_short(hook.source, workspace)})"


def _server_line(entry: ServerEntry) -> str:
    import shlex

    from ..mcp.config import as_written

    view = as_written(entry)
    if view["transport"] == "stdio":
        what = shlex.join([str(view.get("command", "")), *map(str, view.get("args", []))])
    else:
        what = f"{view['transport']} {view.get('url', '')}"
    return f"MCP server {entry.name} {what!r} (.mcp.json)"


def _short(text: str, workspace: Path) -> str:
    """`text` with the workspace's path taken off the files it names."""
    return text.replace(str(workspace) + os.sep, "")
