"""`--permission-mode ask` on a terminal: `[y]es / [n]o / [a]lways for this tool` on stderr.

While the question is up, the spinner and any streaming text are off the screen (they would
redraw over the question and over the answer the terminal echoes as it is typed). The
question is plain text, never rich markup: a path or command holding `[...]` shows as it is.
Keys typed before the question appeared are dropped, so they cannot answer it unseen.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

from ..features.permissions import AskHook, PermissionPolicy


def terminal_ask_hook(policy: PermissionPolicy) -> AskHook | None:
    """A hook that asks on the terminal, or None when stdin or stderr is not a TTY (headless)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def ask(tool: str, subject: str) -> bool:
        from ..sinks.live import progress_paused
        from ..sinks.terminal import printable

        question = printable(f"Allow {tool} {subject}?") + " [y]es / [n]o / [a]lways for this tool: "
        with progress_paused():
            _drop_typed_ahead()
            while True:
                sys.stderr.write(question)
                sys.stderr.flush()
                line = await _read_line()
                if not line:  # end of input (Ctrl-D): no, and the next output on a line of its own
                    sys.stderr.write("\n")
                    return False
                answer = line.strip().lower()[:1]
                if answer == "a":
                    policy.remember(tool)
                    return True
                if answer in ("y", "n"):
                    return answer == "y"

    return ask


async def _read_line() -> str:
    """One line typed on stdin, waited for in the event loop so that Ctrl-C can cancel the wait
    (a thread blocked in readline would keep the process alive until Enter)."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    ready: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await ready
    except asyncio.CancelledError:
        sys.stderr.write("\n")
        raise
    finally:
        loop.remove_reader(fd)
    return os.read(fd, 4096).decode("utf-8", errors="replace")  # a terminal gives one line per read


def _drop_typed_ahead() -> None:
    import termios

    with contextlib.suppress(OSError, termios.error):
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
