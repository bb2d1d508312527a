"""Server-sent events: the `text/event-stream` framing both streaming APIs answer in.

`SseDecoder` is fed the body's bytes as they arrive, in pieces of any size, and returns the
events completed so far as `(event, data)`: the `event:` field (None when the event had
none) and its `data:` lines joined by newlines. Lines end with LF, CR or CRLF (a CRLF split
between two pieces is one line end); a line starting with `:` is a comment; an event is
dispatched by an empty line, and one the body ends before that is dropped, as the
specification says. `id:` and `retry:` are not reported (neither API uses them), but they
decide, as in the SDKs' decoders, whether an empty line dispatches an event: the last event
id is kept from event to event. Each line is decoded as strict UTF-8 (a `UnicodeDecodeError`
is a malformed response).

A line, or the data of one event, longer than `caps.LINE_CAP` is a `StreamTooLongError`: a
peer that never ends its line cannot fill our memory (the model APIs and MCP over HTTP alike).
"""

from __future__ import annotations

import contextlib
import re

from ..core.errors import StreamTooLongError
from .caps import LINE_CAP, mib

Event = tuple[str | None, str]

_LINE_END = re.compile(rb"\r\n|\r|\n")


class SseDecoder:
    """Turns the bytes of an event stream into events, piece by piece."""

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the pieces of a line whose end has not arrived
        self._held = 0  # their bytes
        self._size = 0  # characters of the current event's data
        self._event: str | None = None
        self._data: list[str] = []
        self._retry: int | None = None
        self._last_id = ""  # never reset between events (the specification's "last event ID")
        self._cr = False  # the last piece ended with CR: an LF opening the next one ends no line

    def feed(self, chunk: bytes) -> list[Event]:
        """The events that `chunk` completes."""
        if self._cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._cr = False
        if not self._pending and not (self._event or self._data or self._last_id or self._retry is not None):
            chunk = chunk.lstrip(b"\r\n")  # blank lines with no event to end: nothing (a run of them is cheap)
        if not chunk:
            return []
        self._cr = chunk[-1:] == b"\r"
        if b"\n" not in chunk and b"\r" not in chunk:
            self._held += len(chunk)
            if self._held > LINE_CAP:
                raise StreamTooLongError(f"a line of the event stream is over {mib(LINE_CAP)}")
            self._pending.append(chunk)  # (joined once its line ends: a long line stays linear)
            return []
        text = b"".join((*self._pending, chunk)) if self._pending else chunk
        if b"\r" in text:
            lines = _LINE_END.split(text)
        else:
            lines = text.split(b"\n")
        rest = lines.pop()  # after the last line end: b"" or an unfinished line
        if len(text) > LINE_CAP and max(len(rest), *map(len, lines)) > LINE_CAP:
            raise StreamTooLongError(f"a line of the event stream is over {mib(LINE_CAP)}")
        self._pending, self._held = ([rest], len(rest)) if rest else ([], 0)
        events: list[Event] = []
        for line in lines:
            if line:
                self._field(line.decode("utf-8"))
            elif self._event or self._data or self._last_id or self._retry is not None:
                events.append((self._event, "\n".join(self._data)))
                self._event, self._data, self._retry, self._size = None, [], None, 0
        return events

    def _field(self, line: str) -> None:
        if line[0] == ":":
            return  # a comment (a keep-alive, often)
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._size += len(value)
            if self._size > LINE_CAP:
                raise StreamTooLongError(f"an event of the event stream is over {mib(LINE_CAP)}")
            self._data.append(value)
        elif name == "event":
            self._event = value or None
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry":
            with contextlib.suppress(ValueError):
                self._retry = int(value)
