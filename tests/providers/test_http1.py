"""Our HTTP/1.1 transport (recursive_cli/net/http1.py, framed by h11) against real sockets, with httpx2 —
the client the SDKs are built on, which sent our requests before — as the oracle: the same
bytes from a server must read as the same status, headers and body through both.

The server here is a raw socket server that sends exactly the bytes a case gives (chunked
bodies with extensions and trailers, gzip, deflate in both forms, interim 1xx answers, a body
that ends with the connection), so nothing of either client's framing is taken on trust.
TLS is a real handshake with a certificate from a throwaway CA (`trustme`), proxies a real
forward proxy on loopback.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
import trustme

from recursive_cli.net import http1
from recursive_cli.net.http_client import ApiClient, HttpStatusError

Reply = Callable[[bytes], list[bytes]]  # the request's bytes → what to send, piece by piece ("" = close)


@dataclass
class RawServer:
    """Loopback server answering each request on a connection with `reply(request)`; counts
    connections and keeps every request's bytes. `close_after`: requests per connection."""

    reply: Reply
    close_after: int = 0
    tls: ssl.SSLContext | None = None
    address: str = "127.0.0.1"
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0

    def __post_init__(self) -> None:
        family = socket.AF_INET6 if ":" in self.address else socket.AF_INET
        self._sock = socket.create_server((self.address, 0), family=family)
        self._sock.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        host = "localhost" if self.tls else f"[{self.address}]" if ":" in self.address else self.address
        return f"{scheme}://{host}:{self._sock.getsockname()[1]}"

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            stream = conn.makefile("rb")
            served = 0
            while True:
                request = _read_request(stream)
                if request is None:
                    return
                self.requests.append(request)
                for piece in self.reply(request):
                    if not piece:
                        return
                    conn.sendall(piece)
                served += 1
                if self.close_after and served >= self.close_after:
                    return
        except OSError:
            return
        finally:
            conn.close()


def _read_request(stream: Any) -> bytes | None:
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = stream.readline()
        if not line:
            return None
        head += line
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + stream.read(length)


def fixed(*pieces: bytes) -> Reply:
    return lambda request: list(pieces)


