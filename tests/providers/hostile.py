"""Hostile loopback HTTP servers (issue 36) and a way to measure the CLI against them.

A `HostileServer` reads each request and hands it, with the connection, to a behaviour that
sends whatever it likes: a stream of keep-alives that never ends, a line cut off after
100 MiB, a gzip bomb, a redirect elsewhere. Every request is kept (`requests`), so a test can
check what a server was sent — a second server on another port is another origin.

    with HostileServer(trickle(0.5)) as server:
        run = measured_run("run", "hi", *model_args("openai", server.url), "--max-duration", "5s")
        assert run.returncode == 3 and run.peak_mib < 200

`measured_run` runs `python -m recursive_cli` as a real process and reads its peak RSS from
`wait4` (in a small process between, see _MEASURER), for the defects that were memory.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1 << 20
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"


@dataclass(frozen=True)
class Request:
    """One request as it arrived: method, target, headers (names lower-cased), body."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class Peer:
    """The client's end of one connection; `send` is False once the client has gone."""

    def __init__(self, sock: socket.socket, stopping: threading.Event) -> None:
        self.sock = sock
        self._stopping = stopping

    def send(self, data: bytes) -> bool:
        if self._stopping.is_set():
            return False
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True


Behaviour = Callable[[Request, Peer], None]


@dataclass
class HostileServer:
    """A loopback server handing every request to `behaviour` (in a thread per connection);
    one request per connection. With `tls`, it speaks HTTPS."""

    behaviour: Behaviour
    tls: ssl.SSLContext | None = None
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` (`https://localhost:PORT` with TLS)."""
        return f"https://localhost:{self.port}" if self.tls else f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            request = read_request(conn)
            if request is not None:
                self.requests.append(request)
                self.behaviour(request, Peer(conn, self._stopping))
        except OSError:
            pass
        finally:
            conn.close()


