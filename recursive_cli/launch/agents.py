"""The subagents of a launch (features/subagents): `--agents` (a resumed session's own when none
is given), the workspace's `.claude/agents/*.md` once it is trusted, the user's
`$RECURSIVE_HOME/agents/*.md` (not with `--bare`); and `--agent NAME`, a definition the main
conversation itself takes on (its prompt, tools and model).

Nothing is imported when no flag is given and neither folder exists: most runs have no agents.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.errors import AgentsError, CliError
from ..core.state import StatePart
from ..core.values import parse
from .errors import EXIT_USAGE

if TYPE_CHECKING:
    from ..agent import AgentRuntime
    from ..core.settings import LoadedSettings, Settings
    from ..features.sessions.reader import LoadedSession
    from ..features.subagents import AgentDefinition


@dataclass(slots=True, kw_only=True)
class AgentsState(StatePart):
    """The `--agents` a session ran with, kept for `resume` (its part of the session state)."""

    key: ClassVar[str] = "agents"
    configs: list[str] = field(default_factory=list)


def agent_definitions(loaded: LoadedSettings, given: list[str], resumed: LoadedSession | None = None
                      ) -> list[AgentDefinition]:
    """Every definition of the launch, first of a name winning (flags, workspace, user); a
    file that cannot be used is left out with a warning. CliError (exit 2) for `--agents`
    that is not a JSON object of definitions."""
    workspace = loaded.settings.workspace.expanduser().resolve()
    configs = given or saved_agents(resumed)
    folders = [] if loaded.settings.bare else [workspace / ".claude" / "agents", loaded.home / "agents"]
    if not configs and not any(folder.is_dir() for folder in folders):
        return []
    from ..features.subagents import AgentDefinition, agent_files, load_agent_file, merge, parse_agents_json
    from ..features.trust import verdict_for

    groups: list[list[AgentDefinition]] = []
    problems: list[str] = []
    for config in configs:
        try:
            found, bad = parse_agents_json(_text(config))
        except AgentsError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        groups.append(found)
        problems += [str(problem) for problem in bad]
    trusted = bool(folders) and verdict_for(loaded, workspace).trusted  # (untrusted: `note_untrusted` says so)
    for folder, source in zip(folders if trusted else folders[1:], ("workspace", "user") if trusted else ("user",)):
        made = [load_agent_file(path, source) for path in agent_files(folder)]
        groups.append([item for item in made if isinstance(item, AgentDefinition)])
        problems += [str(item) for item in made if not isinstance(item, AgentDefinition)]
    sys.stderr.writelines(f"warning: agent {problem}; left out\n" for problem in problems)
    return merge(*groups)


def _text(config: str) -> str:
    """`--agents` JSON text, or the file it names."""
    if config.lstrip().startswith("{"):
        return config
    from pathlib import Path

    try:
        return Path(config).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"--agents: cannot read {config}: {exc.strerror or exc}", EXIT_USAGE) from None


def saved_agents(session: LoadedSession | None) -> list[str]:
    """The `--agents` a resumed session ran with."""
    if session is None or session.meta.imported is not None:
        return []
    raw = session.meta.state.get(AgentsState.key)
    try:
        return parse(AgentsState, raw).configs if raw else []
    except ValueError:
        return []


def main_agent(settings: Settings, name: str, definitions: list[AgentDefinition]) -> tuple[Settings, AgentDefinition]:
    """`--agent NAME`: the settings with that agent's prompt and model for the main conversation;
    CliError (exit 2) when no agent has that name."""
    found = next((item for item in definitions if item.name == name), None)
    if found is None:
        known = ", ".join(item.name for item in definitions) or "none"
        raise CliError(f"--agent: no agent named {name!r} (defined: {known})", EXIT_USAGE)
    from ..core.settings import resolve_model

    update: dict[str, Any] = {"system_prompt": found.prompt}
    if found.model and found.model != "inherit":
        update["model"] = resolve_model(settings.provider, found.model)
    return replace(settings, **update), found


def take_tools(runtime: AgentRuntime, agent: AgentDefinition) -> None:
    """`--agent`: the main conversation keeps only the agent's tools (and `task`, to start others)."""
    from ..features.subagents.runner import subagent_tools
    from ..tools.claude_names import our_name

    kept = set(subagent_tools(agent, runtime.tools, our_name)) | {"task"}
    for name in runtime.tools.names():
        if name not in kept:
            runtime.remove_tool(name)


def keep_agents_flags(runtime: AgentRuntime, given: list[str]) -> None:
    """Keep the `--agents` given in the session, for `resume` to start them again."""
    if given:
        runtime.state.put(AgentsState, AgentsState(configs=given))
