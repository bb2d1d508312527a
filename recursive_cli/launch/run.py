"""Start an agent command: settings → sinks → runtime → asyncio driver → result and exit code."""

from __future__ import annotations

import asyncio
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..agent import AgentRuntime
from ..core.budget import unenforceable_budget
from ..core.errors import BadValueError, ConfigError, SandboxUnavailableError, SessionStateError
from ..core.events import EventSink, FanoutSink, FinishReason, RunFinished, RunStarted
from ..core.kernel import TurnOutcome
from ..core.results import make_result
from ..core.settings import LoadedSettings, Settings
from ..core.slotted import Slotted
from ..features.sessions.binding import SessionBinding
from ..features.sessions.ids import check_session_id, new_session_id
from ..features.sessions.lock import SessionLock
from ..features.sessions.records import SessionError, SessionWriteError
from .errors import EXIT_ERROR, EXIT_USAGE, config_code, end_startup, fail
from .final_answer import OutputOptionError, OutputRequest, output_request
from .options import CommonOptions, RunOptions
from .prompt_input import empty_prompt_message
from .settings import load_or_fail

if TYPE_CHECKING:
    from ..core.tool import Tool
    from ..features.mcp import McpConfig, McpState
    from ..features.sessions.reader import LoadedSession
    from ..features.sessions.writer import JsonlSessionWriter

Work = Callable[[AgentRuntime], Awaitable[TurnOutcome]]


class Launch(Slotted):
    """What a command asks for: settings, mode, session id, and for `resume` the loaded session."""

    __slots__ = ("loaded", "mode", "session_id", "title", "resumed", "lock", "output", "judge_model", "mcp",
                 "settings", "include_hook_events", "sinks")
    loaded: LoadedSettings
    mode: str
    session_id: str
    title: str
    resumed: LoadedSession | None
    lock: SessionLock | None  # held on the resumed session since it was loaded
    output: OutputRequest  # --output-last-message, --output-schema
    judge_model: str | None  # a resumed goal's own judge model: --max-cost needs its price too
    mcp: McpState | None  # --mcp-config, --strict-mcp-config (None: a resumed session's own)
    settings: list[str]  # --settings: hooks (features/hooks)
    include_hook_events: bool
    # The event sinks to show the run with (None: `output_sinks`; the interactive session's own).
    sinks: Callable[[Settings, str], list[EventSink]] | None

    def __init__(self, loaded: LoadedSettings, mode: str, session_id: str, title: str = "",
                 resumed: LoadedSession | None = None, lock: SessionLock | None = None,
                 output: OutputRequest | None = None, judge_model: str | None = None, mcp: McpState | None = None,
                 settings: list[str] | None = None, include_hook_events: bool = False,
                 sinks: Callable[[Settings, str], list[EventSink]] | None = None) -> None:
        self.loaded = loaded
        self.mode = mode
        self.session_id = session_id
        self.title = title
        self.resumed = resumed
        self.lock = lock
        self.output = OutputRequest() if output is None else output
        self.judge_model = judge_model
        self.mcp = mcp
        self.settings = [] if settings is None else settings
        self.include_hook_events = include_hook_events
        self.sinks = sinks


def agent_launch(common: CommonOptions, options: RunOptions, mode: str, prompt: str) -> Launch | int:
    """The Launch of a `run`, `loop` or `goal` on `prompt`: a new session, or with `-c` this
    workspace's latest one; or the exit code of the error, already reported. The title (and
    the first prompt kept for a crash before turn 1) carries the --output-schema instruction."""
    try:
        output = output_request(options.output_last_message, options.output_schema)
    except OutputOptionError as exc:
        return fail(str(exc), EXIT_USAGE)
    if options.continue_session:
        from .sessions import continue_launch

        spec = continue_launch(common, mode, prompt)
    else:
        spec = new_launch(common, mode, prompt, read_stdin=not options.no_stdin)
    if isinstance(spec, int):
        return spec
    spec.output = output
    spec.title = output.prompt(spec.title)
    spec.mcp = mcp_flags(options.mcp_config, options.strict_mcp_config)
    spec.settings, spec.include_hook_events = list(options.settings or []), options.include_hook_events
    return spec


