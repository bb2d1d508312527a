"""The parts of a launch every front end builds the same way: the MCP servers (the saved form
of `--mcp-config`, built once, and a resumed session's saved flags), the notes on what an
untrusted workspace leaves out, the tools and skills of a run, and the session the runtime writes.

Nothing here imports typer or the runtime's modules at import time: the headless front end,
which has no typer options, imports it too.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.errors import CliError
from .errors import config_code

if TYPE_CHECKING:
    from ..agent import AgentRuntime
    from ..core.settings import LoadedSettings, Settings
    from ..core.tool import Tool
    from ..features.mcp import McpConfig, McpState
    from ..features.sessions.binding import SessionBinding
    from ..features.sessions.lock import SessionLock
    from ..features.sessions.reader import LoadedSession
    from ..features.skills import SkillCatalog


def mcp_flags(configs: list[str] | None, strict: bool) -> McpState | None:
    """The MCP flags given, as the session saves them; None when there are none."""
    if not (configs or strict):
        return None
    from ..features.mcp import McpState

    return McpState(configs=list(configs or []), strict=strict)


def mcp_servers(loaded: LoadedSettings, given: McpState | None, resumed: LoadedSession | None,
                code: int | None = None) -> McpConfig | None:
    """The MCP servers of a launch: the flags' (`given`; a resumed session's saved flags when
    none are), the workspace's `.mcp.json` and the user's; None when nothing configures any
    (no flag, no file). CliError for a malformed configuration: exit 2 for a flag's, 1 for a
    file found on disk (`code`, when given, for either)."""
    workspace = loaded.settings.workspace.expanduser().resolve()
    saved = resumed is not None and "mcp" in resumed.meta.state
    if given is None and not saved and not any(  # (no file, no flag: the feature stays unloaded)
            path.is_file() for path in (workspace / ".mcp.json", loaded.home / "mcp.json")):
        return None
    from ..features.mcp import McpConfigError, load_mcp_config
    from ..features.trust import verdict_for

    request = given or (saved_mcp(resumed) if resumed is not None else None)
    try:
        return load_mcp_config(workspace, loaded.home, request.configs if request else (),
                               request.strict if request else False, loaded.env, user=not loaded.settings.bare,
                               project=verdict_for(loaded, workspace).trusted)
    except McpConfigError as exc:
        raise CliError(str(exc), config_code(exc) if code is None else code) from None


def saved_mcp(session: LoadedSession) -> McpState | None:
    """The MCP flags the session ran with; a saved file that is gone is left out, with a note."""
    import os

    from ..core.values import parse
    from ..features.mcp import McpState

    if session.meta.imported is not None:  # a bundle's servers are commands: never started (quarantine.py)
        return None
    try:
        saved = parse(McpState, session.meta.state.get(McpState.key) or {})
    except ValueError:
        return None
    kept = [c for c in saved.configs if c.lstrip().startswith("{") or os.path.isfile(c)]
    for gone in set(saved.configs) - set(kept):
        sys.stderr.write(f"note: the session's --mcp-config {gone} no longer exists; its servers are left out\n")
    return McpState(configs=kept, strict=saved.strict) if saved.configs or saved.strict else None


def keep_mcp_flags(runtime: AgentRuntime, servers: McpConfig | None) -> None:
    """Keep in the session the MCP flags its servers came from, in their saved form (JSON text,
    or a file's absolute path; built once, by `load_mcp_config`), for `resume` to start them
    again; a resumed session that was given none keeps its own."""
    request = servers.request if servers else None
    if request is not None and runtime.state.get(type(request)) != request:
        runtime.state.put(type(request), request)


def note_untrusted(loaded: LoadedSettings, strict_mcp: bool = False) -> None:
    """One stderr line for each hook, MCP server (but with `--strict-mcp-config`, which keeps
    them out anyway) and config key of an untrusted workspace that the run leaves out."""
    from ..features.trust import ALL_PARTS, run_notes

    parts = ALL_PARTS - {"mcp"} if strict_mcp else ALL_PARTS
    sys.stderr.writelines(f"{note}\n" for note in run_notes(loaded, parts))


def run_tools(settings: Settings) -> list[Tool]:
    """The core tools of a run; a `--bare` one's without the memory kept under
    `$RECURSIVE_HOME` (`remember`, `recall`)."""
    from ..tools.catalog import core_tools

    return [tool for tool in core_tools() if not (settings.bare and tool.name in ("remember", "recall"))]


def bind_session(loaded: LoadedSettings, session_id: str, mode: str, title: str, resumed: LoadedSession | None,
                 lock: SessionLock | None, runtime: AgentRuntime) -> SessionBinding:
    """The runtime's session: the resumed one reopened under its lock, or a new one (SessionError
    when it cannot be written)."""
    from ..features.sessions.binding import create_session, reopen_session, session_meta
    from ..features.sessions.store import SessionStore

    if resumed is not None and lock is not None:
        if resumed.meta.mode != mode:  # `loop -c` on a run's session: a loop from now on
            resumed.meta.mode = mode  # type: ignore[assignment]
        # (the thinking asked for now, the session's unless a flag changed it: the next resume's too)
        resumed.meta.effort, resumed.meta.thinking_budget = loaded.settings.effort, loaded.settings.thinking_budget
        return reopen_session(resumed, lock, runtime)
    folder = SessionStore(loaded.home).folder(session_id)
    return create_session(folder, session_meta(runtime, loaded.settings, mode, title), runtime)


def run_skills(loaded: LoadedSettings, sources: Sequence[str] | None = None, quiet: bool = False,
               resumed: LoadedSession | None = None) -> SkillCatalog | None:
    """The skills of a run (features/skills): `--skill`'s, the user's but with `--bare`, the
    workspace's once it is trusted; none with `--no-skills` (a `resumed` session's skill flags
    when none are given). `sources`: Claude's `--setting-sources` when given (`user` and
    `project` let those in). A SKILL.md that cannot be used is one warning line on stderr
    (unless `quiet`), and left out. None when there is no skill folder at all (the feature
    stays unloaded)."""
    from ..core.workspace_trust import SKILL_FOLDERS

    settings = loaded.settings
    if resumed is not None and not (settings.skill or settings.no_skills):
        settings = with_saved_skills(settings, resumed)
    workspace = settings.workspace.expanduser().resolve()
    if not settings.skill and not any(folder.is_dir() for folder in (
            loaded.home / "skills", *(workspace / name for name in SKILL_FOLDERS))):
        return None
    from ..features.skills import SkillChoice, find_skills
    from ..features.trust import verdict_for

    verdict = verdict_for(loaded, workspace)
    workspace_reason = "--bare" if settings.bare else "" if verdict.trusted else verdict.reason
    user_reason = "--bare" if settings.bare else ""
    if sources is not None:
        user_reason = user_reason or ("" if "user" in sources else "--setting-sources has no user")
        workspace_reason = workspace_reason or ("" if "project" in sources else "--setting-sources has no project")
    choice = SkillChoice(tuple(settings.skill), user=user_reason, workspace=workspace_reason, off=settings.no_skills)
    catalog = find_skills(workspace, loaded.home, choice)
    if not quiet:  # (a file of a folder left out is not the run's business: `skills list` shows it)
        left_out = {"user": user_reason, "workspace": workspace_reason, "flag": ""}
        sys.stderr.writelines(f"warning: {problem.line()}\n" for problem in catalog.problems
                              if not left_out[problem.origin] and not settings.no_skills)
    return catalog


def with_saved_skills(settings: Settings, session: LoadedSession) -> Settings:
    """`settings` with the skill flags `session` ran with (an imported one's are someone
    else's folders: never used); a saved folder that is gone is left out, with a note."""
    if "skills" not in session.meta.state or session.meta.imported is not None:
        return settings
    from pathlib import Path

    from ..core.values import parse
    from ..features.skills.state import SkillState

    try:
        saved = parse(SkillState, session.meta.state["skills"])
    except ValueError:
        return settings
    kept = [Path(folder) for folder in saved.folders if Path(folder).is_dir()]
    for gone in [folder for folder in saved.folders if not Path(folder).is_dir()]:
        sys.stderr.write(f"note: the session's --skill {gone} no longer exists; its skills are left out\n")
    return dataclasses.replace(settings, skill=kept, no_skills=saved.off)


def keep_skill_flags(runtime: AgentRuntime, settings: Settings) -> None:
    """Keep the skill flags given in the session (absolute folders), for `resume` to offer the
    same skills; a session given none keeps what it had."""
    if not (settings.skill or settings.no_skills):
        return
    from ..features.skills.state import SkillState

    state = SkillState(folders=[str(path.expanduser().resolve()) for path in settings.skill], off=settings.no_skills)
    if runtime.state.get(SkillState) != state:
        runtime.state.put(SkillState, state)
