"""Start an agent command: settings → sinks → runtime → asyncio driver → result and exit code."""

from __future__ import annotations

import asyncio
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..agent import AgentRuntime
from ..core.budget import unenforceable_budget
from ..core.errors import BadValueError, CliError, ConfigError, ImageError, SandboxUnavailableError, SessionStateError
from ..core.events import EventSink, FanoutSink, FinishReason, RunFinished, RunStarted
from ..core.kernel import TurnOutcome
from ..core.messages import Image
from ..core.provider import ChatProvider
from ..core.results import make_result
from ..core.settings import LoadedSettings, Settings
from ..features.sessions.binding import SessionBinding
from ..features.sessions.ids import check_session_id, new_session_id
from ..features.sessions.lock import SessionLock
from ..features.sessions.records import SessionError, SessionWriteError
from .agents import agent_definitions, keep_agents_flags, main_agent, take_tools
from .errors import EXIT_ERROR, EXIT_USAGE, end_startup, fail
from .final_answer import OutputRequest, output_request
from .options import CommonOptions, RunOptions, model_names
from .parts import (
    bind_session,
    keep_mcp_flags,
    keep_skill_flags,
    mcp_flags,
    mcp_servers,
    note_untrusted,
    run_skills,
    run_tools,
)
from .prompt_input import empty_prompt_message
from .served_model import with_served_model
from .settings import command_settings

if TYPE_CHECKING:
    from ..core.event_models import WorktreeInfo
    from ..features.mcp import McpState
    from ..features.sessions.reader import LoadedSession
    from ..features.sessions.writer import JsonlSessionWriter
    from ..features.worktrees import WorktreeState
    from .detach import Detachment

Work = Callable[[AgentRuntime], Awaitable[TurnOutcome]]


@dataclass(slots=True)
class Launch:
    """What a command asks for: settings, mode, session id, and for `resume` the loaded session."""

    loaded: LoadedSettings
    mode: str
    session_id: str
    title: str = ""
    resumed: LoadedSession | None = None
    lock: SessionLock | None = None  # held on the resumed session since it was loaded
    output: OutputRequest = field(default_factory=OutputRequest)  # --output-last-message, --output-schema
    judge_model: str | None = None  # a resumed goal's own judge model: --max-cost needs its price too
    mcp: McpState | None = None  # --mcp-config, --strict-mcp-config (None: a resumed session's own)
    settings: list[str] = field(default_factory=list)  # --settings: hooks (features/hooks)
    include_hook_events: bool = False
    background: bool = False  # --bg: detached once the session is bound (launch/detach.py)
    images: tuple[Image, ...] = ()  # -i: with the first prompt
    # The event sinks to show the run with (None: `output_sinks`; the interactive session's own).
    sinks: Callable[[Settings, str], list[EventSink]] | None = None
    worktree: WorktreeState | None = None  # -w: the new git worktree the new session works in
    fallback_models: list[str] = field(default_factory=list)  # --fallback-model, in order
    agents: list[str] = field(default_factory=list)  # --agents (none: a resumed session's own)
    agent: str | None = None  # --agent: the main conversation's agent


def agent_launch(common: CommonOptions, options: RunOptions, mode: str, prompt: str) -> Launch:
    """The Launch of a `run`, `loop` or `goal` on `prompt`: a new session, or with `-c` this
    workspace's latest one; CliError for one that cannot be had. The title (and the first
    prompt kept for a crash before turn 1) carries the --output-schema instruction."""
    output = output_request(options.output_last_message, options.output_schema)  # (OutputOptionError: exit 2)
    if options.worktree is not None:
        if not prompt:
            raise CliError(empty_prompt_message(not options.no_stdin), EXIT_USAGE)
        from .worktree import discard, enter_worktree

        common, worktree = enter_worktree(common, options.worktree, options.continue_session)
        try:
            spec = new_launch(common, mode, prompt, read_stdin=not options.no_stdin)
        except BaseException:
            discard(worktree)
            raise
        spec.worktree = worktree
    elif options.continue_session:
        from .sessions import continue_launch

        spec = continue_launch(common, mode, prompt)
    else:
        spec = new_launch(common, mode, prompt, read_stdin=not options.no_stdin)
    spec.output = output
    spec.title = output.prompt(spec.title)
    return with_run_options(spec, options)


def with_run_options(spec: Launch, options: RunOptions) -> Launch:
    """`spec` with the MCP flags and the hook options of the command line."""
    spec.mcp = mcp_flags(options.mcp_config, options.strict_mcp_config)  # None: a resumed session's own
    spec.settings, spec.include_hook_events = list(options.settings or []), options.include_hook_events
    if options.image:
        from ..core.images import load_image

        try:
            spec.images = tuple(load_image(path.expanduser()) for path in options.image)
        except ImageError as exc:  # (changed since the flag's check)
            raise CliError(f"-i: {exc}", EXIT_USAGE) from None
    spec.fallback_models = model_names(options.fallback_model)
    spec.agents, spec.agent = list(options.agents or []), options.agent
    spec.background = options.bg
    return spec


