"""The demo zygote: one process per test worker that has imported demo_server.py (and with it
the `mcp` SDK, ≈ 1.3 s of CPU) once, and forks a fresh demo server for each demo_launch.py
that connects. Run as `python demo_zygote.py SOCKET`; it prints `ready` once it listens.

A launcher sends its stdin, stdout and stderr, a pidfd of itself, and its argv, environment and
working directory. The forked server takes those fds as its own 0, 1 and 2, that environment
and folder, runs `demo_server.main(argv)` (so its pid file holds its own pid) and is killed the
moment its launcher is gone. The zygote tells the launcher the server's pid, then its wait
status. It exits when the process that started it does.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import selectors
import signal
import socket
import sys
import threading
import traceback
from typing import Any

import anyio._core._sockets  # noqa: F401  (what the server imports when it runs: not in each fork)
import anyio.streams.stapled  # noqa: F401
import anyio.streams.tls  # noqa: F401
import demo_server

SERVER = demo_server.__file__


def read_request(conn: socket.socket) -> tuple[list[int], dict[str, Any]] | None:
    """The fds and the request a launcher sent; None when it went away first."""
    conn.settimeout(10)
    fds: list[int] = []
    try:
        header, fds, _, _ = socket.recv_fds(conn, 8, 4)
        while len(header) < 8:
            more = conn.recv(8 - len(header))
            if not more:
                raise EOFError
            header += more
        size = int.from_bytes(header, "big")
        payload = b""
        while len(payload) < size:
            more = conn.recv(min(size - len(payload), 1 << 16))
            if not more:
                raise EOFError
            payload += more
        if len(fds) != 4:
            raise EOFError
    except (OSError, EOFError):
        for fd in fds:
            os.close(fd)
        return None
    conn.settimeout(None)
    return fds, marshal.loads(payload)


def serve(fds: list[int], request: dict[str, Any]) -> None:
    """(In the fork.) Become the demo server of the launcher that sent `fds`; never returns."""
    code = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        launcher = fds[3]
        threading.Thread(target=die_with, args=(launcher,), daemon=True).start()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [SERVER, *request["argv"]]
        demo_server.main(list(request["argv"]))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:  # as Python does: die of the SIGINT
        flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
    finally:
        flush()
        os._exit(code)


def die_with(launcher: int) -> None:
    """Wait for the launcher (its pidfd becomes readable when it ends), then die at once."""
    poller = selectors.DefaultSelector()
    poller.register(launcher, selectors.EVENT_READ)
    while not poller.select():
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def main(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    parent = os.pidfd_open(os.getppid())
    selector.register(parent, selectors.EVENT_READ, "parent")
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd: (pid, launcher's connection)
    gc.collect()
    gc.freeze()  # (the forks then leave these pages shared)
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.data == "parent":  # (its fixture did not stop us: clean up ourselves)
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    os.rmdir(os.path.dirname(path))
                os._exit(0)
            if key.data == "accept":
                conn, _ = listener.accept()
                got = read_request(conn)
                if got is None:
                    conn.close()
                    continue
                fds, request = got
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    listener.close()
                    os.close(parent)
                    for pidfd, (_, other) in children.items():
                        os.close(pidfd)
                        other.close()
                    conn.close()
                    serve(fds, request)
                for fd in fds:
                    os.close(fd)
                try:
                    conn.sendall(b"pid %d\n" % pid)
                except OSError:
                    pass  # the launcher is gone; the server sees it and dies
                pidfd = os.pidfd_open(pid)
                children[pidfd] = (pid, conn)
                selector.register(pidfd, selectors.EVENT_READ, "child")
                continue
            pidfd = key.fd
            pid, conn = children.pop(pidfd)
            selector.unregister(pidfd)
            os.close(pidfd)
            _, status = os.waitpid(pid, 0)
            try:
                conn.sendall(b"status %d\n" % status)
            except OSError:
                pass
            conn.close()


if __name__ == "__main__":
    main(sys.argv[1])
