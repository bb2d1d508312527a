"""Assemble a headless run: settings from Claude's flags, the session, the runtime, its sinks
and guards — through the façade, as every surface does."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...agent import AgentRuntime
from ...core.budget import unenforceable_budget
from ...core.events import AgentEvent, FanoutSink, ModelRequest
from ...core.settings import ConfigError, LoadedSettings, load_settings
from ...features.sessions.binding import SessionBinding
from ...features.slash_commands import SlashCommand, invocation
from ...launch.agents import agent_definitions, keep_agents_flags, main_agent, take_tools
from ...launch.errors import EXIT_USAGE
from ...launch.parts import bind_session, keep_mcp_flags, mcp_flags, mcp_servers, note_untrusted, run_tools
from ...launch.settings import command_hooks
from ...sinks.claude_stream import ClaudeStreamSink, InitInfo
from ...tools.sandbox import WorkspaceSandbox
from . import session
from .channel import ControlChannel
from .entry import PROTOCOL_VERSION
from .flags import CLAUDE_MODES, HeadlessOptions, UsageError
from .guard import CallLedger, ClaudeRule, ClaudeRules, ClientGuard, ClientSide, RewritingToolRegistry, keep_tools
from .project import claude_provider, output_style, plugins, slash_commands
from .tool_names import ClaudeView, listed_name

if TYPE_CHECKING:
    from ...features.mcp import McpManager
    from ...launch.final_answer import OutputSchema
    from .claude_view import ClaudeTranscript

_LATER_TOOLS = ("checkpoint_list", "checkpoint_diff", "skill")  # the builder's, with checkpoints or skills


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
    claude_view: ClaudeTranscript | None = None  # Claude's transcript of the session (claude_view.py)
    commands: dict[str, SlashCommand] = field(default_factory=dict)  # custom slash commands, by name
    plugins: list[dict[str, Any]] = field(default_factory=list)  # `init`'s `plugins`
    output_style: str = "default"  # the settings' `outputStyle`, as `init` reports it
    fan: FanoutSink | None = None  # the runtime's sinks (the session writer first)

    def start_over(self) -> None:
        """`/clear`: a fresh conversation (the system prompt stays) in a new session, as Claude
        Code starts one; the old session is closed as it was, and stays resumable."""
        from ...features.sessions.ids import new_uuid_session_id

        runtime = self.runtime
        runtime.truncate_transcript(1)  # (turns go on counting: the checkpoints made so far keep their refs)
        runtime.session_id = self.sink.session_id = new_uuid_session_id()  # (a UUID, as every headless one)
        if self.binding is None or self.fan is None:
            return
        self.fan.sinks.remove(self.binding.writer)
        self.binding.close()
        self.binding = bind_session(self.loaded, runtime.session_id, "run", "", None, None, runtime)
        self.fan.sinks.insert(0, self.binding.writer)
        if self.claude_view is not None:  # (the SDKs' session functions see the new session)
            at = self.fan.sinks.index(self.claude_view)
            self.claude_view = self.fan.sinks[at] = self.claude_view.restarted(runtime.session_id)

    def expand_command(self, prompt: str) -> tuple[str, list[ClaudeRule]]:
        """A prompt `/name args` naming one of the custom commands, as the model gets it, with
        the permission rules of its `allowed-tools`; any other prompt as it is."""
        called = invocation(prompt)
        command = self.commands.get(called[0]) if called else None
        if called is None or command is None:
            return prompt, []
        return command.expand(called[1]), [ClaudeRule.parse(rule) for rule in command.allowed_tools]

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
        skills = self.skill_names()  # (Claude Code lists them as slash commands too)
        return InitInfo(cwd=str(runtime.workspace), model=runtime.provider.model,
                        tools=[listed_name(name) for name in runtime.tools.names()],
                        permission_mode=self.permission_mode,
                        api_key_source=self.api_key_source,
                        mcp_servers=self.mcp.statuses() if self.mcp is not None else [],
                        slash_commands=[*skills, *self.commands, "clear",
                                        *([name[1:] for name in self.mcp.prompt_commands()] if self.mcp else [])],
                        extra={"skills": skills, "provider": runtime.provider.name,
                               "claude_code_version": PROTOCOL_VERSION, "plugins": self.plugins,
                               "output_style": self.output_style, "recursive_version": __version__,
                               "agents": self.agent_names(),
                               "capabilities": ["interrupt_receipt_v1"]})  # (`interrupt` answers `still_queued`)

    def skill_names(self) -> list[str]:
        """The names of the skills offered (features/skills), for the `init` line."""
        if "recursive_cli.features.skills" not in sys.modules:  # (never loaded: none offered)
            return []
        from ...features.skills import SkillCatalog

        catalog = self.runtime.feature(SkillCatalog)
        return [skill.name for skill in catalog.skills] if catalog is not None else []

    def agent_names(self) -> list[str]:
        """The subagents the Agent tool can start (the init line's `agents`)."""
        if "recursive_cli.features.subagents.tool" not in sys.modules:  # (none was ever defined)
            return []
        from ...features.subagents import Subagents

        found = self.runtime.feature(Subagents)
        return found.names() if found is not None else []

    @property
    def api_key_source(self) -> str:
        """`apiKeySource`: the variable the key came from (Claude Code names `ANTHROPIC_API_KEY`
        so), "user" for one from elsewhere, "none" without a key."""
        if not self.loaded.settings.api_key:
            return "none"
        source = self.loaded.sources.get("api_key", "")
        return source.removeprefix("env ") if source.startswith("env ") else "user"

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
        if self.claude_view is not None:
            self.claude_view.close()
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
    from ...launch.parts import keep_skill_flags, run_skills

    schema = json_schema(options.json_schema) if options.json_schema else None
    flags = settings_flags(options)
    loaded = load_settings(flags, trust=check_trust, claude=True)
    from_claude = claude_provider(loaded)
    if from_claude:  # (Claude Code's own variables choose the model, as `claude -p` reads them)
        loaded = load_settings({**flags, **from_claude}, trust=check_trust, claude=True)
    sys.stderr.writelines(f"warning: {warning}\n" for warning in loaded.warnings)
    refused = unenforceable_budget(loaded)
    if refused:
        raise UsageError(refused.replace("--max-cost", "--max-budget-usd"))
    picked = session.pick(options, loaded)
    settings = picked.loaded.settings
    if settings.permission_mode == "plan" and options.permission_mode != "plan":
        # A session planned in plan mode, resumed: Claude's mode is the flag's (default: `default`).
        settings = replace(settings, permission_mode="auto")
    definitions = agent_definitions(picked.loaded, options.agents, picked.resumed)
    main = None
    if options.agent:
        settings, main = main_agent(settings, options.agent, definitions)
    view = ClaudeView(settings.workspace.expanduser().resolve())
    tools = run_tools(settings)
    known = {tool.name for tool in tools} | set(_LATER_TOOLS) | {"task"}
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
                            cost_of=lambda model, usage: holder[0].budget.price.of(model)(usage),
                            claude_mode=True)
    fan.add(sink)
    sink.include_hook_events = options.include_hook_events
    try:  # (a malformed MCP or hooks configuration, wherever it is: exit 2)
        given = mcp_flags(options.mcp_config, options.strict_mcp_config)
        servers = mcp_servers(picked.loaded, given, picked.resumed, code=EXIT_USAGE)
        builder = (AgentRuntime.builder().settings(settings, picked.loaded.home).mode("run")
                   .session_id(picked.session_id).sink(fan).tools(registry).agents(definitions))
        hooks = command_hooks(picked.loaded, [options.settings] if options.settings else [], code=EXIT_USAGE)
        builder.hooks(hooks)  # the settings files' and --settings' hooks
        note_untrusted(picked.loaded, strict_mcp=options.strict_mcp_config)
        skills = run_skills(picked.loaded, options.setting_sources, resumed=picked.resumed)
        if skills is not None:
            builder.skills(skills)
        runtime = (builder.mcp(servers) if servers else builder).build()
        if main is not None:
            take_tools(runtime, main)
    except BaseException:
        if picked.lock is not None:
            picked.lock.release()
        raise
    holder.append(runtime)
    binding, claude = None, None
    if not settings.no_session:  # (a resumed session keeps its mode; a new one is a run)
        binding = bind_session(picked.loaded, picked.session_id,
                               picked.resumed.meta.mode if picked.resumed is not None else "run",
                               " ".join(options.prompt_words), picked.resumed, picked.lock, runtime)
        fan.sinks.insert(0, binding.writer)
        claude = _claude_view(options, picked, runtime, step_model, view, sink)
        if claude is not None:
            fan.sinks.insert(1, claude)
        if not settings.no_checkpoints:
            runtime.enable_checkpoints(picked.loaded.home)
    keep_mcp_flags(runtime, servers)  # (into the bound session's state)
    keep_agents_flags(runtime, options.agents)
    keep_skill_flags(runtime, settings)
    if settings.otel:  # (the SDK is imported only then)
        from ...features.telemetry import attach_telemetry

        attach_telemetry(runtime, settings, "run")
    mode = options.permission_mode if options.permission_mode in CLAUDE_MODES else "default"
    if options.permission_mode not in (None, *CLAUDE_MODES):
        mode = "bypassPermissions"  # one of our modes: our permission policy decides alone
    rules = ClaudeRules.of(mode, options.allowed_tools,
                           [rule for rule in options.disallowed_tools if "(" in rule])
    rules.ours = options.permission_mode not in (None, *CLAUDE_MODES)
    rules.roots = tuple(str(root) for root in (view.workspace, *_roots(settings.add_dir)))
    client = ClientSide(ControlChannel(sink.write_line), asks=options.prompt_permission)
    run = HeadlessRun(options, picked.loaded, runtime, sink, client, rules, binding,
                      default_model=runtime.provider.model, view=view, schema=schema,
                      mcp=runtime.mcp(), claude_view=claude)
    run.fan = fan
    run.connect_sdk_servers()
    run.commands = slash_commands(picked.loaded, settings)
    for plugin in plugins(options.plugin_dir):
        run.plugins.append(plugin.record())
        run.commands.update(plugin.commands)
    run.output_style = output_style(picked.loaded, options)
    client.hook_base = run.hook_base
    runtime.add_guard(ClientGuard(rules, client, ledger, registry, view,
                                  recheck=runtime.permissions.verdict, stop_turn=runtime.interrupt,
                                  sandbox=_workspace_sandbox(runtime)))
    return run


def _claude_view(options: HeadlessOptions, picked: session.Continued, runtime: AgentRuntime, model: StepModel,
                 view: ClaudeView, sink: ClaudeStreamSink) -> ClaudeTranscript | None:
    """Claude's transcript of the session, for the Agent SDKs' session functions (and their
    SessionStore, with `--session-mirror` on a stream-json run)."""
    from ...features.sessions.reader import kept_messages
    from .claude_view import open_view

    resumed = picked.resumed
    mirror = options.session_mirror and options.output_format == "stream-json"
    return open_view(picked.session_id, runtime.workspace,
                     kept_messages(resumed.records) if resumed is not None else None,
                     model=model, saved_model=resumed.meta.model if resumed is not None else "",
                     present=view.present, mirror=sink.write_line if mirror else None)


def _workspace_sandbox(runtime: AgentRuntime) -> WorkspaceSandbox | None:
    sandbox = runtime.tool_context.sandbox
    return sandbox if isinstance(sandbox, WorkspaceSandbox) else None


def _roots(add_dir: list[Path]) -> list[Path]:
    return [Path(root).expanduser().resolve() for root in add_dir or ()]


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
        "skill": options.skill, "no_skills": options.no_skills,
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