def new_launch(common: CommonOptions, mode: str, prompt: str, read_stdin: bool = True) -> Launch:
    """Settings and a fresh session id for a new `mode` command on `prompt`; CliError for a
    usage error (2) or a configuration error (1)."""
    if not prompt:
        raise CliError(empty_prompt_message(read_stdin), EXIT_USAGE)
    return fresh_launch(common, mode, prompt)


def fresh_launch(common: CommonOptions, mode: str, title: str = "") -> Launch:
    """Settings and a new session id (`--session-id`'s, checked, or a generated one) for a new
    session; CliError for either that cannot be used. The interactive session starts here with
    no prompt yet."""
    loaded = command_settings(common)
    session_id = loaded.settings.session_id or new_session_id()
    problem = check_session_id(session_id)
    if problem:
        raise CliError(problem, EXIT_USAGE)
    return Launch(with_served_model(loaded), mode, session_id, title=title)


def with_fallback(provider: ChatProvider, models: list[str], settings: Settings) -> ChatProvider:
    """`provider`, handing over to `models` in turn when it is unavailable (--fallback-model)."""
    from ..providers import make_provider
    from ..providers.fallback import FallbackProvider

    def make(model: str) -> ChatProvider:
        if provider.name == "scripted":  # its replies go on where they are
            provider.model = model
            return provider
        try:
            return make_provider(replace(settings, model=model))
        except ConfigError as exc:
            from ..core.errors import ProviderError

            raise ProviderError(f"--fallback-model {model}: {exc}") from None

    def note(text: str) -> None:
        sys.stderr.write(f"note: {text}\n")

    return FallbackProvider(provider, models, make, note)


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
    """Build the runtime, bind its session and run `work` on it; returns the run's exit code,
    or raises CliError for a launch that cannot start (a resumed session's lock released)."""
    detached = _detachment(spec) if spec.background else None
    try:
        runtime, binding = _start(spec)
    except BaseException:
        if detached is not None:
            detached.discard()
        if spec.lock is not None:
            spec.lock.release()
        if spec.resumed is None:
            from .worktree import discard

            discard(spec.worktree)
        raise
    if detached is not None and binding is not None:
        detached.fork(spec.session_id, binding.lock)  # returns in the detached process only
    return _run(spec, runtime, binding, work)


def start_runtime(spec: Launch) -> tuple[AgentRuntime, SessionBinding | None]:
    """The runtime of `spec`, its session bound (None: `--no-session`), for a front end that
    drives its turns itself (`recursive acp`); CliError for a launch that cannot start, a
    resumed session's lock then released."""
    try:
        return _start(spec)
    except BaseException:
        if spec.lock is not None:
            spec.lock.release()
        raise


def _detachment(spec: Launch) -> Detachment:
    """`--bg`: the streams onto the session's files, and the stream-json lines too."""
    from ..features.sessions.store import SessionStore
    from .detach import Detachment, events_sink

    settings = spec.loaded.settings
    if settings.no_session:
        raise CliError("--bg needs the session to follow the run by; it cannot be used with --no-session",
                       EXIT_USAGE)
    folder = SessionStore(spec.loaded.home).folder(spec.session_id)
    detached = Detachment(folder)
    shown = spec.sinks or output_sinks
    spec.sinks = lambda s, session_id: [*shown(s, session_id), events_sink(folder, session_id, s.prices)]
    return detached


BESIDE_FILES = 256  # the open files a process may have for work to begin beside its launch


def room_beside() -> bool:
    """Whether the process may open files enough for bubblewrap's trial and git's first
    snapshot to begin beside the launch. Under a tight limit (`ulimit -n 10`) they wait for
    their turn instead: running beside it, their pipes could take the descriptors the
    launch's own imports need, and an import that cannot open its file ends the run."""
    try:
        import resource
    except ImportError:  # pragma: no cover (not POSIX)
        return True
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft == resource.RLIM_INFINITY or soft >= BESIDE_FILES


