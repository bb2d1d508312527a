"""Assemble a headless run: settings from Claude's flags, the session, the runtime, its sinks
and guards — through the façade, as every surface does."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...agent import AgentRuntime
from ...core.budget import unenforceable_budget
from ...core.events import AgentEvent, FanoutSink, ModelRequest
from ...core.settings import ConfigError, LoadedSettings, load_settings
from ...features.sessions.binding import SessionBinding
from ...launch.errors import EXIT_USAGE
from ...launch.parts import bind_session, keep_mcp_flags, mcp_flags, mcp_servers, note_untrusted, run_tools
from ...launch.settings import command_hooks
from ...sinks.claude_stream import ClaudeStreamSink, InitInfo
from . import session
from .channel import ControlChannel
from .flags import CLAUDE_MODES, HeadlessOptions, UsageError
from .guard import CallLedger, ClaudeRules, ClientGuard, ClientSide, RewritingToolRegistry, keep_tools
from .tool_names import ClaudeView, claude_name

if TYPE_CHECKING:
    from ...features.mcp import McpManager
    from ...launch.final_answer import OutputSchema

# The level of Claude Code's headless protocol spoken here (its SDKs warn when none is given).
PROTOCOL_VERSION = "2.0.0"
_CHECKPOINT_TOOLS = ("checkpoint_list", "checkpoint_diff")


@dataclass
class HeadlessRun:
    """Everything one headless process runs with."""

    options: HeadlessOptions
    loaded: LoadedSettings
    runtime: AgentRuntime
    sink: ClaudeStreamSink
    client: ClientSide
    rules: ClaudeRules
    binding: SessionBinding | None
    default_model: str
    view: ClaudeView
    schema: OutputSchema | None = None  # --json-schema, or the TypeScript SDK's in `initialize`
    mcp: McpManager | None = None  # the MCP servers (--mcp-config, .mcp.json, the user's)

    def connect_sdk_servers(self) -> None:
        """Servers inside the client's own process (`"type": "sdk"`) are asked through its
        control channel (`mcp_message`), when a client is there to ask (stream-json input)."""
        if self.mcp is not None and self.options.streaming_input:
            channel = self.client.channel
            self.mcp.sdk_channel = lambda server, message: channel.request(
                {"subtype": "mcp_message", "server_name": server, "message": message})

    async def start_mcp(self) -> None:
        """Start the MCP servers before the first `init` line, which lists them and their tools."""
        if self.mcp is not None:
            await self.mcp.start(self.runtime)

    def init_info(self) -> InitInfo:
        """The `system` `init` line for the next turn."""
        runtime = self.runtime
        return InitInfo(cwd=str(runtime.workspace), model=runtime.provider.model,
                        tools=[claude_name(name) for name in runtime.tools.names()],
                        permission_mode=self.permission_mode,
                        api_key_source="user" if self.loaded.settings.api_key else "none",
                        mcp_servers=self.mcp.statuses() if self.mcp is not None else [],
                        slash_commands=[name[1:] for name in self.mcp.prompt_commands()] if self.mcp else [],
                        extra={"provider": runtime.provider.name, "claude_code_version": PROTOCOL_VERSION,
                               "recursive_version": __version__})

    @property
    def permission_mode(self) -> str:
        """The mode in force: Claude's (changed by `set_permission_mode`) or ours, if given."""
        given = self.options.permission_mode
        return self.rules.mode if given is None or given in CLAUDE_MODES else given

    def hook_base(self) -> dict[str, Any]:
        """The fields every hook input starts with."""
        path = str(self.binding.writer.path) if self.binding is not None else ""
        return {"session_id": self.runtime.session_id, "transcript_path": path,
                "cwd": str(self.runtime.workspace), "permission_mode": self.permission_mode}

    def close(self) -> None:
        if self.binding is not None:
            self.binding.close()


class StepModel:
    """The model of the model call under way, for the assistant lines (an event sink).

    The kernel picks each call's provider just before it announces the call (`ModelRequest`),
    so what `current` says then is the model that answers it: a `set_model` that comes while
    the call runs shows from the next call's line on, as it takes effect."""

    def __init__(self, current: Callable[[], str]) -> None:
        self._current = current
        self._step: str | None = None  # None: no call yet

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, ModelRequest):
            self._step = self._current()

    def __call__(self) -> str:
        return self._current() if self._step is None else self._step


