"""The one HTTP/1.1 transport of the package: the model APIs, MCP over HTTP and `web_fetch`
all send through `Client` here, with or without a proxy.

The framing is h11's (request heads and bodies written, answers parsed, chunked bodies,
whether a connection may carry the next request); h11 is a pure state machine that does
no I/O, so it runs under our own asyncio protocol and `ssl`, not under an I/O stack of
its own. Why not httpx2 (which is h11 too, under httpcore2 and anyio): a one-step run paid
≈ 70 ms of its start-up and ≈ 0.1 ms per request in layers a model call does not use
(cookies, `email`, `urllib.request`, anyio's task groups; bench/README.md, issue 16), and
two transports (ours, httpx2 behind a proxy) meant two behaviours for one request. h11 itself
costs ≈ 5 ms to import (beyond the `dataclasses` everything loads) and ≈ 30 µs per request
(bench/provider_step.py: within the 0.5 ms per step of the raw floor).

What is ours, above the framing: the connections (one idle connection per origin reused
while the server keeps it; one the server closed while it sat idle is not used again; one
that breaks under a request is an error for `providers/retry.py`), one timeout for
connecting and for each wait on the socket, the head of an answer within the timeout, 1xx
answers included; `gzip`/`deflate` decoded a step at a time (and asked for); redirects
(`Hop.redirected`: never from https to http, no credential to another origin); the cap on a
body read whole (caps.LINE_CAP, `TooLarge`); TLS verified against the system's certificates
(`SSL_CERT_FILE` / `SSL_CERT_DIR` first, the OS's store through `truststore` on macOS and
Windows); proxies (`proxy.py`: plain http in absolute form, https through a CONNECT tunnel,
then TLS to the origin over it).

A header name or value holding CR, LF or NUL is refused before a byte is sent
(`HeaderRefused`): "X-A: 1\\r\\nX-Injected: 1" would be two headers on the wire.

Failures are `TransportError`s (core/errors.py), chained to their cause (`socket.gaierror`,
`ConnectionRefusedError`, an `ssl.SSLError`) so that callers can look through them.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import socket
import ssl
import sys
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, NamedTuple
from urllib.parse import urljoin, urlsplit

import h11

from ..core.errors import (
    ConnectError,
    CutShort,
    HeaderRefused,
    HttpProtocolError,
    InvalidURL,
    RedirectRefused,
    RequestTimeout,
    TooLarge,
    TransportError,
)
from .caps import LINE_CAP, mib
from .headers import refused_header
from .proxy import Proxies, Proxy

__all__ = ["Client", "ConnectError", "CutShort", "HeaderRefused", "Headers", "Hop", "HttpProtocolError",
           "InvalidURL", "RedirectRefused", "RequestTimeout", "Response", "TooLarge", "TransportError"]

MAX_HEAD = 64 * 1024  # status line and headers of one answer
MAX_REDIRECTS = 20
JOIN_BELOW = 64 * 1024  # a request body shorter than this goes out in one piece with its head
PAUSE_ABOVE = 4 * 1024 * 1024  # unread bytes at which reading from the socket is paused
INFLATE_STEP = 256 * 1024  # decoded bytes of gzip or deflate content made at once
# The only headers a redirect to another origin carries: the protocol's, never a credential.
ACROSS_ORIGINS = frozenset({"accept", "content-type", "user-agent", "anthropic-version", "mcp-protocol-version"})
ACCEPT_ENCODING = "gzip, deflate"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CA_FILES = ("/etc/ssl/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/tls/cert.pem",
            "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/ca-bundle.pem")


class Hop(NamedTuple):
    """One request of a chain of redirects."""

    method: str
    url: str
    body: bytes
    headers: Mapping[str, str]

    def redirected(self, status: int, location: str) -> Hop:
        """The request a redirect (`status`, `location`) asks for next.

        As httpx2 does: 303 (and 301/302 after a POST) become a GET without a body; 307 and 308
        keep both. Beyond it: a redirect from https to http is refused (the request, our key
        with it, would go unencrypted), and a request to another origin (scheme, host, port)
        carries only the headers of the protocol (ACROSS_ORIGINS), none that might be a
        credential: no key, token or cookie, nor any header the user configured.
        """
        target = urljoin(self.url, location)
        try:
            there = Origin(target)
        except InvalidURL as exc:
            raise RedirectRefused(f"not following the redirect from {self.url}: {exc}") from None
        here = Origin(self.url)
        if here.scheme == "https" and there.scheme == "http":
            raise RedirectRefused(f"refused the redirect from {self.url} to {target}: it would send the request "
                                  "unencrypted (https to http)")
        method, body, headers = self.method, self.body, self.headers
        if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
            method, body = "GET", b""
            headers = {name: value for name, value in headers.items() if name.lower() != "content-type"}
        if there.key != here.key:
            headers = {name: value for name, value in headers.items() if name.lower() in ACROSS_ORIGINS}
        return Hop(method, target, body, headers)


class Headers(Mapping[str, str]):
    """An answer's headers in their order; looked up by name in any case, repeated names
    joined with ", " (as httpx2 joins them)."""

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        self.items_list = list(items)
        self._joined: dict[str, str] | None = None

    def _map(self) -> dict[str, str]:
        if self._joined is None:
            joined: dict[str, str] = {}
            for name, value in self.items_list:
                key = name.lower()
                joined[key] = f"{joined[key]}, {value}" if key in joined else value
            self._joined = joined
        return self._joined

    def __getitem__(self, name: str) -> str:
        return self._map()[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._map()

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())

    def __repr__(self) -> str:
        return f"Headers({self.items_list!r})"


def default_tls_context() -> ssl.SSLContext:
    """What httpx2 verifies against: `SSL_CERT_FILE`, else `SSL_CERT_DIR`, else the system's
    store (on Linux OpenSSL's compiled-in paths, else the usual bundle files; elsewhere the
    OS's own trust store through `truststore`, as httpx2 does)."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    if sys.platform in ("win32", "darwin"):  # pragma: no cover (not this platform)
        import truststore  # (a dependency there: pyproject.toml)
        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) and not cafile else None
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, CA_FILES), None)
    if cafile or capath:
        context.load_verify_locations(cafile, capath)
    return context


