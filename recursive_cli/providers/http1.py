"""A small HTTP/1.1 client on asyncio's transports, for the one kind of request a model API
gets: a POST of bytes we encoded, answered whole or as a stream.

Why our own: the general client (httpx2 → httpcore2 → h11 + anyio, cookies, `email`,
`urllib.request`) cost a one-step run ≈ 70 ms of its start-up and ≈ 0.1 ms per request in
layers a model call does not use (bench/README.md, issue 16). What it does, as httpx2 did it
for us: connections kept alive between requests (one the server closed while it sat idle is
not used again; one that breaks under a request is an error for `retry.py`, as with httpx2),
`Content-Length` and chunked bodies, `gzip`/`deflate` content decoded (and asked for), 1xx
answers skipped, redirects followed, one timeout for connecting and for each wait on the
socket, TLS verified against the system's certificates (`SSL_CERT_FILE` / `SSL_CERT_DIR`
first, as httpx2 reads them). What it does not do is left to httpx2 (`http_client.py` picks
it): proxies.

What a hostile server cannot make it do (issue 36): follow a redirect from https to http, or
carry a credential to another origin (`Hop.redirected`); inflate content other than a step
(INFLATE_STEP) at a time; hold more than caps.LINE_CAP of a body read whole (`TooLarge`);
take longer than the timeout over an answer's head, interim answers included.

Failures are `TransportError`s, chained to their cause (`socket.gaierror`,
`ConnectionRefusedError`, an `ssl.SSLError`) so that callers can look through them.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import ssl
import sys
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import NamedTuple
from urllib.parse import urljoin, urlsplit

from .caps import LINE_CAP, mib

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


class TransportError(Exception):
    """No (whole) answer: the connection failed, broke, or the server spoke something else."""


class ConnectError(TransportError):
    """No connection to the server (the cause says why: a name not found, a refusal, TLS)."""


class RequestTimeout(TransportError):
    """Connecting, sending or waiting for the answer took longer than the timeout."""


class ProtocolError(TransportError):
    """The server's answer is not HTTP/1.1 as we can read it, or it ended too soon."""


class CutShort(ProtocolError):
    """The connection ended before the whole answer had come."""


class InvalidURL(TransportError):
    """A URL we cannot send to (no host, or a scheme other than http and https)."""


class TooLarge(ProtocolError):
    """A body read whole, a line or an event over LINE_CAP: the peer is cut off there."""


class RedirectRefused(TransportError):
    """A redirect we do not follow: from https to plain http, or to a scheme we cannot send to."""


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
            there = _Origin(target)
        except InvalidURL as exc:
            raise RedirectRefused(f"not following the redirect from {self.url}: {exc}") from None
        here = _Origin(self.url)
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
        import truststore  # (installed with httpx2)
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


class _Origin:
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


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection: what arrived and not yet read, and a wake-up for the reader."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False  # the server closed its side (or the connection is gone)
        self.error: BaseException | None = None
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
            and not self.transport.is_closing()

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    async def drain(self, timeout: float) -> None:
        """Wait while the socket's send buffer is full (a large body to a slow reader)."""
        while self._writable is not None and not self.ended:
            await _within(self._writable, timeout, "sending the request")

    async def more(self, timeout: float, until: float | None = None) -> None:
        """Wait for bytes beyond those in the buffer (or the end of the connection), `timeout`
        seconds at most and never past `until` (a `loop.time()`)."""
        if self.ended:
            raise CutShort(_ended_message(self.error)) from self.error
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        wait = timeout if until is None else max(0.0, min(timeout, until - self.loop.time()))
        waiter = self._waiter = self.loop.create_future()
        try:
            await _within(waiter, wait, "waiting for the answer", timeout)
        finally:
            self._waiter = None

    def take(self, count: int) -> bytes:
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def close(self) -> None:
        self.ended = True
        self.buffer.clear()  # (what a broken answer left here goes now, not with the last reference)
        if self.transport is not None:
            self.transport.close()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


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


def _ended_message(error: BaseException | None) -> str:
    return f"the server closed the connection ({error})" if error else "the server closed the connection"


