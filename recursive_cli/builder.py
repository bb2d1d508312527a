"""AgentRuntimeBuilder: assembles provider, tools, sandbox and sinks into an AgentRuntime."""

from __future__ import annotations

from pathlib import Path

from .budget import Budget
from .events import EventSink, NullSink
from .providers.base import ChatProvider
from .runtime import AgentRuntime
from .settings import ConfigError, Settings
from .tools.base import ToolContext, ToolRegistry


class AgentRuntimeBuilder:
    """Collects the parts of a runtime; anything not given is derived from the settings."""

    def __init__(self) -> None:
        self._settings = Settings()
        self._home = Path.home() / ".recursive"
        self._provider: ChatProvider | None = None
        self._tools: ToolRegistry | None = None
        self._sink: EventSink = NullSink()
        self._mode = "run"
        self._session_id = ""

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

    def build(self) -> AgentRuntime:
        """The runtime; raises ConfigError when the workspace or provider settings are unusable."""
        from .loop.control import loop_control_for
        from .prompts import build_system_prompt
        from .tools.catalog import core_tools
        from .tools.sandbox import WorkspaceSandbox

        s = self._settings
        workspace = check_workspace(s.workspace)
        tools = self._tools if self._tools is not None else ToolRegistry(core_tools())
        loop = loop_control_for(self._mode, tools)  # loop mode: wakeup slot, jobs and their tools
        provider = self._provider or self._make_provider()
        # RECURSIVE_HOME holds the sessions (this one's folder too): file tools never write there.
        sandbox = WorkspaceSandbox(workspace, [check_workspace(p) for p in s.add_dir],
                                   protected=[self._home])
        context = ToolContext(sandbox=sandbox, home=self._home, shell_timeout=s.shell_timeout,
                              allow_private_network=s.allow_private_network)
        prompt = build_system_prompt(workspace, tools.names(), self._mode, replace=s.system_prompt,
                                     append=s.append_system_prompt)
        from .permissions import PermissionPolicy

        permissions = PermissionPolicy(s.permission_mode, s.allow, s.deny)
        budget = Budget(max_steps=s.max_steps, max_cost=s.max_cost, max_duration=s.max_duration)
        runtime = AgentRuntime(provider=provider, tools=tools, tool_context=context,
                               system_prompt=prompt, budget=budget, sink=self._sink,
                               session_id=self._session_id, permissions=permissions)
        runtime.mode = self._mode
        runtime.system_prompt_for = lambda names: build_system_prompt(
            workspace, names, self._mode, replace=s.system_prompt, append=s.append_system_prompt)
        if loop is not None:
            loop.attach(runtime)
        return runtime

    def _make_provider(self) -> ChatProvider:
        from .providers import make_provider

        return make_provider(self._settings)


def check_workspace(path: Path) -> Path:
    """The resolved directory, or ConfigError when it does not exist or is not a directory."""
    resolved = path.expanduser().resolve()
    if not resolved.exists():
        raise ConfigError(f"workspace does not exist: {path}")
    if not resolved.is_dir():
        raise ConfigError(f"workspace is not a directory: {path}")
    return resolved