class Origin:
    """Where a URL's requests go: scheme, host, port; and the request target of the URL."""

    __slots__ = ("scheme", "host", "port", "target", "host_header")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise InvalidURL(f"unsupported scheme {scheme!r} in {url!r}: only http and https")
        try:
            host, port = parts.hostname, parts.port
        except ValueError as exc:
            raise InvalidURL(f"invalid port in {url!r}") from exc
        if not host:
            raise InvalidURL(f"no host in {url!r}")
        self.scheme, self.host = scheme, host
        self.port = port or (443 if scheme == "https" else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        name = f"[{host}]" if ":" in host else host
        self.host_header = name if port is None else f"{name}:{port}"

    @property
    def key(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host_header}{self.target}"


@functools.lru_cache(maxsize=64)
def origin_of(url: str) -> Origin:
    """`Origin(url)`, parsed once per URL (a provider posts to the same one at every step;
    nothing changes an Origin once made)."""
    return Origin(url)


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection: what arrived and not yet read, a wake-up for the reader, and
    the h11 state machine that frames what goes over it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False  # the server closed its side (or the connection is gone)
        self.error: BaseException | None = None
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self.absolute = False  # requests name the whole URL (plain http through a proxy)
        self.first = b""  # the first bytes of the current answer (for the words of an error)
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._paused = False

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > PAUSE_ABOVE and self.transport is not None and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # -- used by the client -------------------------------------------------------------------

    @property
    def reusable(self) -> bool:
        return not self.ended and not self.buffer and self.transport is not None \
            and not self.transport.is_closing() and self.h11.our_state is h11.IDLE

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    async def drain(self, timeout: float) -> None:
        """Wait while the socket's send buffer is full (a large body to a slow reader)."""
        while self._writable is not None and not self.ended:
            await _within(self._writable, timeout, "sending the request")

    async def event(self, timeout: float, until: float | None = None) -> h11.Event:
        """The next h11 event of the answer, feeding it what arrived; each wait for bytes at
        most `timeout` seconds and never past `until` (a `loop.time()`)."""
        machine = self.h11
        while True:
            try:
                event = machine.next_event()
            except h11.RemoteProtocolError as exc:
                raise _protocol_error(str(exc), self.first, self.ended) from None
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]
            if self.buffer:
                data = bytes(self.buffer)
                self.buffer.clear()
                if not self.first:
                    self.first = data
                machine.receive_data(data)
            elif self.ended:
                machine.receive_data(b"")
            else:
                await self._more(timeout, until)

    async def _more(self, timeout: float, until: float | None) -> None:
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        wait = timeout if until is None else max(0.0, min(timeout, until - self.loop.time()))
        waiter = self._waiter = self.loop.create_future()
        try:
            await _within(waiter, wait, "waiting for the answer", timeout)
        finally:
            self._waiter = None

    def close(self) -> None:
        self.ended = True
        self.buffer.clear()  # (what a broken answer left here goes now, not with the last reference)
        if self.transport is not None:
            self.transport.close()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


