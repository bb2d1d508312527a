"""Our own HTTP client for the two model APIs, on httpx2: one POST of a body we encoded, answered
as one JSON document or as a stream of server-sent events.

It does what the official SDK clients did for the providers, in the same way (the SDKs stay
as the tests' oracle, tests/providers): the base URL joined with the endpoint's path, the
same `Accept`/`Content-Type` headers and credential header, redirects followed, one timeout
for connect, read, write and pool, a keep-alive pool; an answer of status 400 or more is
read whole and raised as `HttpStatusError` with its body (JSON when it parses, else its
text); a whole answer whose content type is not JSON is handed back as its text. Transport
failures are httpx2's own exceptions (`httpx2.TimeoutException`, `httpx2.HTTPError`),
mapped to one-line errors by `http_base.py`. No retries here: `retry.py` decides.

Without an API key no credential header is sent at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import sys
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urlsplit

import httpx2

from .sse import Event, SseDecoder

# The SDKs' pool: this many connections, this many kept alive.
MAX_CONNECTIONS = 1000
MAX_KEEPALIVE = 100
# With one of these set, a plain-http request may still go through a TLS proxy.
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
# How long the rest of a stream is read, after its last event mattered, to keep the connection.
DRAIN_SECONDS = 0.1
USER_AGENT = "recursive-cli"


class HttpStatusError(Exception):
    """An answer with status 400 or more; `body` is its JSON (or its text, stripped), `text` the text."""

    def __init__(self, status: int, headers: httpx2.Headers, body: object, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}" if text else f"HTTP {status}")
        self.status = status
        self.headers = headers
        self.body = body
        self.text = text


class ApiClient:
    """POSTs to one base URL with fixed headers; `aclose` when done."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float) -> None:
        self.base_url = _with_trailing_slash(httpx2.URL(base_url))
        self._http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout), follow_redirects=True,
                                        limits=httpx2.Limits(max_connections=MAX_CONNECTIONS,
                                                             max_keepalive_connections=MAX_KEEPALIVE),
                                        verify=tls_context(base_url))

    def url(self, path: str) -> httpx2.URL:
        """`path` under the base URL, as the SDKs join them (`…/v1/` + `chat/completions`)."""
        return self.base_url.copy_with(raw_path=self.base_url.raw_path + path.lstrip("/").encode("ascii"))

    async def post_json(self, url: httpx2.URL, body: bytes) -> object:
        """The parsed JSON answer (or its text, when it says it is not JSON)."""
        response = await self._http.post(url, content=body)
        if response.status_code >= 400:
            raise status_error(response)
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if not content_type.endswith("json"):
            return response.text
        return response.json()

    @contextlib.asynccontextmanager
    async def post_events(self, url: httpx2.URL, body: bytes) -> AsyncIterator[EventStream]:
        """The answer's events, read as they arrive; the response is closed on leaving."""
        response = await self._http.send(self._http.build_request("POST", url, content=body), stream=True)
        try:
            if response.status_code >= 400:
                await response.aread()
                raise status_error(response)
            yield EventStream(response)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()


class EventStream:
    """The server-sent events of one streamed answer, an async iterator of `(event, data)`."""

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response
        self._chunks = response.aiter_bytes()
        self._decoder = SseDecoder()
        self._ready: list[Event] = []
        self._next = 0

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        while self._next == len(self._ready):
            chunk = await self._chunks.__anext__()  # StopAsyncIteration at the end of the body
            self._ready, self._next = self._decoder.feed(chunk), 0
        event = self._ready[self._next]
        self._next += 1
        return event

    async def drain(self) -> None:
        """Read what is left of the body for a moment, so that an HTTP/1.1 connection can be
        used again; a failure here is none (the answer is whole already)."""
        if self.response.is_closed or self.response.http_version != "HTTP/1.1":
            return
        with contextlib.suppress(httpx2.HTTPError, httpx2.StreamError, asyncio.TimeoutError):
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(DRAIN_SECONDS):  # (no task, unlike wait_for)
                    await self._read_rest()
            else:  # pragma: no cover
                await asyncio.wait_for(self._read_rest(), DRAIN_SECONDS)

    async def _read_rest(self) -> None:
        async for _ in self._chunks:
            pass


def status_error(response: httpx2.Response) -> HttpStatusError:
    """The error for an answer read whole with status 400 or more."""
    text = response.text.strip()
    body: object = text
    with contextlib.suppress(ValueError):
        body = json.loads(text)
    return HttpStatusError(response.status_code, response.headers, body, text)


def tls_context(base_url: str) -> ssl.SSLContext | bool:
    """For a plain-http base URL (a local server) and no proxy: a TLS context that loads no CA
    certificates, since no request will use TLS (loading the system's costs 20–25 ms of
    start-up); a redirect to https then fails to verify, never connects unverified. True (the
    usual verification) otherwise."""
    if urlsplit(base_url).scheme.lower() != "http" or any(map(os.environ.get, PROXY_VARIABLES)):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _with_trailing_slash(url: httpx2.URL) -> httpx2.URL:
    return url if url.raw_path.endswith(b"/") else url.copy_with(raw_path=url.raw_path + b"/")

