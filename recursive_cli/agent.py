"""The library façade: `AgentRuntime` and `AgentRuntimeBuilder`, above the drivers.

The core (runtime.py) knows no driver, feature or surface; `AgentRuntime` adds, under the
names of the design this project follows, what a program embedding the agent calls:
`builder()`, the goal and event-loop drivers, checkpoints. `AgentRuntimeBuilder` assembles
provider, tools, sandbox, budget, permissions and the mode's driver into one. Surfaces (the
CLI) build their runtime here; nothing below imports this module.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.budget import Budget, Limits
from .core.events import EventSink, NullSink
from .core.kernel import TurnOutcome
from .core.pricing import Price
from .core.provider import ChatProvider
from .core.runtime import RuntimeCore
from .core.settings import ConfigError, Settings, default_home
from .core.tool import ToolContext, ToolRegistry

if TYPE_CHECKING:
    from .drivers.goal_state import GoalState
    from .features.checkpoints.checkpointer import GitCheckpointer
    from .features.hooks import HookConfig, HookEngine
    from .features.loop import BackgroundJobManager, WakeupSlot
    from .features.mcp import McpConfig, McpManager
    from .features.permissions import AskHook, PermissionPolicy
    from .features.skills import SkillCatalog
    from .features.subagents import AgentDefinition, Subagents


class AgentRuntime(RuntimeCore):
    """Drives turns of the kernel over one conversation. Build it with `AgentRuntime.builder()`."""

    @staticmethod
    def builder() -> AgentRuntimeBuilder:
        return AgentRuntimeBuilder()

    async def run_event_loop(self, prompt: str, wakeup_slot: WakeupSlot | None = None,
                             jobs: BackgroundJobManager | None = None, *,
                             max_iterations: int = 100) -> TurnOutcome:
        """Run `prompt`, then a turn per due wakeup and per finished background job (SPEC §6)."""
        from .drivers.event_loop import run_event_loop

        return await run_event_loop(self, prompt, wakeup_slot, jobs, max_iterations=max_iterations)

    async def run_loop(self, prompt: str, wakeup_slot: WakeupSlot | None = None, *,
                       max_iterations: int = 100) -> TurnOutcome:
        """`run_event_loop` with wakeups only: the agent gets no background job tools."""
        from .drivers.event_loop import run_event_loop

        return await run_event_loop(self, prompt, wakeup_slot, max_iterations=max_iterations,
                                    with_jobs=False)

    async def run_goal_loop(self, prompt: str, until: str | None = None,
                            checks: Sequence[str] | None = None, max_turns: int | None = None, *,
                            check_timeout: float | None = None, judge: ChatProvider | None = None,
                            judge_model: str | None = None) -> TurnOutcome:
        """Turns on `prompt` until every check passes and the judge agrees `until` holds (SPEC §7);
        what is not given comes from `set_goal`. `judge` defaults to the run's own provider."""
        from .drivers.goal import run_goal_loop

        return await run_goal_loop(self, prompt, until, checks, max_turns, check_timeout=check_timeout,
                                   judge=judge, judge_model=judge_model)

    def set_goal(self, condition: str | None, max_turns: int = 10, checks: Sequence[str] = ()) -> None:
        """Set the goal the next `run_goal_loop` works toward when it is given none."""
        from .drivers.goal import set_goal

        set_goal(self, condition, max_turns, checks)

    def current_goal(self) -> GoalState | None:
        """The goal and its progress, or None."""
        from .drivers.goal_state import load_goal

        return load_goal(self)

    def clear_goal(self) -> None:
        from .drivers.goal_state import GoalState

        self.state.put(GoalState, None)

    @property
    def permissions(self) -> PermissionPolicy:
        """The permission rules in force (the builder adds them as the first tool guard)."""
        from .features.permissions import PermissionPolicy

        found = self.feature(PermissionPolicy)
        if found is None:
            found = PermissionPolicy()
            self.attach(found)
            self.add_guard(found)
        return found

    def set_permission_hook(self, hook: AskHook | None) -> None:
        """Who answers `ask`-mode questions; None denies them (headless)."""
        self.permissions.ask = hook

    def enable_checkpoints(self, home: Path | None = None, session_id: str | None = None,
                           prepared: GitCheckpointer | None = None) -> bool:
        """Snapshot the workspace before and after every turn and around every tool call that
        can change files, into a shadow git repository under `home` (default: the tools'
        RECURSIVE_HOME), and add the checkpoint tools (SPEC §8); `prepared`: a checkpointer a
        launch began before the runtime (features/checkpoints `prepared_checkpointer`).

        False when git is missing: the first turn then says so once and the run goes on without.
        """
        from .features.checkpoints.observer import attach_checkpoints

        checkpointer = attach_checkpoints(self, home or self.tool_context.home, session_id, prepared)
        if checkpointer is not None:
            self.attach(checkpointer)
        return checkpointer is not None

    def mcp(self) -> McpManager | None:
        """The MCP servers' manager, when the builder attached one (`builder().mcp(...)`)."""
        if "recursive_cli.features.mcp.manager" not in sys.modules:  # never loaded: none attached
            return None
        from .features.mcp import McpManager

        return self.feature(McpManager)

    def hooks(self) -> HookEngine | None:
        """The user's command hooks, when the builder attached some (`builder().hooks(...)`)."""
        if "recursive_cli.features.hooks.engine" not in sys.modules:
            return None
        from .features.hooks import HookEngine

        return self.feature(HookEngine)

    async def aclose(self) -> None:
        """Fire the SessionEnd hooks, stop the MCP servers (every process group), then close
        the provider."""
        manager = self.mcp()
        engine = self.hooks()
        try:
            if engine is not None:
                await engine.session_end()
            if manager is not None:
                await manager.aclose()
        finally:
            if "recursive_cli.features.checkpoints.checkpointer" in sys.modules:  # (its git processes)
                from .features.checkpoints.checkpointer import close_checkpointer

                close_checkpointer(self)
            await super().aclose()

    def checkpoints_enabled(self) -> bool:
        from .features.checkpoints.checkpointer import GitCheckpointer

        checkpointer: GitCheckpointer | None = self.feature(GitCheckpointer)
        return checkpointer is not None