_RECEIVED = re.compile(r"received (\d+) bytes, expected (\d+)")
_QUOTED = re.compile(r"b'([^']*)'")
_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*([^\r\n]*)")


def _protocol_error(text: str, first: bytes, ended: bool) -> HttpProtocolError:
    """Ours, in our words, for h11's RemoteProtocolError `text` (`first`: the first bytes of the
    answer; `ended`: the server has closed the connection)."""
    if "ConnectionClosed" in text and "SEND_RESPONSE" in text:
        return CutShort("the server closed the connection without answering")
    if "peer unexpectedly closed" in text:
        return CutShort("the server closed the connection in the middle of the answer's headers")
    if "incomplete chunked read" in text:
        return CutShort("the server closed the connection before the end of the answer (a chunked body without "
                        "its last chunk)")
    if received := _RECEIVED.search(text):
        missing = int(received.group(2)) - int(received.group(1))
        return CutShort(f"the server closed the connection before the end of the answer ({missing} bytes of it "
                        "missing)")
    if ended and "peer closed" in text:
        return CutShort(f"the server closed the connection before the end of the answer ({text})")
    if text.startswith("illegal status line"):
        line = first.split(b"\r\n", 1)[0].split(b"\n", 1)[0].decode("latin-1")
        return HttpProtocolError(f"not an HTTP/1.1 answer: {line[:80]!r}")
    if text == "bad Content-Length":
        value = _LENGTH.search(first)
        shown = value.group(1).decode("latin-1").strip() if value else "?"
        return HttpProtocolError(f"invalid Content-Length {shown[:40]!r}")
    if text.startswith("illegal chunk header"):
        size = _QUOTED.search(text)
        shown = size.group(1).removesuffix("\\r\\n").split(";")[0].strip() if size else "?"
        return HttpProtocolError(f"invalid chunk size b'{shown[:40]}'")
    if "too long" in text.lower() or "too big" in text.lower():
        return HttpProtocolError("the answer's headers are too long")
    return HttpProtocolError(f"an answer that is not HTTP/1.1 as we can read it: {text[:120]}")


async def _within(future: asyncio.Future[None], timeout: float, doing: str, said: float | None = None) -> None:
    """Await `future`, failing with RequestTimeout after `timeout` seconds (no extra task); the
    error names the timeout `said` (default: `timeout`)."""
    loop = asyncio.get_running_loop()
    timer = loop.call_later(timeout, _expire, future, doing, timeout if said is None else said)
    try:
        await future
    finally:
        timer.cancel()