class Response:
    """One answer: `status_code`, `headers`, and its body, read whole (`aread`) or as it comes
    (`aiter_bytes`, decoded). `aclose` when done: a connection whose body was read to the end
    goes back to the client for the next request."""

    def __init__(self, client: Client, conn: _Connection, origin: _Origin, status: int, version: str,
                 headers: Headers, bodiless: bool, timeout: float) -> None:
        self.status_code = status
        self.headers = headers
        self.http_version = version
        self.url = f"{origin.scheme}://{origin.host_header}{origin.target}"
        self._client, self._conn, self._origin, self._timeout = client, conn, origin, timeout
        self._content: bytes | None = None
        self.is_closed = False
        self._keep = _keeps_alive(version, headers)
        self._framing = _Framing.none() if bodiless else _Framing.of(headers)
        self._decoder = content_decoder(headers.get("content-encoding", ""))

    @property
    def content(self) -> bytes:
        if self._content is None:
            raise ProtocolError("the body has not been read")
        return self._content

    @property
    def text(self) -> str:
        """The body as text: the charset its content type names, else UTF-8; bad bytes replaced."""
        return text_of(self.content, self.headers.get("content-type", ""))

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
        conn, framing = self._conn, self._framing
        while not framing.done:
            if self.is_closed:
                return
            piece = framing.next(conn)
            if piece is None:  # more bytes needed
                if conn.ended and framing.until_close:
                    framing.done = True
                    break
                if conn.ended:
                    raise CutShort(framing.cut_short()) from conn.error
                await conn.more(self._timeout)
                continue
            if piece:
                yield piece
        self._finished()

    def _finished(self) -> None:
        """The body was read to its end: the connection can carry the next request."""
        if self.is_closed:
            return
        self.is_closed = True
        if self._keep and not self._framing.until_close and self._conn.reusable:
            self._client.release(self._origin, self._conn)
        else:
            self._conn.close()

    async def aclose(self) -> None:
        """Done with the answer: a body not read to its end closes the connection."""
        if not self.is_closed:
            self.is_closed = True
            self._conn.close()


class _Framing:
    """Where one body ends: after `Content-Length` bytes, after the last chunk, at the
    connection's close, or at once (no body)."""

    # The states of a chunked body.
    SIZE, DATA, DATA_END, TRAILER = range(4)

    def __init__(self, length: int | None, chunked: bool) -> None:
        self.left = length  # bytes of the body (or of the current chunk) still to come
        self.chunked = chunked
        self.until_close = length is None and not chunked
        self.done = length == 0 and not chunked
        self._state = self.SIZE

    @classmethod
    def none(cls) -> _Framing:
        return cls(0, False)

    @classmethod
    def of(cls, headers: Headers) -> _Framing:
        coding = headers.get("transfer-encoding", "")
        if coding and coding.split(",")[-1].strip().lower() == "chunked":
            return cls(None, True)
        length = headers.get("content-length")
        if length is None:
            return cls(None, False)
        values = {value.strip() for value in length.split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise ProtocolError(f"invalid Content-Length {length!r}")
        return cls(int(values.pop()), False)

    def cut_short(self) -> str:
        """Why a body that ended with its connection is not whole."""
        if self.chunked:
            return "the server closed the connection before the end of the answer (a chunked body without its last chunk)"
        return f"the server closed the connection before the end of the answer ({self.left} bytes of it missing)"

    def next(self, conn: _Connection) -> bytes | None:
        """The next piece of the body from the buffer; None when more bytes must arrive first
        (b"" when a framing step consumed bytes but yielded none)."""
        if self.chunked and self._state != self.DATA:
            return self._chunk_line(conn)
        if not conn.buffer:
            return None
        if self.left is None:  # until the connection closes
            return conn.take(len(conn.buffer))
        piece = conn.take(min(self.left, len(conn.buffer)))
        self.left -= len(piece)
        if self.left == 0:
            if self.chunked:
                self._state = self.DATA_END
            else:
                self.done = True
        return piece

    def _chunk_line(self, conn: _Connection) -> bytes | None:
        """One line of a chunked body's framing: a size, the CRLF after a chunk, a trailer."""
        end = conn.buffer.find(b"\r\n")
        if end < 0:
            if len(conn.buffer) > MAX_HEAD:
                raise ProtocolError("a chunk size or trailer line is too long")
            return None
        line = conn.take(end + 2)[:-2]
        if self._state == self.DATA_END:
            if line:
                raise ProtocolError("a chunk is not followed by CRLF")
            self._state = self.SIZE
        elif self._state == self.TRAILER:
            self.done = not line  # trailer lines are read and dropped until an empty one
        else:
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"invalid chunk size {size_text[:40]!r}") from None
            if size < 0:
                raise ProtocolError(f"invalid chunk size {size_text[:40]!r}")
            self.left = size
            self._state = self.DATA if size else self.TRAILER
        return b""


