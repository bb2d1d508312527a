"""stdout and stderr that cannot crash the CLI: a reader that went away, or text that is not UTF-8.

Python ignores SIGPIPE, so a write to a pipe whose reader has exited (`recursive run … | head
-1`) raises BrokenPipeError wherever it happens — in an event sink, in the middle of a turn.
`install` wraps both streams in a `PipeGuard` for the life of the process. On the first broken
pipe the guard points that descriptor at /dev/null, so no later write (not even the
interpreter's last flush) fails, and calls the callback registered with `on_broken_pipe`: an
agent command interrupts its run there, so the session is saved as interrupted. The process
then exits 141 (128 + SIGPIPE), the status a shell expects from a producer whose reader went
away, with nothing on stderr. Lone surrogates (undecodable bytes of a file name or argument)
are written as U+FFFD, so the output is valid UTF-8 whatever the locale's error handler. A
stream whose encoding cannot hold a character (`PYTHONIOENCODING=ascii`, a legacy locale) gets
the encoding's replacement for it (`?`) instead of a UnicodeEncodeError.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, TextIO

from ..core import utf8

EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


class PipeGuard:
    """A text stream wrapper that absorbs a broken pipe and writes only valid UTF-8."""

    def __init__(self, stream: TextIO, on_close: Callable[[], None]) -> None:
        self.stream = stream
        self.broken = False
        self._on_close = on_close

    def write(self, text: str) -> int:
        text = utf8.scrub(text)
        try:
            self._guarded(self.stream.write, text)
        except UnicodeEncodeError:  # a stream that could not be reconfigured (see `install`)
            self._guarded(self.stream.write, _representable(text, self.stream))
        return len(text)

    def flush(self) -> None:
        self._guarded(self.stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _guarded(self, action: Callable[..., object], *text: str) -> None:
        if self.broken:
            return
        try:
            action(*text)
        except BrokenPipeError:
            self.broken = True
            _point_at_devnull(self.stream)
            self._on_close()


class _Guards:
    """The process's two guards and the callback they share."""

    def __init__(self) -> None:
        self.callback: Callable[[], None] | None = None
        self.streams: list[PipeGuard] = []

    def closed(self) -> None:
        if self.callback is not None:
            callback, self.callback = self.callback, None
            callback()

    @property
    def broken(self) -> bool:
        return any(guard.broken for guard in self.streams)


_guards = _Guards()


def install() -> None:
    """Wrap sys.stdout and sys.stderr in guards (once per process)."""
    if _guards.streams:
        return
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None:
            _replace_unencodable(stream)
            guard = PipeGuard(stream, _guards.closed)
            _guards.streams.append(guard)
            setattr(sys, name, guard)


def on_broken_pipe(callback: Callable[[], None]) -> None:
    """Call `callback` once when a guarded stream's reader goes away (a no-op without `install`)."""
    _guards.callback = callback


def pipe_broken() -> bool:
    """Whether a guarded stream's reader went away."""
    return _guards.broken


def _replace_unencodable(stream: TextIO) -> None:
    """Make a stream whose encoding is not UTF-8 write `?` for what it cannot encode."""
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
    reconfigure = getattr(stream, "reconfigure", None)
    if encoding in ("utf-8", "utf8") or reconfigure is None:
        return
    with contextlib.suppress(OSError, ValueError, TypeError):
        if getattr(stream, "errors", "strict") == "strict":
            reconfigure(errors="replace")


def _representable(text: str, stream: TextIO) -> str:
    """`text` with what `stream`'s encoding cannot hold replaced (by `?`)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, "replace").decode(encoding, "replace")
    except LookupError:
        return text.encode("ascii", "replace").decode("ascii")


def _point_at_devnull(stream: TextIO) -> None:
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


def on_terminal() -> bool:
    """Whether a person is at this process's terminal: stdin and stdout are both TTYs."""
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False