def answer(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    head = [f"HTTP/1.1 {status}", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def chunked(*chunks: bytes, trailer: bytes = b"", extension: bytes = b"") -> bytes:
    out = b"".join(b"%x%s\r\n%s\r\n" % (len(chunk), extension, chunk) for chunk in chunks)
    return out + b"0\r\n" + trailer + b"\r\n"


def ours(url: str, body: bytes = b"{}", headers: dict[str, str] | None = None,
         timeout: float = 5.0, tls: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], bytes]:
    async def main() -> tuple[int, dict[str, str], bytes]:
        client = http1.Client(headers or {}, timeout, tls)
        try:
            response = await client.post(url, body)
            data = await response.aread()
            await response.aclose()
            return response.status_code, dict(response.headers), data
        finally:
            await client.aclose()
    return asyncio.run(main())


def theirs(url: str, body: bytes = b"{}") -> tuple[int, dict[str, str], bytes]:
    async def main() -> tuple[int, dict[str, str], bytes]:
        async with httpx2.AsyncClient(follow_redirects=True) as client:
            response = await client.post(url, content=body)
            return response.status_code, {k: v for k, v in response.headers.items()}, response.content
    return asyncio.run(main())


def raw_deflate(data: bytes) -> bytes:
    """Deflate without the zlib wrapper, as some servers send `Content-Encoding: deflate`."""
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


GZ = gzip.compress(b'{"answer": "zipped"}')
CASES: dict[str, bytes] = {
    "length": answer(b'{"a": 1}', "Content-Type: application/json"),
    "chunked": answer(chunked(b'{"a":', b' "pieces"', b"}"), "Transfer-Encoding: chunked"),
    "chunk-extension-and-trailer": answer(chunked(b"abc", b"defg", extension=b";name=value",
                                                  trailer=b"X-Checksum: 1\r\n"), "Transfer-Encoding: chunked"),
    "gzip": answer(GZ, "Content-Encoding: gzip"),
    "gzip-chunked": answer(chunked(GZ[:5], GZ[5:]), "Content-Encoding: gzip", "Transfer-Encoding: chunked"),
    "deflate-zlib": answer(zlib.compress(b"zlib deflate"), "Content-Encoding: deflate"),
    "deflate-raw": answer(raw_deflate(b"raw deflate"), "Content-Encoding: deflate"),
    "interim-100": b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b"after continue"),
    "repeated-header": answer(b"x", "X-Rate: 1", "x-rate: 2", "Set-Cookie: a=1"),
    "empty-204": b"HTTP/1.1 204 No Content\r\n\r\n",
    "error-status": answer(b'{"error": {"message": "slow down"}}', "Retry-After: 3", "Content-Type: application/json",
                           status="429 Too Many Requests"),
    "utf8-charset": answer("é ✓".encode(), "Content-Type: text/plain; charset=utf-8"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_answer_reads_as_httpx2_reads_it(case: str) -> None:
    with RawServer(fixed(CASES[case])) as server:
        status, headers, body = ours(server.url + "/v1/x")
        expected = theirs(server.url + "/v1/x")
    assert (status, body) == (expected[0], expected[2])
    for name, value in expected[1].items():  # every header httpx2 saw, joined as it joins them
        assert headers[name] == value, name


def test_a_body_that_ends_with_the_connection_reads_whole() -> None:
    raw = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"
    with RawServer(fixed(raw, b"")) as server:
        assert ours(server.url)[2] == theirs(server.url)[2] == b"until the end"


def test_the_request_says_what_httpx2_said_and_carries_the_body() -> None:
    with RawServer(fixed(answer(b"ok"))) as server:
        ours(server.url + "/v1/chat/completions?x=1", b'{"m": "\xc3\xa9"}', {"Authorization": "Bearer k"})
        request, url = server.requests[0], server.url
    head, _, body = request.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions?x=1 HTTP/1.1"
    fields = {line.split(":", 1)[0].lower(): line.split(":", 1)[1].strip() for line in lines[1:]}
    assert fields["host"] == url.removeprefix("http://")
    assert fields["content-length"] == str(len(body)) and body == b'{"m": "\xc3\xa9"}'
    assert fields["authorization"] == "Bearer k" and fields["connection"] == "keep-alive"
    assert set(fields["accept-encoding"].replace(" ", "").split(",")) <= {"gzip", "deflate", "br", "zstd"}


def test_requests_share_one_kept_alive_connection_and_a_closed_one_is_replaced() -> None:
    async def three(url: str) -> list[bytes]:
        client = http1.Client({}, 5.0)
        try:
            bodies = []
            for _ in range(3):
                response = await client.post(url, b"{}")
                bodies.append(await response.aread())
                await response.aclose()
                await asyncio.sleep(0.05)  # (the server's close of an idle connection arrives)
            return bodies
        finally:
            await client.aclose()

    with RawServer(fixed(answer(b"same"))) as server:
        assert asyncio.run(three(server.url)) == [b"same"] * 3
        assert server.connections == 1
    with RawServer(fixed(answer(b"again")), close_after=1) as server:  # closes after each answer
        assert asyncio.run(three(server.url)) == [b"again"] * 3  # no error: a new connection each time
        assert server.connections == 3


def test_redirects_are_followed_and_credentials_stay_with_their_origin() -> None:
    with RawServer(fixed(answer(b"landed"))) as other:
        def reply(request: bytes) -> list[bytes]:
            if request.startswith(b"POST /old"):
                return [answer(b"", "Location: /new", status="307 Temporary Redirect")]
            if request.startswith(b"POST /new"):
                return [answer(b"", f"Location: {other.url}/away", status="303 See Other")]
            return [answer(b"?")]
        with RawServer(reply) as server:
            status, _, body = ours(server.url + "/old", b'{"keep": 1}',
                                   {"Authorization": "Bearer secret", "x-api-key": "secret", "X-Team": "blue",
                                    "User-Agent": "recursive-cli"})
            first, second = server.requests
        (away,) = other.requests
    assert (status, body) == (200, b"landed")
    assert second.startswith(b"POST /new") and second.endswith(b'{"keep": 1}')  # 307: same method, same body
    assert b"secret" in first and b"secret" in second  # same origin: the credentials go along
    assert away.startswith(b"GET /away") and b"secret" not in away
    # to another origin only the protocol's headers: none the user configured (it may be a credential)
    assert b"X-Team" not in away and b"User-Agent: recursive-cli" in away


def test_a_server_that_never_answers_times_out() -> None:
    released = threading.Event()

    def silence(request: bytes) -> list[bytes]:
        released.wait(5)  # (until the client has given up)
        return [b""]

    with RawServer(silence) as server:
        try:
            with pytest.raises(http1.RequestTimeout, match="timed out after 0.3 s"):
                ours(server.url, timeout=0.3)
        finally:
            released.set()


def test_connection_failures_keep_their_cause() -> None:
    port = socket.create_server(("127.0.0.1", 0))
    address = port.getsockname()
    port.close()  # nothing listens there now
    with pytest.raises(http1.ConnectError) as refused:
        ours(f"http://127.0.0.1:{address[1]}/")
    assert isinstance(refused.value.__cause__, ConnectionRefusedError)
    with pytest.raises(http1.InvalidURL):
        ours("ftp://127.0.0.1/")


def _ipv6_loopback() -> bool:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize("address", ["127.0.0.1", pytest.param("::1", marks=pytest.mark.skipif(
    not _ipv6_loopback(), reason="no IPv6 loopback here"))])
def test_an_ip_address_is_reached_without_asking_the_resolver(address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local server at a literal address answers even where name resolution is broken (a
    container whose resolver hangs or refuses): there is no name to resolve. A name still is."""
    asked: list[object] = []

    def broken(host: object, *args: object, **kwargs: object) -> Any:
        asked.append(host)
        raise socket.gaierror(socket.EAI_FAIL, "Non-recoverable failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", broken)
    with RawServer(fixed(answer(b"local")), address=address) as server:
        assert ours(server.url)[::2] == (200, b"local")
        assert asked == []
        with pytest.raises(http1.ConnectError, match="cannot resolve localhost"):
            ours(server.url.replace(f"[{address}]" if ":" in address else address, "localhost"))
    assert asked == [b"localhost"]


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_tls_is_verified_against_the_certificates_the_environment_names(
        ca: trustme.CA, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(server_tls)
    with RawServer(fixed(answer(b"secure")), tls=server_tls) as server:
        with pytest.raises(http1.ConnectError) as unknown:  # the system does not know this CA
            ours(server.url)
        assert isinstance(unknown.value.__cause__, ssl.SSLCertVerificationError)
        bundle = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(bundle))
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))  # as httpx2 reads it
        assert ours(server.url)[2] == b"secure"


class ForwardProxy:
    """A real HTTP forward proxy on loopback (absolute-form requests), counting what it carried."""

    def __init__(self) -> None:
        self.carried: list[bytes] = []
        self.server = RawServer(self._forward)

    def _forward(self, request: bytes) -> list[bytes]:
        self.carried.append(request.split(b"\r\n", 1)[0])
        target = request.split(b" ", 2)[1].decode()  # http://host:port/path
        hostport, _, path = target.removeprefix("http://").partition("/")
        host, _, port = hostport.partition(":")
        with socket.create_connection((host, int(port))) as upstream:
            upstream.sendall(request.replace(target.encode(), b"/" + path.encode(), 1))
            data = b""
            while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
                piece = upstream.recv(65536)
                if not piece:
                    break
                data += piece
        return [data]

    def __enter__(self) -> ForwardProxy:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)


def _length(data: bytes) -> int:
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def test_with_a_proxy_in_the_environment_the_request_goes_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    async def post(url: str) -> object:
        client = ApiClient(url, {"Accept": "application/json"}, 5.0)
        try:
            return await client.post_json(client.url("v1/x"), b"{}")
        finally:
            await client.aclose()

    with RawServer(fixed(answer(b'{"via": "proxy"}', "Content-Type: application/json"))) as upstream, \
            ForwardProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.server.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert asyncio.run(post(upstream.url)) == {"via": "proxy"}
        assert proxy.carried == [f"POST {upstream.url}/v1/x HTTP/1.1".encode()]


def test_an_error_status_through_the_api_client_keeps_its_headers() -> None:
    async def post(url: str) -> object:
        client = ApiClient(url, {}, 5.0)
        try:
            return await client.post_json(client.url("v1/x"), b"{}")
        finally:
            await client.aclose()

    with RawServer(fixed(CASES["error-status"])) as server:
        with pytest.raises(HttpStatusError) as error:
            asyncio.run(post(server.url))
    assert error.value.status == 429 and error.value.headers.get("retry-after") == "3"
    assert error.value.body == {"error": {"message": "slow down"}}


def test_headers_are_looked_up_in_any_case() -> None:
    headers = http1.Headers([("Retry-After-Ms", "10"), ("X-A", "1"), ("x-a", "2")])
    assert headers.get("retry-after-ms") == "10" and headers["X-A"] == "1, 2" and "RETRY-AFTER-MS" in headers
    assert dict(headers) == {"retry-after-ms": "10", "x-a": "1, 2"}


def _iter_pieces(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


def test_a_stream_sent_a_byte_at_a_time_reads_the_same() -> None:
    raw = answer(chunked(b"data: one\n\n", b"data: two\n\n"), "Transfer-Encoding: chunked",
                 "Content-Type: text/event-stream")
    with RawServer(lambda request: list(_iter_pieces(raw, 1))) as server:
        assert ours(server.url)[2] == b"data: one\n\ndata: two\n\n"


def test_a_long_request_body_arrives_whole() -> None:
    body = bytes(range(256)) * 4096  # 1 MiB: more than a socket buffer takes at once
    with RawServer(fixed(answer(b"got it"))) as server:
        assert ours(server.url, body)[2] == b"got it"
        assert server.requests[0].endswith(body) and f"Content-Length: {len(body)}".encode() in server.requests[0]
