"""The client's control requests, answered at once (also while a turn runs): `initialize`,
`interrupt`, `set_permission_mode`, `set_model`, `mcp_status`; and, once done,
`mcp_reconnect`, `mcp_toggle` and `mcp_set_servers`. Any other is answered with an error."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...core.messages import Message
from ...core.provider import ChatProvider
from ...features.sessions.binding import remember_model
from . import protocol
from .build import HeadlessRun, json_schema
from .flags import CLAUDE_MODES, UsageError
from .hooks import HookSet

if TYPE_CHECKING:
    from ...features.mcp import McpConfig

# The one built-in command here, as Claude Code lists its own (server.py runs it).
CLEAR_COMMAND = {"name": "clear", "description": "Start a new session with empty context", "builtin": True}


class ClientRequests:
    """Answers the client's control requests for one run; `interrupt` ends the running turn."""

    def __init__(self, run: HeadlessRun, interrupt: Callable[[], None]) -> None:
        self.run = run
        self._interrupt = interrupt
        self.retired: list[ChatProvider] = []  # providers `set_model` replaced, closed at the end
        self._set_names: set[str] = set()  # the servers `mcp_set_servers` named last

    def answer(self, line: protocol.ControlRequestLine) -> dict[str, Any]:
        """The `control_response` line for a request."""
        handler = {"initialize": self.initialize, "interrupt": self.interrupt,
                   "set_permission_mode": self.set_permission_mode,
                   "set_model": self.set_model, "mcp_status": self.mcp_status,
                   "get_context_usage": self.context_usage}.get(line.subtype)
        if handler is None:
            return protocol.error(line.request_id, f"unsupported control request: {line.subtype}")
        try:
            return protocol.success(line.request_id, handler(line.request))
        except ValueError as exc:  # (pydantic's ValidationError too)
            return protocol.error(line.request_id, str(exc))

    def initialize(self, request: dict[str, Any]) -> dict[str, Any]:
        """Register the client's hooks; take the TypeScript SDK's prompt and schema fields."""
        init = protocol.Initialize.model_validate(request)
        self.run.client.hooks = HookSet(init.hooks)
        if init.system_prompt is not None or init.append_system_prompt is not None:
            self._set_system_prompt(init)
        if init.json_schema is not None:
            try:
                self.run.schema = json_schema(init.json_schema)
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        if init.skills is not None:
            self._only_skills(init.skills)
        applied = self._add_mcp_servers(init) if init.mcp_servers or init.sdk_mcp_servers else None
        if init.agents:
            self._add_agents(init.agents)
        self.run.sink.forward_subagent_text = init.forward_subagent_text
        model = self.run.runtime.provider.model
        info = self.run.init_info()
        commands: list[dict[str, Any]] = [*(command.listing() for command in self.run.commands.values()), CLEAR_COMMAND]
        listed = {command["name"] for command in commands}
        commands += [{"name": name, "description": f"/{name}", "argumentHint": ""}  # (skills, MCP prompts)
                     for name in info.slash_commands if name not in listed]
        answer = {"commands": commands, "agents": self._agents(),
                  "output_style": self.run.output_style,
                  "available_output_styles": sorted({"default", self.run.output_style}),
                  "models": [{"value": model, "displayName": model, "description": "the model in use"}],
                  "account": {}, "pid": os.getpid(), "hooks_applied": True, "hook_on_failure_supported": True,
                  "current_permission_mode": self.run.permission_mode, "session_state": "idle",
                  **{key: info.extra[key] for key in ("claude_code_version",) if key in info.extra}}
        if init.mcp_servers is not None:
            answer["mcp_servers_applied"] = bool(applied)  # (the TypeScript SDK ends a session without it)
        return answer

    def _add_agents(self, agents: dict[str, Any]) -> None:
        """The SDK's `agents=` (in `--agents`' shape): more subagents for the Agent tool; a
        definition that cannot be used is left out, with a warning on stderr."""
        import sys

        from ...agent import add_subagents
        from ...core.errors import AgentsError
        from ...features.subagents import parse_agents_json

        try:
            found, problems = parse_agents_json(agents, "initialize agents")
        except AgentsError as exc:
            raise ValueError(str(exc)) from None
        sys.stderr.writelines(f"warning: agent {problem}; left out\n" for problem in problems)
        add_subagents(self.run.runtime, found, self.run.loaded.settings)

    def _agents(self) -> list[dict[str, Any]]:
        """The subagents, as `initialize` answers them (Claude's `{name, description, model}`)."""
        if not self.run.agent_names():
            return []
        from ...features.subagents import Subagents

        found = self.run.runtime.feature(Subagents)
        return [{"name": item.name, "description": item.description, "model": item.model or "inherit"}
                for item in (found.all() if found is not None else [])]

    def _add_mcp_servers(self, init: protocol.Initialize) -> bool:
        """The servers `initialize` sends (the TypeScript SDK's `mcpServers`, and the names of
        its in-process servers): started with the others before the first turn. False when the
        servers started already."""
        servers = {**(init.mcp_servers or {}),
                   **{name: {"type": "sdk", "name": name} for name in init.sdk_mcp_servers or []}}
        config = _servers(servers, "initialize")
        if self.run.mcp is not None:
            return self.run.mcp.add_servers(config)
        self._attach_mcp(config)
        return True

    def _attach_mcp(self, config: McpConfig) -> None:
        """A manager for servers a client names (none was configured at the start)."""
        from ...features.mcp import attach_mcp
        from ...features.sessions.store import SESSIONS_DIR

        run, runtime = self.run, self.run.runtime
        folder = None if run.binding is None else run.loaded.home / SESSIONS_DIR / runtime.session_id
        run.mcp = attach_mcp(runtime, config.with_start_timeout(run.loaded.settings.mcp_timeout),
                             log_dir=lambda: folder)
        run.connect_sdk_servers()

    def _only_skills(self, names: list[str]) -> None:
        """Offer only the skills the client named (`skills=[…]`), with the system prompt saying so."""
        from ...features.skills import SKILL_TOOL, SkillCatalog

        runtime = self.run.runtime
        catalog = runtime.feature(SkillCatalog)
        if catalog is None:
            return
        catalog.keep_only(names)
        if not catalog.skills:
            runtime.remove_tool(SKILL_TOOL)  # (which rebuilds the system prompt)
        elif runtime.system_prompt_for is not None:
            transcript = runtime.transcript()
            runtime.set_transcript([Message.system(runtime.system_prompt_for(runtime.tools.names())),
                                    *transcript[1:]])

    def _set_system_prompt(self, init: protocol.Initialize) -> None:
        """The TypeScript SDK sends the system prompt in `initialize`, not as a flag: a list of
        parts replaces the built-in prompt, a preset (`{"type": "preset", "append": …}`) keeps it."""
        from ...core.prompts import build_system_prompt
        from ...drivers import driver_for

        given, append = init.system_prompt, init.append_system_prompt
        if isinstance(given, dict):
            append, given = append or given.get("append"), None
        replace = ("\n\n".join(given) if isinstance(given, list) else given) or self.run.loaded.settings.system_prompt
        append = "\n\n".join(p for p in (self.run.loaded.settings.append_system_prompt, append) if p) or None
        runtime, note = self.run.runtime, driver_for("run").note
        commands = runtime.tool_context.commands
        sandbox = commands.describe() if commands is not None else ""

        from ...features.skills import SkillCatalog

        catalog = runtime.feature(SkillCatalog)

        def prompt_for(names: list[str]) -> str:
            return build_system_prompt(runtime.workspace, names, note, replace=replace or None, append=append,
                                       instructions=not self.run.loaded.settings.bare, sandbox=sandbox,
                                       plan=runtime.permissions.mode == "plan",
                                       skills=catalog.section(names, runtime.workspace) if catalog else "")

        runtime.system_prompt_for = prompt_for
        transcript = runtime.transcript()
        runtime.set_transcript([Message.system(prompt_for(runtime.tools.names())), *transcript[1:]])

    ASYNC = ("mcp_reconnect", "mcp_toggle", "mcp_set_servers")  # answered when done (`answer_later`)

    async def answer_later(self, line: protocol.ControlRequestLine) -> dict[str, Any]:
        """The `control_response` line for a request that takes a while: (re)starting servers."""
        if line.subtype == "mcp_set_servers":
            try:
                return protocol.success(line.request_id, await self._set_servers(line.request))
            except ValueError as exc:
                return protocol.error(line.request_id, str(exc))
        manager = self.run.mcp
        name = line.request.get("serverName")
        if manager is None or not isinstance(name, str) or name not in manager.config.servers:
            known = ", ".join(manager.config.servers) if manager is not None else "none"
            return protocol.error(line.request_id, f"no MCP server named {name!r} (servers: {known or 'none'})")
        if line.subtype == "mcp_toggle" and line.request.get("enabled") is False:
            await manager.disable(name)
            return protocol.success(line.request_id, {})
        connection = await manager.reconnect(name)
        if connection.status != "connected":
            return protocol.error(line.request_id, f"MCP server {name!r} failed to start: {connection.error}")
        return protocol.success(line.request_id, {})

    async def _set_servers(self, request: dict[str, Any]) -> dict[str, Any]:
        servers = request.get("servers")
        if not isinstance(servers, dict):
            raise ValueError("mcp_set_servers needs servers: an object of names to entries")
        config = _servers(servers, "setMcpServers")
        if self.run.mcp is None:
            self._attach_mcp(_servers({}, "setMcpServers"))
        manager = self.run.mcp
        assert manager is not None
        result = await manager.set_servers(config, self._set_names)
        if not manager.started:  # (connected now, as Claude Code does, not at the next prompt)
            await self.run.start_mcp()
            result["errors"] = {name: manager.connections[name].error for name in config.servers
                                if name in manager.connections and manager.connections[name].status != "connected"}
        return result

    def mcp_status(self, request: dict[str, Any]) -> dict[str, Any]:
        """The MCP servers, their status and tools (`get_mcp_status()` in the Agent SDKs)."""
        manager = self.run.mcp
        return {"mcpServers": manager.status_report() if manager is not None else []}

    def context_usage(self, request: dict[str, Any]) -> dict[str, Any]:
        """How full the context window is (`get_context_usage()` in the Agent SDKs)."""
        from ...core.prompts import INSTRUCTION_FILES
        from .context_usage import context_usage

        workspace = self.run.runtime.workspace
        memory = next((str(workspace / name) for name in INSTRUCTION_FILES if (workspace / name).is_file()), None)
        return context_usage(self.run.runtime, memory if not self.run.loaded.settings.bare else None)

    def interrupt(self, request: dict[str, Any]) -> dict[str, Any]:
        """End the running turn; prompts already queued run after it (Claude's answer lists
        the queued prompts it dropped: none here)."""
        self._interrupt()
        return {"still_queued": []}

    def set_permission_mode(self, request: dict[str, Any]) -> dict[str, Any]:
        """Claude's permission mode from the next tool call on, also in the running turn (the
        guard reads the mode at each call)."""
        mode = request.get("mode")
        if mode not in CLAUDE_MODES and mode != "auto":
            raise ValueError(f"unknown permission mode {mode!r} (choose from {', '.join(CLAUDE_MODES)})")
        from ...features.plan_mode import enter_plan_mode, leave_plan_mode

        runtime = self.run.runtime
        if mode == "plan" and runtime.permissions.mode != "plan":
            enter_plan_mode(runtime, runtime.permissions)
        elif mode != "plan" and runtime.permissions.mode == "plan":  # (the rules decide from now on)
            leave_plan_mode(runtime, runtime.permissions, "auto")
        self.run.rules.mode = str(mode)
        self.run.options.permission_mode = None  # the mode in force is now the rules'
        return {}

    def set_model(self, request: dict[str, Any]) -> dict[str, Any]:
        """A provider for the new model from the next model call on, also in the running turn
        (the kernel asks the runtime for its provider before each call; a call under way ends
        on the old one, which is closed at the end); its price from then on too. No model
        means the one the run started with."""
        from ...core.settings import ConfigError, resolve_model
        from ...providers import make_provider

        model = request.get("model") or self.run.default_model
        if not isinstance(model, str):
            raise ValueError("set_model needs a model name")
        model = resolve_model(self.run.loaded.settings.provider, model)  # (`set_model("opus")`)
        runtime = self.run.runtime
        if runtime.provider.name == "scripted":  # its replies go on where they are
            runtime.provider.model = model
        else:
            try:
                provider = make_provider(replace(self.run.loaded.settings, model=model),
                                         runtime.session_id or None)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
            self.retired.append(runtime.provider)
            runtime.provider = provider
        runtime.budget.price = runtime.budget.price.of(model)
        remember_model(runtime, model)
        return {}


def _servers(servers: dict[str, Any], origin: str) -> McpConfig:
    """A client's servers (`.mcp.json`'s `mcpServers` shape) as a configuration; ValueError
    naming the bad key."""
    from ...features.mcp import McpConfigError, from_mapping

    try:
        return from_mapping({"mcpServers": servers}, origin=origin)
    except McpConfigError as exc:
        raise ValueError(str(exc)) from None