def _start(spec: Launch) -> tuple[AgentRuntime, SessionBinding | None]:
    """The runtime of `spec`, its session bound (None: `--no-session`)."""
    settings = spec.loaded.settings
    refused = unenforceable_budget(spec.loaded, spec.judge_model)  # e.g. --max-cost on a model with no price
    if refused:
        raise CliError(refused, EXIT_USAGE)
    from ..tools.os_sandbox import try_bwrap_soon

    beside = room_beside()
    if beside:
        try_bwrap_soon(settings.sandbox_mode)  # (its answer is awaited when the runtime is built)
    prepared = None
    if beside and not settings.no_session and not settings.no_checkpoints:  # git's work begins beside the rest
        from ..features.checkpoints.observer import prepared_checkpointer

        made_here = spec.resumed is None and not settings.session_id  # (no --session-id: nothing of it exists yet)
        prepared = prepared_checkpointer(spec.loaded.home, settings.workspace.expanduser(), spec.session_id,
                                         new_session=made_here)
    if settings.verbose:
        from ..core.diagnostics import enable_verbose

        enable_verbose(sys.stderr)  # causes and tracebacks of failures, not only their one line
    servers = mcp_servers(spec.loaded, spec.mcp, spec.resumed)
    from .settings import command_hooks, show_hook_events

    hooks = command_hooks(spec.loaded, spec.settings)
    note_untrusted(spec.loaded, strict_mcp=spec.mcp is not None and spec.mcp.strict)
    definitions = agent_definitions(spec.loaded, spec.agents, spec.resumed)
    main = None
    if spec.agent:
        settings, main = main_agent(settings, spec.agent, definitions)
    shown = (spec.sinks or output_sinks)(settings, spec.session_id)
    sink = FanoutSink(show_hook_events(shown, spec.include_hook_events))
    try:
        builder = (AgentRuntime.builder().settings(settings, spec.loaded.home).mode(spec.mode)
                   .session_id(spec.session_id).sink(sink).agents(definitions))
        if settings.bare:
            from ..core.tool import ToolRegistry

            builder.tools(ToolRegistry(run_tools(settings)))
        skills = run_skills(spec.loaded, resumed=spec.resumed)
        if skills is not None:
            builder.skills(skills)
        runtime = (builder.mcp(servers) if servers else builder).hooks(hooks).build()
        if main is not None:
            take_tools(runtime, main)
        if spec.fallback_models:
            runtime.provider = with_fallback(runtime.provider, spec.fallback_models, settings)
        binding = None
        if not settings.no_session:
            binding = bind_session(spec.loaded, spec.session_id, spec.mode, spec.title, spec.resumed, spec.lock,
                                   runtime)
            sink.sinks.insert(0, binding.writer)
            open_inbox(runtime, binding)
            if not settings.no_checkpoints:
                runtime.enable_checkpoints(spec.loaded.home, prepared=prepared)
        keep_mcp_flags(runtime, servers)  # (into the bound session's state)
        keep_agents_flags(runtime, spec.agents)
        keep_skill_flags(runtime, settings)
        if settings.otel:  # (the SDK is imported only then)
            from ..features.telemetry import attach_telemetry

            attach_telemetry(runtime, settings, spec.mode)
        runtime.next_images = spec.images
        if spec.worktree is not None and spec.resumed is None:
            from ..features.worktrees import WorktreeState

            runtime.state.put(WorktreeState, spec.worktree)  # (resume finds it in meta.json)
    except (ConfigError, SessionError) as exc:
        raise CliError(str(exc), EXIT_USAGE if isinstance(exc, (BadValueError, SandboxUnavailableError))
                       else EXIT_ERROR) from None
    return runtime, binding


def open_inbox(runtime: AgentRuntime, binding: SessionBinding) -> None:
    """Messages `recursive queue` leaves in the session folder reach the runtime between turns."""
    from ..features.sessions.inbox import SessionInbox

    inbox = SessionInbox(binding.writer.folder, runtime.emit)
    inbox.recover()  # (what a killed process had claimed: delivered, or waiting again)
    runtime.inbox = inbox
    runtime.add_event_sink(inbox)


def _run(spec: Launch, runtime: AgentRuntime, binding: SessionBinding | None, work: Work) -> int:
    settings = spec.loaded.settings
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


def _write_last_message(output: OutputRequest, result: RunFinished) -> int:
    """The exit code once --output-last-message is written (1 if that failed on a success)."""
    from ..sinks.answer import answer_text

    problem = output.write_last_message(answer_text(result))
    if problem:
        fail(problem)
        return result.exit_code or EXIT_ERROR
    return result.exit_code


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
        model_usage=runtime.budget.by_model, worktree=worktree_info(runtime))

    runtime.emit(result)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):  # (kept till now: a second Ctrl-C exits at once)
        loop.remove_signal_handler(signum)
    return result


def worktree_info(runtime: AgentRuntime) -> WorktreeInfo | None:
    """The result line's `worktree`: the git worktree the session works in (-w), if it has one."""
    if "worktree" not in runtime.state:
        return None
    from ..core.event_models import WorktreeInfo
    from ..features.worktrees import WorktreeState

    try:
        part = runtime.state.get(WorktreeState)
    except SessionStateError:
        return None
    return WorktreeInfo(path=part.path, branch=part.branch) if part is not None else None


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
    loop.add_signal_handler(signal.SIGUSR1, _stop_gently, runtime)  # `recursive stop` (without --now)


def _stop_gently(runtime: AgentRuntime) -> None:
    """End at the next step boundary as if SIGTERM had come then (exit 143, resumable); at
    once when no turn is running (a loop waiting for its wakeup)."""
    if runtime.in_turn():
        sys.stderr.write("stopping at the next step boundary\n")
        runtime.interrupt_token.request(signal.SIGTERM)
    else:
        runtime.interrupt(signal.SIGTERM)