def assemble(options: HeadlessOptions) -> HeadlessRun:
    """Build the run; UsageError for values that cannot be used, ConfigError or SessionError
    for settings or a session that cannot be had."""
    from ...features.trust import check_trust

    schema = json_schema(options.json_schema) if options.json_schema else None
    loaded = load_settings(settings_flags(options), trust=check_trust)
    sys.stderr.writelines(f"warning: {warning}\n" for warning in loaded.warnings)
    refused = unenforceable_budget(loaded)
    if refused:
        raise UsageError(refused.replace("--max-cost", "--max-budget-usd"))
    picked = session.pick(options, loaded)
    settings = picked.loaded.settings
    if settings.permission_mode == "plan" and options.permission_mode != "plan":
        # A session planned in plan mode, resumed: Claude's mode is the flag's (default: `default`).
        settings = replace(settings, permission_mode="auto")
    view = ClaudeView(settings.workspace.expanduser().resolve())
    tools = run_tools(settings)
    known = {tool.name for tool in tools} | set(_CHECKPOINT_TOOLS)
    keep, unknown = keep_tools(options.tools, options.disallowed_tools, known)
    for name in unknown:
        sys.stderr.write(f"note: no tool {name!r} here; it is left out\n")
    registry = RewritingToolRegistry(tools, keep)
    ledger = CallLedger()
    fan = FanoutSink([ledger])
    holder: list[AgentRuntime] = []
    step_model = StepModel(lambda: holder[0].provider.model)
    fan.add(step_model)  # (before the stream sink, which asks it at the same events)
    sink = ClaudeStreamSink(sys.stdout, picked.session_id, model=step_model,
                            present=view.present, partial=options.include_partial_messages,
                            stream=options.output_format == "stream-json",
                            cost_of=lambda model, usage: holder[0].budget.price.of(model)(usage))
    fan.add(sink)
    sink.include_hook_events = options.include_hook_events
    try:  # (a malformed MCP or hooks configuration, wherever it is: exit 2)
        given = mcp_flags(options.mcp_config, options.strict_mcp_config)
        servers = mcp_servers(picked.loaded, given, picked.resumed, code=EXIT_USAGE)
        builder = (AgentRuntime.builder().settings(settings, picked.loaded.home).mode("run")
                   .session_id(picked.session_id).sink(fan).tools(registry))
        hooks = command_hooks(picked.loaded, [options.settings] if options.settings else [], code=EXIT_USAGE)
        builder.hooks(hooks)  # the settings files' and --settings' hooks
        note_untrusted(picked.loaded, strict_mcp=options.strict_mcp_config)
        runtime = (builder.mcp(servers) if servers else builder).build()
    except BaseException:
        if picked.lock is not None:
            picked.lock.release()
        raise
    holder.append(runtime)
    binding = None
    if not settings.no_session:  # (a resumed session keeps its mode; a new one is a run)
        binding = bind_session(picked.loaded, picked.session_id,
                               picked.resumed.meta.mode if picked.resumed is not None else "run",
                               " ".join(options.prompt_words), picked.resumed, picked.lock, runtime)
        fan.sinks.insert(0, binding.writer)
        if not settings.no_checkpoints:
            runtime.enable_checkpoints(picked.loaded.home)
    keep_mcp_flags(runtime, servers)  # (into the bound session's state)
    if settings.otel:  # (the SDK is imported only then)
        from ...features.telemetry import attach_telemetry

        attach_telemetry(runtime, settings, "run")
    mode = options.permission_mode if options.permission_mode in CLAUDE_MODES else "default"
    if options.permission_mode not in (None, *CLAUDE_MODES):
        mode = "bypassPermissions"  # one of our modes: our permission policy decides alone
    rules = ClaudeRules.of(mode, options.allowed_tools,
                           [rule for rule in options.disallowed_tools if "(" in rule])
    client = ClientSide(ControlChannel(sink.write_line), asks=options.prompt_permission)
    run = HeadlessRun(options, picked.loaded, runtime, sink, client, rules, binding,
                      default_model=runtime.provider.model, view=view, schema=schema,
                      mcp=runtime.mcp())
    run.connect_sdk_servers()
    client.hook_base = run.hook_base
    runtime.add_guard(ClientGuard(rules, client, ledger, registry, view,
                                  recheck=runtime.permissions.verdict, stop_turn=runtime.interrupt))
    return run


def settings_flags(options: HeadlessOptions) -> dict[str, Any]:
    """Our settings for the headless flags (what is not given stays None, for `load_settings`)."""
    ours = options.permission_mode not in (None, *CLAUDE_MODES)
    effort, budget = options.thinking_settings()
    return {
        "effort": effort, "thinking_budget": budget,
        "model": options.model, "provider": options.provider, "api_base": options.api_base,
        "workspace": options.workspace, "add_dir": options.add_dir, "max_steps": options.max_turns,
        "max_cost": options.max_budget_usd, "max_duration": options.max_duration,
        "output_format": options.output_format, "no_session": options.no_session,
        "no_checkpoints": options.no_checkpoints,
        "permission_mode": options.permission_mode if ours or options.permission_mode == "plan" else None,
        "allow": options.allow, "deny": options.deny,
        "system_prompt": _text(options.system_prompt, options.system_prompt_file, "--system-prompt-file"),
        "append_system_prompt": _text(options.append_system_prompt, options.append_system_prompt_file,
                                      "--append-system-prompt-file"),
        "no_stream": options.no_stream, "quiet": options.quiet, "verbose": options.debug,
        "script": options.script, "trust_workspace": options.trusts_workspace, "bare": options.bare,
        "strict_config": options.strict_config, "sandbox": options.sandbox,
        "sandbox_network": options.sandbox_network, "sandbox_allow_ports": options.sandbox_allow_port,
        "otel": options.otel,
    }


def _text(value: str | None, path: Path | None, flag: str) -> str | None:
    """A prompt from its flag and its file flag; "" (Claude's SDKs pass it) means none."""
    parts = [value] if value else []
    if path is not None:
        try:
            parts.append(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{flag}: cannot read {path}: {exc.strerror or exc}") from None
    return "\n\n".join(parts) or None


def json_schema(given: str | dict[str, Any]) -> OutputSchema:
    """A checked JSON Schema for the final answer (`--json-schema JSON`); a UsageError
    (OutputOptionError) when the text is not JSON or not a schema."""
    from ...launch.final_answer import checked_schema

    try:
        schema = json.loads(given) if isinstance(given, str) else given
    except ValueError as exc:
        raise UsageError(f"--json-schema is not JSON: {exc}") from None
    return checked_schema(schema, "--json-schema", Path("--json-schema"), "--json-schema")