def mcp_flags(configs: list[str] | None, strict: bool) -> McpState | None:
    """The MCP flags given, or None when there are none."""
    if not (configs or strict):
        return None
    from ..features.mcp import McpState

    return McpState(configs=list(configs or []), strict=strict)


def mcp_config(spec: Launch) -> McpConfig | None | int:
    """The MCP servers of this launch: the flags' (a resumed session's saved flags when none
    are given), the workspace's `.mcp.json` and the user's; or the exit code of a malformed
    configuration (2), already reported. None when nothing configures any (no flag, no file)."""
    settings = spec.loaded.settings
    workspace = settings.workspace.expanduser().resolve()
    saved = spec.resumed is not None and "mcp" in spec.resumed.meta.state
    if spec.mcp is None and not saved and not any(  # (no file, no flag: the feature stays unloaded)
            path.is_file() for path in (workspace / ".mcp.json", spec.loaded.home / "mcp.json")):
        return None
    from ..features.mcp import McpConfigError, load_mcp_config
    from ..features.trust import verdict_for

    request = spec.mcp or (saved_mcp(spec.resumed) if spec.resumed is not None else None)
    try:
        return load_mcp_config(workspace, spec.loaded.home, request.configs if request else (),
                               request.strict if request else False, spec.loaded.env, user=not settings.bare,
                               project=verdict_for(spec.loaded, workspace).trusted)
    except McpConfigError as exc:
        return fail(str(exc), config_code(exc))


def saved_mcp(session: LoadedSession) -> McpState | None:
    """The MCP flags the session ran with; a saved file that is gone is left out, with a note."""
    import os

    from pydantic import ValidationError

    from ..features.mcp import McpState

    if session.meta.imported is not None:  # a bundle's servers are commands: never started (quarantine.py)
        return None
    try:
        saved = McpState.model_validate(session.meta.state.get(McpState.key) or {})
    except ValidationError:
        return None
    kept = [c for c in saved.configs if c.lstrip().startswith("{") or os.path.isfile(c)]
    for gone in set(saved.configs) - set(kept):
        sys.stderr.write(f"note: the session's --mcp-config {gone} no longer exists; its servers are left out\n")
    return McpState(configs=kept, strict=saved.strict) if saved.configs or saved.strict else None


def new_launch(common: CommonOptions, mode: str, prompt: str, read_stdin: bool = True) -> Launch | int:
    """Settings and a fresh session id for a new `mode` command on `prompt`; or the exit code
    of the usage error (2) or configuration error (1), already reported."""
    if not prompt:
        return fail(empty_prompt_message(read_stdin), EXIT_USAGE)
    return fresh_launch(common, mode, prompt)


def fresh_launch(common: CommonOptions, mode: str, title: str = "") -> Launch | int:
    """Settings and a new session id (`--session-id`'s, checked, or a generated one) for a new
    session; or the exit code of the error, already reported. The interactive session starts
    here with no prompt yet."""
    loaded = load_or_fail(common)
    if isinstance(loaded, int):
        return loaded
    session_id = loaded.settings.session_id or new_session_id()
    problem = check_session_id(session_id)
    if problem:
        return fail(problem, EXIT_USAGE)
    return Launch(loaded, mode, session_id, title=title)


