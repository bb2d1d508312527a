"""A loopback HTTP server for the oracle tests: it keeps every request's raw bytes and answers
each POST with one fixed answer, sent in pieces of a chosen size.

    with WireServer(Answer(200, stream_bytes, "text/event-stream", piece=7)) as server:
        ...  # point a client at server.url
        server.requests[0].body  # the bytes the client sent

Unlike tests/fakeserver.py it knows nothing of either API: the tests hand it the exact bytes
to send (an SSE stream, a JSON body, an error), so the SDK clients and ours read the same
bytes, split the same way.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    """What the server sends to every POST: status, body bytes, content type, extra headers;
    the body goes out chunked in pieces of `piece` bytes (0: whole, with a Content-Length),
    and the chunked body is ended only `linger` seconds after its last piece."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    piece: int = 0
    linger: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request as it arrived: method, path, headers (names lower-cased) and raw body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class WireServer:
    """Answers every POST on 127.0.0.1 with `answer`, in a daemon thread; a context manager."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.wire = self  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> WireServer:
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def record(self, request: Received) -> None:
        with self._lock:
            self.requests.append(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        wire: WireServer = self.server.wire  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        wire.record(Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        answer = wire.answer
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if not answer.piece:
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for start in range(0, len(answer.body), answer.piece):
            data = answer.body[start:start + answer.piece]
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        time.sleep(answer.linger)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
