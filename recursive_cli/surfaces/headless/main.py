"""Run one headless command line: flags → run → server → exit code."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING

from ...core.errors import BadValueError, CliError, ResumePointError, SandboxUnavailableError
from ...core.settings import ConfigError
from ...features.sessions.records import SessionError
from ...launch import stdio
from ...launch.errors import EXIT_ERROR, fail
from .flags import HELP, HeadlessOptions, UsageError, parse_flags

if TYPE_CHECKING:
    from .build import HeadlessRun
    from .server import HeadlessServer



def run_headless(argv: list[str]) -> int:
    """The exit code of a headless command line (2 for usage errors, 1 for settings or sessions
    that cannot be used, else the last turn's, SPEC §4): the top of the headless process,
    where a CliError raised below it is reported."""
    stdio.install()
    try:
        return _headless(argv)
    except CliError as exc:  # (UsageError: 2)
        return fail(str(exc), exc.code)


def _headless(argv: list[str]) -> int:
    options = parse_flags(argv)
    if options.help:
        sys.stdout.write(HELP)
        return 0
    if options.ignored and options.debug:
        sys.stderr.write(f"note: these flags change nothing here: {', '.join(sorted(set(options.ignored)))}\n")
    prompt = ""
    if not options.streaming_input:
        from ...launch.prompt_input import empty_prompt_message, read_prompt

        prompt = read_prompt(options.prompt_words)
        if not prompt:
            raise UsageError(empty_prompt_message())
    else:
        prompt = " ".join(options.prompt_words).strip()
    from .build import assemble

    try:
        run = assemble(options)
    except (BadValueError, SandboxUnavailableError) as exc:  # a bad value, wherever it was set: exit 2
        raise UsageError(str(exc)) from None
    except ResumePointError as exc:  # also a result line, as Claude Code writes it (the SDKs raise it)
        _refused(options, str(exc))
        raise CliError(str(exc), EXIT_ERROR) from None
    except (ConfigError, SessionError) as exc:
        raise CliError(str(exc), EXIT_ERROR) from None
    if options.bg:
        _detach(run, options.streaming_input)  # returns in the detached process only
    if run.loaded.settings.verbose:
        from ...core.diagnostics import enable_verbose

        enable_verbose(sys.stderr)
    from .server import HeadlessServer

    server = HeadlessServer(run)
    stdio.on_broken_pipe(lambda: server.stop(signal.SIGPIPE))  # the client went away: 141
    try:
        return asyncio.run(_serve(server, prompt, streaming=options.streaming_input))
    finally:
        run.close()


def _refused(options: HeadlessOptions, message: str) -> None:
    """The result line of a run refused before it started (`-o json` or `stream-json`)."""
    if options.output_format == "text":
        return
    from ...core.events import FinishReason
    from ...core.messages import Usage
    from ...sinks.claude_stream import ClaudeStreamSink, TurnResult

    sink = ClaudeStreamSink(sys.stdout, options.resume or "", stream=False)
    sink.write_result(TurnResult(subtype="error_during_execution", is_error=True, result="",
                                 finish_reason=FinishReason.INTERNAL_ERROR.value, num_turns=0, duration_ms=0,
                                 usage=Usage(), total_cost_usd=0, errors=[message]))


def _detach(run: HeadlessRun, streaming: bool) -> None:
    """`-p --bg`: go on in a detached process (launch/detach.py), queued messages taken
    between turns; UsageError without a prompt to run or a session to follow."""
    from ...launch.detach import Detachment, events_sink
    from ...launch.run import open_inbox

    binding = run.binding
    if streaming or binding is None:
        run.close()
        raise UsageError("--bg runs a prompt in a session: it cannot be used with "
                         + ("--input-format stream-json" if streaming else "--no-session"))
    folder = binding.writer.folder
    detached = Detachment(folder)
    run.runtime.add_event_sink(events_sink(folder, run.runtime.session_id, run.loaded.settings.prices))
    open_inbox(run.runtime, binding)
    detached.fork(run.runtime.session_id, binding.lock)


async def _serve(server: HeadlessServer, prompt: str, *, streaming: bool) -> int:
    try:
        if streaming:
            return await server.serve_stream(prompt)
        return await server.serve_prompt(prompt)
    finally:
        await server.runtime.aclose()
        for provider in server.retired:
            await provider.aclose()