def output_sinks(settings: Settings, session_id: str) -> list[EventSink]:
    """The sinks for the chosen output format: stdout JSON or the text answer, stderr progress."""
    from ..sinks.terminal import PlainTerminalSink, RichTerminalSink

    sinks: list[EventSink] = []
    if settings.output_format in ("stream-json", "json"):  # SPEC §4: Claude Code's lines
        from ..core.pricing import Price
        from ..sinks.claude_stream import ClaudeStreamSink

        sinks.append(ClaudeStreamSink(sys.stdout, session_id, whole_runs=True,
                                      stream=settings.output_format == "stream-json",
                                      api_key_source="user" if settings.api_key else "none",
                                      cost_of=lambda model, usage: Price(model, settings.prices)(usage)))
    if sys.stderr.isatty() and settings.output_format == "text":
        sinks.append(RichTerminalSink(sys.stderr, settings.quiet, settings.verbose, settings.prices))
    else:
        sinks.append(PlainTerminalSink(sys.stderr, settings.quiet, settings.verbose, settings.prices))
    if settings.output_format == "text":  # last: after the progress display has finished
        from ..sinks.answer import TextAnswerSink

        sinks.append(TextAnswerSink(sys.stdout))
    return sinks


def launch(spec: Launch, work: Work) -> int:
    """Build the runtime, bind its session and run `work` on it; returns the process exit code."""
    settings = spec.loaded.settings
    refused = unenforceable_budget(spec.loaded, spec.judge_model)  # e.g. --max-cost on a model with no price
    if refused:
        if spec.lock is not None:
            spec.lock.release()
        return fail(refused, EXIT_USAGE)
    if settings.verbose:
        from ..core.diagnostics import enable_verbose

        enable_verbose(sys.stderr)  # causes and tracebacks of failures, not only their one line
    servers = mcp_config(spec)
    if isinstance(servers, int):
        if spec.lock is not None:
            spec.lock.release()
        return servers
    from .settings import hooks_or_fail, show_hook_events

    hooks = hooks_or_fail(spec.loaded, spec.settings)
    if isinstance(hooks, int):
        if spec.lock is not None:
            spec.lock.release()
        return hooks
    note_untrusted(spec.loaded, strict_mcp=spec.mcp is not None and spec.mcp.strict)
    shown = (spec.sinks or output_sinks)(settings, spec.session_id)
    sink = FanoutSink(show_hook_events(shown, spec.include_hook_events))
    binding = None
    try:
        builder = (AgentRuntime.builder().settings(settings, spec.loaded.home).mode(spec.mode)
                   .session_id(spec.session_id).sink(sink))
        if settings.bare:
            from ..core.tool import ToolRegistry

            builder.tools(ToolRegistry(run_tools(settings)))
        runtime = (builder.mcp(servers) if servers else builder).hooks(hooks).build()
        if not settings.no_session:
            binding = _bind(spec, runtime, settings)
            sink.sinks.insert(0, binding.writer)
            if not settings.no_checkpoints:
                runtime.enable_checkpoints(spec.loaded.home)
    except (ConfigError, SessionError) as exc:
        if spec.lock is not None:
            spec.lock.release()
        return fail(str(exc), EXIT_USAGE if isinstance(exc, (BadValueError, SandboxUnavailableError)) else EXIT_ERROR)
    if settings.permission_mode == "ask":
        from .ask import terminal_ask_hook

        runtime.set_permission_hook(terminal_ask_hook(runtime.permissions))
    from .stdio import on_broken_pipe

    on_broken_pipe(lambda: runtime.interrupt(signal.SIGPIPE))  # `| head -1`: stop, exit 141
    try:
        end_startup()  # the garbage collector, off since the command started (errors.py)
        result = asyncio.run(drive(runtime, spec.output.wrap(work), settings,
                                   session=binding.writer if binding is not None else None,
                                   structured=lambda: spec.output.structured_output))
    finally:
        if binding is not None:
            binding.close()
        elif spec.lock is not None:
            spec.lock.release()
    return _write_last_message(spec.output, result)


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


def _write_last_message(output: OutputRequest, result: RunFinished) -> int:
    """The exit code once --output-last-message is written (1 if that failed on a success)."""
    from ..sinks.answer import answer_text

    problem = output.write_last_message(answer_text(result))
    if problem:
        fail(problem)
        return result.exit_code or EXIT_ERROR
    return result.exit_code