def _keeps_alive(version: str, headers: Headers) -> bool:
    tokens = {token.strip().lower() for token in headers.get("connection", "").split(",")}
    if version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def content_decoder(coding: str) -> Inflater | None:
    """The decoder of a `Content-Encoding` (None: the body is as it was sent)."""
    codings = [c.strip().lower() for c in coding.split(",") if c.strip() and c.strip().lower() != "identity"]
    if not codings:
        return None
    if len(codings) > 1 or codings[0] not in ("gzip", "x-gzip", "deflate"):
        raise ProtocolError(f"unsupported content encoding {coding!r}")
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
            raise ProtocolError(f"the answer's {self.coding} content is corrupt ({exc})") from None

    def _step(self, data: bytes) -> bytes:
        try:
            out = self._inner.decompress(data, INFLATE_STEP)
        except zlib.error as exc:
            if not self._deflate or self._started:
                raise ProtocolError(f"the answer's {self.coding} content is corrupt ({exc})") from None
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


class Client:
    """Sends requests with fixed headers; keeps one idle connection per origin (up to
    `keep` in all); `aclose` when done."""

    def __init__(self, headers: Mapping[str, str], timeout: float, tls: ssl.SSLContext | None = None,
                 keep: int = 100) -> None:
        self.headers = dict(headers)
        self.timeout = timeout
        self._tls = tls
        self._keep = keep
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}

    def tls(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = default_tls_context()
        return self._tls

    async def post(self, url: str, body: bytes) -> Response:
        """POST `body` to `url`; the answer's head is read, its body is for the caller to read
        (and redirects are followed)."""
        return await self.request("POST", url, body)

    async def request(self, method: str, url: str, body: bytes = b"",
                      headers: Mapping[str, str] | None = None) -> Response:
        """`method` on `url` with the client's headers and `headers` (which win on a name); as
        `post` otherwise."""
        hop = Hop(method, url, body, {**self.headers, **headers} if headers else self.headers)
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._send(_Origin(hop.url), hop.method, hop.body, hop.headers)
            location = response.headers.get("location")
            if response.status_code not in REDIRECTS or location is None:
                return response
            await _discard(response)
            hop = hop.redirected(response.status_code, location)
        raise TransportError(f"more than {MAX_REDIRECTS} redirects")

    async def _send(self, origin: _Origin, method: str, body: bytes, headers: Mapping[str, str]) -> Response:
        request = _request_bytes(origin, method, body, headers)
        conn = self._reuse(origin) or await self._connect(origin)
        return await self._exchange(conn, origin, method, request)

    async def _exchange(self, conn: _Connection, origin: _Origin, method: str,
                        request: tuple[bytes, ...]) -> Response:
        """Send `request` on `conn` and read the answer's head."""
        timeout = self.timeout
        try:
            for data in request:
                conn.write(data)
            await conn.drain(timeout)
            # The whole head within the timeout, interim answers included: a server sending it a
            # byte at a time, or 103s without end, cannot hold the request.
            until = conn.loop.time() + timeout
            status, version, headers = await _read_head(conn, timeout, until)
            while 100 <= status < 200 and status != 101:  # an interim answer (100 Continue, 103…)
                status, version, headers = await _read_head(conn, timeout, until)
        except (ProtocolError, OSError) as exc:
            conn.close()
            if isinstance(exc, ProtocolError):
                raise
            raise ConnectError(f"the connection broke: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        bodiless = method == "HEAD" or status in (204, 304)
        try:
            return Response(self, conn, origin, status, version, headers, bodiless, timeout)
        except ProtocolError:  # (framing or an encoding we cannot read)
            conn.close()
            raise

    def _reuse(self, origin: _Origin) -> _Connection | None:
        idle = self._idle.get(origin.key)
        while idle:
            conn = idle.pop()
            if conn.reusable:
                return conn
            conn.close()
        return None

    def release(self, origin: _Origin, conn: _Connection) -> None:
        if sum(map(len, self._idle.values())) >= self._keep:
            conn.close()
            return
        self._idle.setdefault(origin.key, []).append(conn)

    async def _connect(self, origin: _Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = self.tls() if origin.scheme == "https" else None
        try:
            host: str | bytes = origin.host.encode("ascii") if origin.host.isascii() else origin.host
            addresses = await asyncio.wait_for(  # (an ASCII name as bytes: no `idna` codec to load)
                loop.getaddrinfo(host, origin.port, type=socket.SOCK_STREAM), self.timeout)
        except asyncio.TimeoutError:
            raise RequestTimeout(f"timed out after {self.timeout:g} s resolving {origin.host}") from None
        except OSError as exc:
            raise ConnectError(f"cannot resolve {origin.host}: {exc}") from exc
        first: OSError | None = None
        for family, _kind, proto, _name, address in addresses:
            conn = _Connection(loop)
            try:
                await asyncio.wait_for(loop.create_connection(
                    functools.partial(_same, conn), host=str(address[0]), port=int(address[1]), family=family,
                    proto=proto, ssl=tls, server_hostname=origin.host if tls is not None else None),
                    self.timeout)
            except asyncio.TimeoutError:
                raise RequestTimeout(f"timed out after {self.timeout:g} s connecting to "
                                     f"{origin.host}:{origin.port}") from None
            except OSError as exc:  # (ssl.SSLError is one)
                first = first or exc
                if isinstance(exc, ssl.SSLError):
                    break  # the server was reached; another address would say the same
                continue
            _no_delay(conn)
            return conn
        assert first is not None
        raise ConnectError(f"cannot connect to {origin.host}:{origin.port}: {first}") from first

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()


def _same(conn: _Connection) -> _Connection:
    return conn


def _no_delay(conn: _Connection) -> None:
    sock = conn.transport.get_extra_info("socket") if conn.transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # pragma: no cover
            pass


def _request_bytes(origin: _Origin, method: str, body: bytes,
                   headers: Mapping[str, str]) -> tuple[bytes, ...]:
    lines = [f"{method} {origin.target} HTTP/1.1", f"Host: {origin.host_header}",
             f"Accept-Encoding: {ACCEPT_ENCODING}", "Connection: keep-alive"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return (head + body,) if len(body) < JOIN_BELOW else (head, body)  # (a long body is not copied)


async def _read_head(conn: _Connection, timeout: float, until: float) -> tuple[int, str, Headers]:
    """The status and headers of the next answer, which must have come by `until` (a
    `loop.time()`), each wait at most `timeout`."""
    while True:
        end = conn.buffer.find(b"\r\n\r\n")
        if end >= 0:
            break
        if len(conn.buffer) > MAX_HEAD:
            raise ProtocolError("the answer's headers are too long")
        if conn.ended:
            raise CutShort("the server closed the connection without answering" if not conn.buffer
                           else "the server closed the connection in the middle of the answer's headers")
        await conn.more(timeout, until)
    head = conn.take(end + 4)[:-4].decode("latin-1")
    status_line, *header_lines = head.split("\r\n")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if version not in ("HTTP/1.1", "HTTP/1.0") or not code.isdigit():
        raise ProtocolError(f"not an HTTP/1.1 answer: {status_line[:80]!r}")
    items: list[tuple[str, str]] = []
    for line in header_lines:
        if line[:1] in (" ", "\t") and items:  # an obsolete folded continuation
            name, value = items[-1]
            items[-1] = (name, f"{value} {line.strip()}")
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise ProtocolError(f"invalid header line {line[:80]!r}")
        items.append((name, value.strip()))
    return int(code), version, Headers(items)


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
