"""The terminal while a turn runs: keys read one by one (not echoed: the status line shows the
line being typed), each line sent with Enter queued for after the turn, and the y/n/a answer
of a permission question. Ctrl-C stays a signal (the session's handler decides what it does);
Esc alone (a read of just that key, not the start of an arrow key's sequence) goes to
`on_escape`, which stops the turn as Ctrl-C does.

A line that arrives in one read with more after its newline is a paste: it stays one
message, newlines kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import termios
from collections.abc import Callable, Iterator
from typing import TextIO

_ENTER = ("\r", "\n")
_ERASE = ("\x7f", "\b")
_KILL_LINE = "\x15"  # Ctrl-U
_ESCAPE = "\x1b"
_ESCAPE_SEQUENCE_END = tuple(chr(c) for c in range(0x40, 0x7F))


class TypeAhead:
    """Collects what is typed on terminal `fd` during a turn; `on_line(text)` gets each line."""

    def __init__(self, fd: int, on_line: Callable[[str], None], on_change: Callable[[], None],
                 on_escape: Callable[[], None] = lambda: None) -> None:
        self.fd = fd
        self.text = ""  # the line being typed
        self._on_line = on_line
        self._on_change = on_change
        self._on_escape = on_escape
        self._answer: asyncio.Future[str] | None = None
        self._choices = ""
        self._on_end = ""
        self._escape = ""  # an escape sequence being skipped (arrow keys and the like)

    @contextlib.contextmanager
    def capturing(self) -> Iterator[None]:
        """Keys one by one and no echo for the block; the terminal as it was afterwards."""
        loop = asyncio.get_running_loop()
        saved = None
        with contextlib.suppress(termios.error, OSError):
            saved = termios.tcgetattr(self.fd)
            attrs = termios.tcgetattr(self.fd)
            attrs[3] &= ~(termios.ICANON | termios.ECHO)  # (ISIG kept: Ctrl-C is SIGINT)
            attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 1, 0
            termios.tcsetattr(self.fd, termios.TCSANOW, attrs)  # (TCSANOW: keys typed already stay)
        loop.add_reader(self.fd, self._readable)
        try:
            yield
        finally:
            loop.remove_reader(self.fd)
            if saved is not None:
                with contextlib.suppress(termios.error, OSError):
                    termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def take_text(self) -> str:
        """The unfinished line, removed (it goes back into the input line)."""
        text, self.text = self.text, ""
        return text

    async def answer(self, question: str, out: TextIO, choices: str, on_end: str) -> str:
        """`question` written to `out`, then the next key among `choices` (lower case). Keys typed
        before the question appeared are dropped, so they cannot answer it unseen; a key typed as
        soon as it shows is kept. Ctrl-D or the end of input answers `on_end`."""
        with contextlib.suppress(termios.error, OSError):
            termios.tcflush(self.fd, termios.TCIFLUSH)
        self._choices, self._on_end = choices, on_end
        self._answer = asyncio.get_running_loop().create_future()
        out.write(question)
        out.flush()
        try:
            return await self._answer
        finally:
            self._answer = None

    def _readable(self) -> None:
        try:
            if not select.select([self.fd], [], [], 0)[0]:
                return  # (woken for keys a question has dropped since: a read would block the loop)
            data = os.read(self.fd, 4096)
        except (OSError, ValueError):
            data = b""
        if not data:  # the terminal went away: stop listening, answer "no"
            asyncio.get_running_loop().remove_reader(self.fd)
            self._answered("\x04")
            return
        self.feed(data.decode("utf-8", errors="replace"))

    def feed(self, data: str) -> None:
        """Take keys as they came in one read."""
        if data == _ESCAPE and not self._escape and (self._answer is None or _ESCAPE not in self._choices):
            self._on_escape()
            return
        if self._answer is not None:
            self._answered(data)
            return
        for index, char in enumerate(data):
            if self._escape or char == "\x1b":
                self._skip_escape(char)
            elif char in _ENTER:
                pasted = index + 1 < len(data) and data[index + 1:].strip("\r\n") != ""
                if pasted:
                    self.text += "\n"
                elif self.text.strip():
                    self._on_line(self.take_text())
            elif char in _ERASE:
                self.text = self.text[:-1]
            elif char == _KILL_LINE:
                self.text = ""
            elif char >= " " or char == "\t":
                self.text += char
        self._on_change()

    def _skip_escape(self, char: str) -> None:
        self._escape += char
        if len(self._escape) == 2 and char not in "[O":  # Alt+key: two characters
            self._escape = ""
        elif len(self._escape) > 2 and char in _ESCAPE_SEQUENCE_END:
            self._escape = ""

    def _answered(self, data: str) -> None:
        future = self._answer
        if future is None or future.done():
            return
        for char in data.lower():
            if char in self._choices:
                future.set_result(char)
                return
            if char == "\x04":
                future.set_result(self._on_end)
                return