class AgentRuntimeBuilder:
    """Collects the parts of a runtime; anything not given is derived from the settings."""

    def __init__(self) -> None:
        self._settings = Settings()
        self._home = default_home()  # $RECURSIVE_HOME, as for the CLI
        self._provider: ChatProvider | None = None
        self._tools: ToolRegistry | None = None
        self._sink: EventSink = NullSink()
        self._mode = "run"
        self._session_id = ""
        self._mcp: McpConfig | None = None
        self._hooks: HookConfig | None = None
        self._agents: list[AgentDefinition] = []
        self._skills: SkillCatalog | None = None

    def settings(self, settings: Settings, home: Path | None = None) -> AgentRuntimeBuilder:
        self._settings = settings
        if home is not None:
            self._home = home
        return self

    def provider(self, provider: ChatProvider) -> AgentRuntimeBuilder:
        self._provider = provider
        return self

    def tools(self, tools: ToolRegistry) -> AgentRuntimeBuilder:
        self._tools = tools
        return self

    def sink(self, sink: EventSink) -> AgentRuntimeBuilder:
        self._sink = sink
        return self

    def mode(self, mode: str) -> AgentRuntimeBuilder:
        self._mode = mode
        return self

    def session_id(self, session_id: str) -> AgentRuntimeBuilder:
        self._session_id = session_id
        return self

    def mcp(self, servers: McpConfig | Mapping[str, Any] | str | Path) -> AgentRuntimeBuilder:
        """MCP servers whose tools the agent gets (`mcp__<server>__<tool>`): an McpConfig, a
        mapping in `.mcp.json`'s shape, a file or JSON text; each call adds servers. They
        start before the first turn and stop with `aclose()`."""
        from .features.mcp import as_config

        config = as_config(servers)
        self._mcp = config if self._mcp is None else self._mcp.merge(config)
        return self

    def hooks(self, config: HookConfig) -> AgentRuntimeBuilder:
        """Command hooks in Claude Code's format (`features.hooks.load_hooks` reads them from the
        settings files and `--settings`): they fire around every prompt, tool call and turn."""
        self._hooks = config
        return self

    def agents(self, definitions: list[AgentDefinition]) -> AgentRuntimeBuilder:
        """Subagents the agent may hand tasks to through the `task` tool (features/subagents:
        `--agents`, agent files); each call adds definitions, the first of a name winning."""
        self._agents = [*self._agents, *definitions]
        return self

    def skills(self, catalog: SkillCatalog) -> AgentRuntimeBuilder:
        """The skills the agent is offered (`features.skills.find_skills`): their names and
        descriptions in the system prompt, a body through the `skill` tool when the model asks,
        the files of their folders readable by the file tools."""
        self._skills = catalog
        return self

    def build(self) -> AgentRuntime:
        """The runtime; raises ConfigError when the workspace or provider settings are unusable
        (SandboxUnavailableError when the command sandbox they ask for cannot start here)."""
        from .core.prompts import build_system_prompt
        from .drivers import driver_for
        from .tools.catalog import core_tools
        from .tools.os_sandbox import command_sandbox
        from .tools.sandbox import WorkspaceSandbox

        s = self._settings
        workspace = check_workspace(s.workspace)
        tools = self._tools if self._tools is not None else ToolRegistry(core_tools())
        driver = driver_for(self._mode)
        provider = self._provider or self._make_provider()
        # RECURSIVE_HOME holds the sessions (this one's folder too): file tools never write there.
        add_dirs = [check_workspace(p, "--add-dir") for p in s.add_dir]
        commands = command_sandbox(s.sandbox_mode, workspace, add_dirs, protected=[self._home],
                                   network=s.sandbox_network, ports=s.sandbox_allow_ports)
        readable = self._skill_folders(tools, workspace)  # (read, never written, by the file tools)
        sandbox = WorkspaceSandbox(workspace, [*add_dirs, *readable], protected=[self._home, *readable],
                                   read_only=s.sandbox_mode == "read-only")
        context = ToolContext(sandbox=sandbox, home=self._home, shell_timeout=s.shell_timeout,
                              allow_private_network=s.allow_private_network, commands=commands)
        skills = self._skills.section if self._skills is not None else lambda names, workspace: ""
        prompt = build_system_prompt(workspace, tools.names(), driver.note, replace=s.system_prompt,
                                     append=s.append_system_prompt, sandbox=commands.describe(),
                                     instructions=not s.bare, plan=s.permission_mode == "plan",
                                     skills=skills(tools.names(), workspace))
        budget = Budget(Limits(max_steps=s.max_steps, max_cost=s.max_cost, max_duration=s.max_duration),
                        price=Price(provider.model, s.prices))
        runtime = AgentRuntime(provider=provider, tools=tools, tool_context=context,
                               system_prompt=prompt, budget=budget, sink=self._sink,
                               session_id=self._session_id)
        attach_guards(runtime, s)
        runtime.system_prompt_for = lambda names: build_system_prompt(
            workspace, names, driver.note, replace=s.system_prompt, append=s.append_system_prompt,
            sandbox=commands.describe(), instructions=not s.bare, plan=runtime.permissions.mode == "plan",
            skills=skills(names, workspace))
        driver.install(runtime)  # the mode's tools (loop: wakeups and background jobs), once
        if self._skills is not None:
            runtime.attach(self._skills)  # (an SDK client's `initialize` may narrow it: headless/control.py)
        if s.permission_mode == "plan":
            from .features.plan_mode import enter_plan_mode

            enter_plan_mode(runtime, runtime.permissions)
        if self._mcp:
            self._attach_mcp(runtime)
        if self._agents:
            add_subagents(runtime, self._agents, s)
        if self._hooks:
            from .features.hooks import attach_hooks

            attach_hooks(runtime, self._hooks, home=self._home, asker=lambda: runtime.permissions.ask,
                         permission_mode=lambda: runtime.permissions.mode)
        return runtime

    def _skill_folders(self, tools: ToolRegistry, workspace: Path) -> list[Path]:
        """With skills offered: the `skill` tool added to `tools`; the folders of the skills
        outside the workspace, which the file tools may read (a skill's files are its resources)."""
        if self._skills is None or not self._skills.skills:
            return []
        from .features.skills.tool import SkillTool

        tools.add(SkillTool(self._skills))  # (the catalog is attached to the runtime once it is built)
        folders = {skill.folder for skill in self._skills.skills}
        return sorted(folder for folder in folders if not folder.is_relative_to(workspace))

    def _attach_mcp(self, runtime: AgentRuntime) -> None:
        """The MCP servers, with their stderr logged in the session folder (once it exists)."""
        from .features.mcp import attach_mcp
        from .features.sessions.store import SESSIONS_DIR

        assert self._mcp is not None
        folder = None if self._settings.no_session or not self._session_id else (
            self._home / SESSIONS_DIR / self._session_id)
        attach_mcp(runtime, self._mcp.with_start_timeout(self._settings.mcp_timeout), log_dir=lambda: folder)

    def _make_provider(self) -> ChatProvider:
        from .providers import make_provider

        return make_provider(self._settings, session_id=self._session_id)