def _bind(spec: Launch, runtime: AgentRuntime, settings: Settings) -> SessionBinding:
    from ..features.sessions.binding import create_session, reopen_session, session_meta
    from ..features.sessions.store import SessionStore

    if spec.resumed is not None and spec.lock is not None:
        if spec.resumed.meta.mode != spec.mode:  # `loop -c` on a run's session: a loop from now on
            spec.resumed.meta.mode = spec.mode  # type: ignore[assignment]
        return reopen_session(spec.resumed, spec.lock, runtime)
    folder = SessionStore(spec.loaded.home).folder(spec.session_id)
    return create_session(folder, session_meta(runtime, settings, spec.mode, spec.title), runtime)


async def drive(runtime: AgentRuntime, work: Work, settings: Settings, *,
                session: JsonlSessionWriter | None = None,
                structured: Callable[[], Any] | None = None) -> RunFinished:
    """Run `work` with signal handling; always emits and returns the final result.

    A session that could not be written decides the result (exit 1, `io_error`) whatever the
    run did: the user must not take an unrecorded run for a saved one.
    """
    loop = asyncio.get_running_loop()
    _install_signals(loop, runtime)
    servers = await start_mcp(runtime)  # (before the init line, which lists them and their tools)
    runtime.emit(RunStarted(session_id=runtime.session_id, cwd=str(runtime.workspace),
                         model=runtime.provider.model, provider=runtime.provider.name,
                         tools=runtime.tools.names(), permission_mode=settings.permission_mode,
                         mcp_servers=servers))
    try:
        outcome = await work(runtime)
    except SessionWriteError as exc:  # raised by the session sink outside a turn (a driver's record)
        outcome = TurnOutcome(FinishReason.IO_ERROR, detail=str(exc))
    except SessionStateError as exc:  # a damaged goal or loop state: not the model's failure
        outcome = TurnOutcome(FinishReason.INTERNAL_ERROR, detail=str(exc))
    except Exception as exc:  # a bug must still end in a result line, not a traceback
        if settings.verbose:
            traceback.print_exc()
        outcome = TurnOutcome(FinishReason.INTERNAL_ERROR, detail=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        await runtime.aclose()
    lost = session.error if session is not None else None
    if lost is not None and outcome.finish_reason is not FinishReason.IO_ERROR:
        outcome = TurnOutcome(FinishReason.IO_ERROR, text=outcome.text, detail=str(lost))
    result = make_result(
        reason=outcome.finish_reason, text=outcome.text, detail=outcome.detail,
        session_id=runtime.session_id, num_turns=runtime.turn_index(), num_steps=runtime.total_steps,
        duration_ms=int(runtime.budget.elapsed() * 1000), usage=runtime.usage,
        cost=runtime.budget.total_cost, signum=runtime.interrupt_token.signal,
        goal=runtime.goal_summary, structured_output=structured() if structured is not None else None,
        model_usage=runtime.budget.by_model)

    runtime.emit(result)
    for signum in (signal.SIGINT, signal.SIGTERM):  # (kept till now: a second Ctrl-C exits at once)
        loop.remove_signal_handler(signum)
    return result


async def start_mcp(runtime: AgentRuntime) -> list[dict[str, str]]:
    """Start the runtime's MCP servers, if it has any (in parallel; Ctrl-C stops the wait);
    their statuses for the init line."""
    manager = runtime.mcp()
    if manager is None:
        return []
    try:
        await manager.start(runtime)
    except Exception as exc:  # a bug here must not keep the run from its result line
        sys.stderr.write(f"warning: the MCP servers could not be started: {type(exc).__name__}: {exc}\n")
    return manager.statuses()


def _install_signals(loop: asyncio.AbstractEventLoop, runtime: AgentRuntime) -> None:
    def on_signal(signum: int) -> None:
        if runtime.interrupt_token.is_set() and signum == signal.SIGINT:
            sys.stderr.write("\ninterrupted twice: exiting now\n")
            runtime.tool_context.processes.kill_all()  # no tool command may outlive us
            from ..features.mcp import kill_servers_now

            kill_servers_now(runtime)  # nor an MCP server
            import os

            os._exit(130)
        runtime.interrupt(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
