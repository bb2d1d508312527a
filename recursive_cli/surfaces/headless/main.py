"""Run one headless command line: flags → run → server → exit code."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING

from ...core.errors import BadValueError, SandboxUnavailableError
from ...core.settings import ConfigError
from ...features.sessions.records import SessionError
from ...launch import stdio
from ...launch.errors import EXIT_USAGE, fail
from .flags import HELP, UsageError, parse_flags

if TYPE_CHECKING:
    from .server import HeadlessServer

EXIT_ERROR = 1


def run_headless(argv: list[str]) -> int:
    """The exit code of a headless command line (2 for usage errors, 1 for settings or sessions
    that cannot be used, else the last turn's, SPEC §4)."""
    stdio.install()
    try:
        options = parse_flags(argv)
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
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
            return fail(empty_prompt_message(), EXIT_USAGE)
    else:
        prompt = " ".join(options.prompt_words).strip()
    from .build import assemble

    try:
        run = assemble(options)
    except (UsageError, BadValueError, SandboxUnavailableError) as exc:  # a bad value, wherever it was set: exit 2
        return fail(str(exc), EXIT_USAGE)
    except (ConfigError, SessionError) as exc:
        return fail(str(exc), EXIT_ERROR)
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


async def _serve(server: HeadlessServer, prompt: str, *, streaming: bool) -> int:
    try:
        if streaming:
            return await server.serve_stream(prompt)
        return await server.serve_prompt(prompt)
    finally:
        await server.runtime.aclose()
        for provider in server.retired:
            await provider.aclose()