def _expire(future: asyncio.Future[None], doing: str, timeout: float) -> None:
    if not future.done():
        future.set_exception(RequestTimeout(f"timed out after {timeout:g} s {doing}"))


class Response:
    """One answer: `status_code`, `headers`, and its body, read whole (`aread`) or as it comes
    (`aiter_bytes`, decoded). `aclose` when done: a connection whose body was read to the end
    goes back to the client for the next request."""

    def __init__(self, client: Client, conn: _Connection, key: tuple[object, ...], url: str,
                 head: h11.Response, timeout: float) -> None:
        self.status_code = head.status_code
        self.headers = Headers((name.decode("latin-1"), value.decode("latin-1"))
                               for name, value in head.headers.raw_items())
        self.http_version = "HTTP/" + head.http_version.decode("ascii")
        self.url = url
        self._client, self._conn, self._key, self._timeout = client, conn, key, timeout
        self._content: bytes | None = None
        self.is_closed = False
        self._decoder = content_decoder(self.headers.get("content-encoding", ""))

    @property
    def content(self) -> bytes:
        if self._content is None:
            raise HttpProtocolError("the body has not been read")
        return self._content

    @property
    def text(self) -> str:
        """The body as text: the charset its content type names, else UTF-8; bad bytes replaced."""
        return text_of(self.content, self.headers.get("content-type", ""))

    @property
    def charset(self) -> str | None:
        """The charset the content type names, if any."""
        return _charset(self.headers.get("content-type", ""))

    async def aread(self) -> bytes:
        """The whole body, decoded; TooLarge (and the connection closed) past LINE_CAP bytes."""
        if self._content is None:
            try:
                self._content = await read_capped(self.aiter_bytes())
            except TooLarge:
                await self.aclose()
                raise
        return self._content

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes, content-decoded, as they arrive."""
        async for raw in self._raw():
            if self._decoder is None:
                yield raw
                continue
            for data in self._decoder.pieces(raw):
                yield data
        if self._decoder is not None:
            tail = self._decoder.flush()
            if tail:
                yield tail

    async def _raw(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while not self.is_closed:
            try:
                event = await conn.event(self._timeout)
            except BaseException:
                await self.aclose()
                raise
            if isinstance(event, h11.Data):
                if event.data:
                    yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._finished()
                return
            else:  # (ConnectionClosed before the end: h11 raises for it first)
                await self.aclose()
                raise CutShort("the server closed the connection before the end of the answer")

    def _finished(self) -> None:
        """The body was read to its end: the connection can carry the next request, if h11 says
        both sides may go on and the server sent nothing beyond its answer."""
        if self.is_closed:
            return
        self.is_closed = True
        conn, machine = self._conn, self._conn.h11
        if machine.our_state is h11.DONE and machine.their_state is h11.DONE and not conn.ended \
                and not machine.trailing_data[0]:
            machine.start_next_cycle()
            if conn.reusable:
                self._client.release(self._key, conn)
                return
        conn.close()

    async def aclose(self) -> None:
        """Done with the answer: a body not read to its end closes the connection."""
        if not self.is_closed:
            self.is_closed = True
            self._conn.close()


def content_decoder(coding: str) -> Inflater | None:
    """The decoder of a `Content-Encoding` (None: the body is as it was sent)."""
    codings = [c.strip().lower() for c in coding.split(",") if c.strip() and c.strip().lower() != "identity"]
    if not codings:
        return None
    if len(codings) > 1 or codings[0] not in ("gzip", "x-gzip", "deflate"):
        raise HttpProtocolError(f"unsupported content encoding {coding!r}")
    return Inflater(codings[0])


class Inflater:
    """`gzip` or `deflate` content decoded in steps of at most INFLATE_STEP bytes, so that a few
    compressed bytes that inflate to gigabytes are read piece by piece, never held at once.
    `deflate` as servers send it: a zlib stream, or (some servers) raw deflate."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._deflate = coding == "deflate"
        self._inner = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else zlib.MAX_WBITS | 16)
        self._started = False

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of `data`, in pieces of at most INFLATE_STEP."""
        while True:
            out = self._step(data)
            data = self._inner.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < INFLATE_STEP:  # (a full step may leave output inside zlib)
                return

    def flush(self) -> bytes:
        """What is left once the body has ended."""
        try:
            return self._inner.flush()
        except zlib.error as exc:
            raise HttpProtocolError(f"the answer's {self.coding} content is corrupt ({exc})") from None

    def _step(self, data: bytes) -> bytes:
        try:
            out = self._inner.decompress(data, INFLATE_STEP)
        except zlib.error as exc:
            if not self._deflate or self._started:
                raise HttpProtocolError(f"the answer's {self.coding} content is corrupt ({exc})") from None
            self._started = True
            self._inner = zlib.decompressobj(-zlib.MAX_WBITS)  # not a zlib stream: raw deflate
            return self._step(data)
        self._started = True
        return out


def text_of(content: bytes, content_type: str) -> str:
    """`content` as text: the charset `content_type` names, else UTF-8; bad bytes replaced."""
    charset = _charset(content_type) or "utf-8"
    try:
        return content.decode(charset, errors="replace")
    except LookupError:
        return content.decode("utf-8", errors="replace")


def _charset(content_type: str) -> str | None:
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"') or None
    return None


def check_headers(headers: Mapping[str, str]) -> None:
    """HeaderRefused for the first header whose name or value would break the request's framing."""
    for name, value in headers.items():
        why = refused_header(name, value)
        if why is not None:
            raise HeaderRefused(f"refused to send the header {name[:60]!r}: {why}")