def add_subagents(runtime: AgentRuntime, definitions: list[AgentDefinition], settings: Settings) -> Subagents:
    """Give the runtime the `task` tool with `definitions`, or add them to the ones it has (the
    SDK's `agents`, sent after the runtime is built); a subagent on a model of its own gets a
    provider made from `settings` for that model."""
    from .features.subagents import Subagents, attach_subagents

    found = runtime.feature(Subagents)
    if found is not None:
        found.add(definitions)
        return found
    from .core.settings import resolve_model
    from .providers import make_provider
    from .tools.claude_names import our_name

    def provider_for(model: str) -> ChatProvider:
        """The run's provider when `model` is its model; else one made for `model`."""
        resolved = resolve_model(settings.provider, model)
        if resolved == runtime.provider.model:
            return runtime.provider
        return make_provider(dataclasses.replace(settings, model=resolved), runtime.session_id or None)

    return attach_subagents(runtime, definitions, provider_for, our_name, instructions=not settings.bare)


def attach_guards(runtime: AgentRuntime, settings: Settings) -> None:
    """The features that stand between the model and the tools: the permission rules (the
    first tool guard) and compaction (the context keeper)."""
    from .features.compaction import Compactor, context_window
    from .features.permissions import PermissionPolicy

    permissions = PermissionPolicy(settings.permission_mode, settings.allow, settings.deny)
    runtime.attach(permissions)
    runtime.add_guard(permissions)
    runtime.compactor = Compactor(context_window(runtime.provider.model))


def check_workspace(path: Path, option: str | None = None) -> Path:
    """The resolved directory, or ConfigError when it does not exist or is not a directory:
    `workspace does not exist: X`, or for another root `--add-dir: directory does not exist: X`."""
    resolved = path.expanduser().resolve()
    if not resolved.exists():
        raise ConfigError(f"{option}: directory does not exist: {path}" if option
                          else f"workspace does not exist: {path}")
    if not resolved.is_dir():
        raise ConfigError(f"{option}: not a directory: {path}" if option
                          else f"workspace is not a directory: {path}")
    return resolved