def read_request(conn: socket.socket) -> Request | None:
    """The next request on `conn` (None when it closes first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    first, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length") or 0):
        piece = conn.recv(65536)
        if not piece:
            break
        body += piece
    method, target, _ = first.split(" ", 2)
    return Request(method, target, headers, body)


def response(status: str, body: bytes = b"", *headers: str) -> bytes:
    """A whole answer with a Content-Length, on a connection that closes after it."""
    head = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}", "Connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


# -- behaviours -----------------------------------------------------------------------------------


def answer(status: str, body: bytes = b"", *headers: str) -> Behaviour:
    """The same whole answer to every request."""
    return lambda request, peer: None if peer.send(response(status, body, *headers)) else None


def raw(data: bytes) -> Behaviour:
    """These bytes, exactly, to every request (then the connection closes)."""
    return lambda request, peer: None if peer.send(data) else None


def in_turn(*answers: bytes) -> Behaviour:
    """The first request gets the first answer, the next the next; the last is kept for the rest."""
    served: list[int] = []
    lock = threading.Lock()

    def act(request: Request, peer: Peer) -> None:
        with lock:
            index = min(len(served), len(answers) - 1)
            served.append(index)
        peer.send(answers[index])
    return act


def events(*lines: bytes) -> bytes:
    """A whole 200 event-stream answer of these bytes."""
    return response("200 OK", b"".join(lines), "Content-Type: text/event-stream")


def trickle(interval: float, comment: bytes = b": ping\n\n") -> Behaviour:
    """A 200 event stream of nothing but keep-alive comments, one every `interval` s, without end."""
    def act(request: Request, peer: Peer) -> None:
        if not peer.send(SSE_HEAD + b"\r\n"):
            return
        while peer.send(comment):
            time.sleep(interval)
    return act


def cut_line(size: int) -> Behaviour:
    """A 200 chunked event stream whose first line is `size` bytes of a JSON string, cut off
    there: the connection closes before the body's last chunk."""
    def act(request: Request, peer: Peer) -> None:
        start = b'data: {"choices":[{"delta":{"content":"'
        if not peer.send(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(start), start)):
            return
        piece = b"%x\r\n%s\r\n" % (MIB, b"x" * MIB)
        for _ in range(size // MIB):
            if not peer.send(piece):
                return
    return act


def endless_line(limit: int = 4 << 30) -> Behaviour:
    """A 200 event stream whose first line never ends (it stops at `limit` bytes, or when the
    client goes)."""
    def act(request: Request, peer: Peer) -> None:
        if peer.send(SSE_HEAD + b"\r\ndata: "):
            send_filler(peer, limit)
    return act


def gzip_bomb(decoded: int, content_type: str = "text/event-stream") -> Behaviour:
    """`decoded` bytes of newlines, gzipped (about a thousandth of that on the wire)."""
    def act(request: Request, peer: Peer) -> None:
        body = gzipped_newlines(decoded)
        peer.send(response("200 OK", body, f"Content-Type: {content_type}", "Content-Encoding: gzip"))
    return act


def redirect(status: str, location: str) -> Behaviour:
    """A redirect to `location`."""
    return answer(status, b"", f"Location: {location}")


def send_filler(peer: Peer, size: int, piece: bytes = b"x" * MIB) -> bool:
    """Send `size` bytes of `x`; False if the client went away first."""
    sent = 0
    while sent < size:
        part = piece if size - sent >= len(piece) else piece[: size - sent]
        if not peer.send(part):
            return False
        sent += len(part)
    return True


@functools.lru_cache(maxsize=4)
def gzipped_newlines(decoded: int) -> bytes:
    """`decoded` newlines, gzipped (made a MiB at a time: the decoded bytes are never held)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"\n" * MIB
    parts = [compressor.compress(block) for _ in range(decoded // MIB)]
    parts.append(compressor.compress(b"\n" * (decoded % MIB)))
    return b"".join(parts) + compressor.flush()


# -- the CLI, measured ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """A finished CLI process: exit code, output, peak RSS (MiB) and wall seconds."""

    returncode: int
    stdout: str
    stderr: str
    peak_mib: float
    wall: float


# Runs argv[3:] as its child (in a session of its own), kills it and what it started after
# argv[2] seconds, and writes the child's peak RSS (KiB) and whether it was killed to the file
# argv[1] names. Why a process between: on Linux a child's `ru_maxrss` counts the image it was
# forked from, and a test process can be large (a pytest worker that served a gzip bomb);
# forked from this small one, the command's figure is its own, a killed one's too.
_MEASURER = """
import os, signal, subprocess, sys, threading
proc = subprocess.Popen(sys.argv[3:], start_new_session=True)
killed = []
timer = threading.Timer(float(sys.argv[2]), lambda: (killed.append(1), os.killpg(proc.pid, signal.SIGKILL)))
timer.start()
_, status, usage = os.wait4(proc.pid, 0)
timer.cancel()
proc.returncode = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as out:
    out.write(f"{usage.ru_maxrss} {len(killed)}")
sys.exit(proc.returncode if proc.returncode >= 0 else 128 - proc.returncode)
"""


def measured_run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Measured:
    """`python -m recursive_cli ARGS` as a real process, measured (`measured`)."""
    return measured([sys.executable, "-m", "recursive_cli", *args], env=env, timeout=timeout)


def measured(argv: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> Measured:
    """`argv` as a real process, with its peak RSS; killed (with whatever it started) after
    `timeout` s, and reported then with exit -9."""
    with tempfile.TemporaryDirectory() as folder:
        peak, out, err = (os.path.join(folder, name) for name in ("peak", "out", "err"))
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            started = time.monotonic()
            proc = subprocess.Popen([sys.executable, "-c", _MEASURER, peak, str(timeout), *argv],
                                    env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, stdout=stdout,
                                    stderr=stderr, start_new_session=True)
            try:
                code = proc.wait(timeout + 30)
            except subprocess.TimeoutExpired:  # (the measurer itself stuck: not expected)
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
            wall = time.monotonic() - started
        kib, killed = (Path(peak).read_text().split() if os.path.exists(peak) else ["0", "1"])
        return Measured(-9 if killed == "1" else code, Path(out).read_text(errors="replace"),
                        Path(err).read_text(errors="replace"), float(kib) / 1024, wall)


def model_args(provider: str, url: str, *, stream: bool = True) -> list[str]:
    """Flags that point `provider` at a loopback server (and keep nothing on disk)."""
    base = f"{url}/v1" if provider == "openai" else url
    return ["--provider", provider, "--api-base", base, "-m", "fake-model", "--no-session", "--no-checkpoints",
            *([] if stream else ["--no-stream"])]