class Client:
    """Sends requests with fixed headers; keeps one idle connection per origin (up to
    `keep` in all); `aclose` when done. `proxies`: where each URL's requests go (by default
    the environment's HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, read once here)."""

    def __init__(self, headers: Mapping[str, str], timeout: float, tls: ssl.SSLContext | None = None,
                 keep: int = 100, proxies: Proxies | None = None) -> None:
        check_headers(headers)
        self.headers = dict(headers)
        self.timeout = timeout
        self._tls = tls
        self._keep = keep
        self._proxies = Proxies.from_env(os.environ) if proxies is None else proxies
        self._idle: dict[tuple[object, ...], list[_Connection]] = {}

    def tls(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = default_tls_context()
        return self._tls

    async def post(self, url: str, body: bytes) -> Response:
        """POST `body` to `url`; the answer's head is read, its body is for the caller to read
        (and redirects are followed)."""
        return await self.request("POST", url, body)

    async def request(self, method: str, url: str, body: bytes = b"",
                      headers: Mapping[str, str] | None = None, follow: bool = True) -> Response:
        """`method` on `url` with the client's headers and `headers` (which win on a name); as
        `post` otherwise. `follow=False`: a redirect is handed back as it is."""
        if headers:
            check_headers(headers)
        hop = Hop(method, url, body, {**self.headers, **headers} if headers else self.headers)
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._send(origin_of(hop.url), hop.method, hop.body, hop.headers)
            location = response.headers.get("location")
            if not follow or response.status_code not in REDIRECTS or location is None:
                return response
            await _discard(response)
            hop = hop.redirected(response.status_code, location)
        raise TransportError(f"more than {MAX_REDIRECTS} redirects")

    async def _send(self, origin: Origin, method: str, body: bytes, headers: Mapping[str, str]) -> Response:
        proxy = self._proxies.for_origin(origin.scheme, origin.host, origin.port)
        key: tuple[object, ...] = origin.key if proxy is None else (*origin.key, proxy.url)
        conn = self._reuse(key) or await self._connect(origin, proxy)
        fields = [("Host", origin.host_header), ("Accept-Encoding", ACCEPT_ENCODING), ("Connection", "keep-alive"),
                  *headers.items()]
        if conn.absolute and proxy is not None and proxy.authorization:
            fields.append(("Proxy-Authorization", proxy.authorization))
        if body or method == "POST":
            fields.append(("Content-Length", str(len(body))))
        target = origin.url if conn.absolute else origin.target
        head = await self._exchange(conn, h11.Request(method=method, target=target, headers=fields), body)
        return Response(self, conn, key, origin.url, head, self.timeout)

    async def _exchange(self, conn: _Connection, request: h11.Request, body: bytes = b"") -> h11.Response:
        """Send `request` (and `body`) on `conn` and read the answer's head."""
        timeout = self.timeout
        machine = conn.h11
        conn.first = b""
        try:
            head = machine.send(request) or b""
            ending = machine.send(h11.EndOfMessage()) if not body else None
            if body:
                data = machine.send(h11.Data(data=body)) or b""
                ending = machine.send(h11.EndOfMessage())
                if len(body) < JOIN_BELOW:
                    conn.write(head + data)
                else:  # (a long body is not copied)
                    conn.write(head)
                    conn.write(data)
            else:
                conn.write(head)
            if ending:
                conn.write(ending)
            await conn.drain(timeout)
            # The whole head within the timeout, interim answers included: a server sending it a
            # byte at a time, or 103s without end, cannot hold the request.
            until = conn.loop.time() + timeout
            while True:
                event = await conn.event(timeout, until)
                if isinstance(event, h11.Response):
                    return event
                if isinstance(event, h11.ConnectionClosed):
                    raise CutShort("the server closed the connection without answering")
                # an interim answer (100 Continue, 103…): h11 hands it over, we skip it
        except h11.LocalProtocolError as exc:  # (what check_headers let through: a bad method, target)
            conn.close()
            raise InvalidURL(f"cannot send this request: {exc}") from None
        except (HttpProtocolError, OSError) as exc:
            conn.close()
            if isinstance(exc, HttpProtocolError):
                raise
            raise ConnectError(f"the connection broke: {exc}") from exc
        except BaseException:
            conn.close()
            raise

    def _reuse(self, key: tuple[object, ...]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.reusable:
                return conn
            conn.close()
        return None

    def release(self, key: tuple[object, ...], conn: _Connection) -> None:
        if sum(map(len, self._idle.values())) >= self._keep:
            conn.close()
            return
        self._idle.setdefault(key, []).append(conn)

    async def _connect(self, origin: Origin, proxy: Proxy | None) -> _Connection:
        """A connection that carries `origin`'s requests: to the origin itself, or through
        `proxy` (plain http: to the proxy, requests in absolute form; https: a CONNECT tunnel,
        then TLS with the origin inside it)."""
        if proxy is None:
            return await self._open(origin.host, origin.port, self.tls() if origin.scheme == "https" else None)
        conn = await self._open(proxy.host, proxy.port, self.tls() if proxy.scheme == "https" else None,
                                f"the proxy {proxy.shown}")
        if origin.scheme == "http":
            conn.absolute = True
            return conn
        await self._tunnel(conn, origin, proxy)
        return conn

    async def _tunnel(self, conn: _Connection, origin: Origin, proxy: Proxy) -> None:
        """CONNECT `origin` through the proxy on `conn`, then TLS with the origin over it."""
        authority = f"[{origin.host}]:{origin.port}" if ":" in origin.host else f"{origin.host}:{origin.port}"
        fields = [("Host", authority)]
        if proxy.authorization:
            fields.append(("Proxy-Authorization", proxy.authorization))
        try:
            head = await self._exchange(conn, h11.Request(method="CONNECT", target=authority, headers=fields))
        except TransportError as exc:
            raise ConnectError(f"no tunnel through the proxy {proxy.shown} to {authority}: {exc}") from exc
        if not 200 <= head.status_code < 300:
            conn.close()
            raise ConnectError(f"the proxy {proxy.shown} refused the tunnel to {authority}: "
                               f"HTTP {head.status_code} {head.reason.decode('latin-1')}".rstrip())
        left, _ = conn.h11.trailing_data
        if left or conn.buffer or conn.transport is None:
            conn.close()
            raise HttpProtocolError(f"the proxy {proxy.shown} sent bytes before the TLS handshake")
        try:
            transport = await asyncio.wait_for(conn.loop.start_tls(
                conn.transport, conn, self.tls(), server_hostname=origin.host), self.timeout)
        except asyncio.TimeoutError:
            conn.close()
            raise RequestTimeout(f"timed out after {self.timeout:g} s in the TLS handshake with "
                                 f"{origin.host}:{origin.port}") from None
        except OSError as exc:
            conn.close()
            raise ConnectError(f"cannot connect to {origin.host}:{origin.port} through the proxy: {exc}") from exc
        conn.transport = transport  # type: ignore[assignment]
        conn.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)

    async def _open(self, host_name: str, port: int, tls: ssl.SSLContext | None,
                    what: str | None = None) -> _Connection:
        loop = asyncio.get_running_loop()
        what = what or f"{host_name}:{port}"
        try:
            addresses = await asyncio.wait_for(_resolve(loop, host_name, port), self.timeout)
        except asyncio.TimeoutError:
            raise RequestTimeout(f"timed out after {self.timeout:g} s resolving {host_name}") from None
        except OSError as exc:
            raise ConnectError(f"cannot resolve {host_name}: {exc}") from exc
        first: OSError | None = None
        for family, _kind, proto, _name, address in addresses:
            conn = _Connection(loop)
            try:
                await asyncio.wait_for(loop.create_connection(
                    functools.partial(_same, conn), host=str(address[0]), port=int(address[1]), family=family,
                    proto=proto, ssl=tls, server_hostname=host_name if tls is not None else None),
                    self.timeout)
            except asyncio.TimeoutError:
                raise RequestTimeout(f"timed out after {self.timeout:g} s connecting to {what}") from None
            except OSError as exc:  # (ssl.SSLError is one)
                first = first or exc
                if isinstance(exc, ssl.SSLError):
                    break  # the server was reached; another address would say the same
                continue
            _no_delay(conn)
            return conn
        assert first is not None
        raise ConnectError(f"cannot connect to {what}: {first}") from first

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()


async def _resolve(loop: asyncio.AbstractEventLoop, host: str, port: int) -> list[tuple[Any, ...]]:
    """`host`'s addresses, as getaddrinfo gives them. An IP literal (`127.0.0.1`, `::1`) is its
    own address: asyncio would resolve it in its thread pool, a thread and its modules started
    for nothing on the way to a local server. A name is passed as bytes when it is ASCII, which
    getaddrinfo takes without loading the `idna` codec."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port))]
    return await loop.getaddrinfo(host.encode("ascii") if host.isascii() else host, port, type=socket.SOCK_STREAM)


def _same(conn: _Connection) -> _Connection:
    return conn


def _no_delay(conn: _Connection) -> None:
    sock = conn.transport.get_extra_info("socket") if conn.transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # pragma: no cover
            pass


async def read_capped(pieces: AsyncIterator[bytes], cap: int = LINE_CAP) -> bytes:
    """The pieces joined; TooLarge once they pass `cap` bytes (nothing past it is kept)."""
    held: list[bytes] = []
    size = 0
    async for piece in pieces:
        size += len(piece)
        if size > cap:
            raise TooLarge(f"the answer's body is over {mib(cap)}")
        held.append(piece)
    return b"".join(held)


async def _discard(response: Response) -> None:
    """Read a redirect's body away (a small one), so that its connection can be used again."""
    try:
        await response.aread()
    except TransportError:
        await response.aclose()
