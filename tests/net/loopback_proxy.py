"""A real HTTP proxy on loopback for the transport's tests: plain http forwarded from the
absolute-form request, https through a CONNECT tunnel (bytes piped both ways, so the TLS is
the client's with the origin). It keeps every request head it was sent and, with `password`,
answers 407 to a request without the matching `Proxy-Authorization`."""

from __future__ import annotations

import base64
import select
import socket
import threading
from typing import Any


class LoopbackProxy:
    def __init__(self, user: str = "", password: str = "") -> None:
        self.heads: list[bytes] = []  # every request head, as it came
        self._wanted = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode() if user else None
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def lines(self) -> list[str]:
        """The first line of every request the proxy was sent."""
        return [head.split(b"\r\n", 1)[0].decode() for head in self.heads]

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            stream = conn.makefile("rb")
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                line = stream.readline()
                if not line:
                    return
                head += line
            self.heads.append(head)
            fields = _fields(head)
            if self._wanted is not None and fields.get("proxy-authorization") != self._wanted:
                conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                return
            method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                with socket.create_connection((host.strip("[]"), int(port))) as upstream:
                    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    _pipe(conn, upstream)
                return
            body = stream.read(int(fields.get("content-length", "0")))
            hostport, _, path = target.removeprefix("http://").partition("/")
            host, _, port = hostport.rpartition(":")
            kept = [line for line in head.split(b"\r\n")[1:]
                    if line and not line.lower().startswith((b"proxy-authorization:", b"connection:"))]
            forwarded = b"\r\n".join([f"{method} /{path} HTTP/1.1".encode(), *kept, b"Connection: close"])
            with socket.create_connection((host, int(port))) as upstream:
                upstream.sendall(forwarded + b"\r\n\r\n" + body)
                while piece := upstream.recv(65536):
                    conn.sendall(piece)
        except OSError:
            return
        finally:
            conn.close()


def _fields(head: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, colon, value = line.partition(":")
        if colon:
            out[name.strip().lower()] = value.strip()
    return out


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Bytes both ways until either side closes."""
    ends: Any = [a, b]
    while True:
        ready, _, _ = select.select(ends, [], [], 10)
        if not ready:
            return
        for sock in ready:
            data = sock.recv(65536)
            if not data:
                return
            (b if sock is a else a).sendall(data)
