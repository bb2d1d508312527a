"""What the model APIs and MCP over HTTP ask of the transport (http1.py): one request of a body
we encoded, answered as one JSON document or as a stream of server-sent events.

It does what the official SDK clients did for the providers, in the same way (the SDKs stay
as the tests' oracle, tests/providers): the base URL joined with the endpoint's path, the
same `Accept`/`Content-Type` headers and credential header, redirects followed (as
`http1.Hop` allows: never to plain http from https, no credential to another origin), one
timeout for connect, read, write and pool, a keep-alive pool; an answer of status 400 or more is
read whole and raised as `HttpStatusError` with its body (JSON when it parses, else its
text); a whole answer whose content type is not JSON is handed back as its text. Transport
failures are `TransportError`s (`RequestTimeout`, `ConnectError`, `InvalidURL`…),
chained to their cause and mapped to one-line errors by providers/http_base.py. No retries
here: providers/retry.py decides. A proxy the environment names changes none of it: the
transport goes through it (proxy.py).

Without an API key no credential header is sent at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Mapping
from typing import Protocol

from ..core.errors import HttpStatusError, RequestTimeout, StreamTooLongError, TooLarge, TransportError
from . import http1
from .sse import Event, SseDecoder

__all__ = ["Answer", "ApiClient", "EventStream", "HttpStatusError", "Sender", "parse_json", "sender", "status_error"]

# The SDKs' pool: this many connections kept alive.
MAX_KEEPALIVE = 100
# The variables that name a proxy (proxy.py reads them, NO_PROXY too).
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
# How long the rest of a stream is read, after its last event mattered, to keep the connection.
DRAIN_SECONDS = 0.1
USER_AGENT = "recursive-cli"


class Answer(Protocol):
    """What the transport hands back: an answer whose head has been read."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def http_version(self) -> str: ...

    @property
    def is_closed(self) -> bool: ...

    @property
    def text(self) -> str: ...

    @property
    def content(self) -> bytes: ...

    async def aread(self) -> bytes: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class Sender(Protocol):
    async def post(self, url: str, body: bytes) -> Answer: ...

    async def request(self, method: str, url: str, body: bytes = b"",
                      headers: Mapping[str, str] | None = None, follow: bool = True) -> Answer: ...

    async def aclose(self) -> None: ...


class ApiClient:
    """POSTs to one base URL with fixed headers; `aclose` when done."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float) -> None:
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._http = sender(headers, timeout)

    def url(self, path: str) -> str:
        """`path` under the base URL, as the SDKs join them (`…/v1/` + `chat/completions`)."""
        return self.base_url + path.lstrip("/")

    async def post_json(self, url: str, body: bytes) -> object:
        """The parsed JSON answer (or its text, when it says it is not JSON)."""
        return await self._whole(await self._http.post(url, body))

    async def get_json(self, url: str) -> object:
        """The parsed JSON answer to a GET (or its text, when it says it is not JSON)."""
        return await self._whole(await self._http.request("GET", url))

    @staticmethod
    async def _whole(response: Answer) -> object:
        try:
            await response.aread()
        finally:
            await response.aclose()
        if response.status_code >= 400:
            raise status_error(response)
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if not content_type.endswith("json"):
            return response.text
        return parse_json(response.content)

    @contextlib.asynccontextmanager
    async def post_events(self, url: str, body: bytes, idle: float | None = None) -> AsyncIterator[EventStream]:
        """The answer's events, read as they arrive (`idle`: see EventStream); the response is
        closed on leaving."""
        response = await self._http.post(url, body)
        try:
            if response.status_code >= 400:
                await response.aread()
                raise status_error(response)
            yield EventStream(response, idle)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()


class EventStream:
    """The server-sent events of one streamed answer, an async iterator of `(event, data)`.

    With `idle`, RequestTimeout once that many seconds pass without an event: bytes that
    make none (keep-alive comments, blank lines) do not keep a stream alive. A line or an
    event over caps.LINE_CAP is TooLarge, and the response is closed.
    """

    def __init__(self, response: Answer, idle: float | None = None) -> None:
        self.response = response
        self._chunks = response.aiter_bytes()
        self._decoder = SseDecoder()
        self._ready: list[Event] = []
        self._next = 0
        self._idle = idle
        self._heard = time.monotonic()  # when the last event (or the head) came

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        while self._next == len(self._ready):
            chunk = await self._chunks.__anext__()  # StopAsyncIteration at the end of the body
            try:
                self._ready, self._next = self._decoder.feed(chunk), 0
            except StreamTooLongError as exc:
                await self.response.aclose()
                raise TooLarge(str(exc)) from None
            if self._idle is not None:
                self._check_idle()
        event = self._ready[self._next]
        self._next += 1
        return event

    def _check_idle(self) -> None:
        now = time.monotonic()
        if self._ready:
            self._heard = now
        elif self._idle is not None and now - self._heard > self._idle:
            raise RequestTimeout(f"timed out after {self._idle:g} s without an event (only keep-alives)")

    async def drain(self) -> None:
        """Read what is left of the body for a moment, so that an HTTP/1.1 connection can be
        used again; a failure here is none (the answer is whole already)."""
        if self.response.is_closed or self.response.http_version != "HTTP/1.1":
            return
        with contextlib.suppress(TransportError, asyncio.TimeoutError):
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(DRAIN_SECONDS):  # (no task, unlike wait_for)
                    await self._read_rest()
            else:  # pragma: no cover
                await asyncio.wait_for(self._read_rest(), DRAIN_SECONDS)

    async def _read_rest(self) -> None:
        async for _ in self._chunks:
            pass


def status_error(response: Answer) -> HttpStatusError:
    """The error for an answer read whole with status 400 or more."""
    text = response.text.strip()
    body: object = text
    with contextlib.suppress(ValueError):
        body = parse_json(text)
    return HttpStatusError(response.status_code, response.headers, body, text)


def parse_json(data: bytes | str) -> object:
    """`data` parsed as JSON; json.JSONDecodeError also for JSON too deep or a number too long
    to hold (which `json.loads` reports as RecursionError or a plain ValueError)."""
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except (ValueError, RecursionError) as exc:
        raise json.JSONDecodeError(" ".join(str(exc).split())[:200] or type(exc).__name__, "", 0) from None


def sender(headers: Mapping[str, str], timeout: float) -> Sender:
    """A client sending with `headers` (TLS set up on first use; the environment's proxies)."""
    return http1.Client(headers, timeout, keep=MAX_KEEPALIVE)
