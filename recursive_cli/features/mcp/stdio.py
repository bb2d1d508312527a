"""An MCP server over stdio, spoken to by us: JSON-RPC 2.0 (rpc.py), one message a line, on
the server's stdin and stdout (the protocol's stdio transport).

Why not the `mcp` SDK: importing it cost ≈ 0.45 s of CPU before the first byte reached the
server (its package loads its server half, uvicorn and starlette among it), which every run
with a server paid, and its install pulled in twelve packages more. A line that is not JSON
is noted in the server's log and skipped; a line longer than LINE_CAP ends the connection
rather than our memory.

The server gets HOME, LOGNAME, PATH, SHELL, TERM and USER of our environment and its entry's
`env` (which wins), as the `mcp` SDK's client gives them (`get_default_environment`): never
our API keys, nor anything else it was not given. Its stderr is copied into its log file
(logfile.py: LOG_CAP bytes at most, the rest read and dropped). Our answers to its requests
wait in the pipe's buffer for it to read them, OUT_CAP bytes of them at most: a server that
asks and does not read is cut off (rpc.py). It runs in a session (process group) of its own,
so that stopping it stops what it started. Stopping follows the protocol's order: close its
stdin, give it 2 s to exit, SIGTERM its group, 2 s more, SIGKILL. The tests hold this against
the SDK's own client on the same servers (tests/mcp/test_stdio_session.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from ...net.caps import LINE_CAP  # (bytes of one message at most: one cap for every network peer's line)
from . import logfile
from .rpc import ConnectionClosed, RpcPeer, stop_task

GRACE = 2.0  # seconds a server has to exit after its stdin closes, and again after SIGTERM
OUT_CAP = 8 << 20  # bytes of our answers a server may leave unread (a deaf one cannot fill our memory)
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")  # the `mcp` SDK's list (POSIX)
_CHUNK = 1 << 16


class StdioSession(RpcPeer):
    """One running stdio server and the requests in flight to it."""

    def __init__(self, process: asyncio.subprocess.Process, log: TextIO) -> None:
        super().__init__(log)
        self.process = process
        self.pid: int = process.pid
        self._write_lock = asyncio.Lock()
        self._awaited = 0  # bytes of our own requests written and not yet drained (not the server's fault)
        self._reader = asyncio.ensure_future(self._read())
        self._stderr = asyncio.ensure_future(self._copy_stderr())

    @classmethod
    async def spawn(cls, command: str, args: list[str], *, env: Mapping[str, str], cwd: Path,
                    log: TextIO) -> StdioSession:
        """Start `command args` with `env` over INHERITED_ENV of ours, its stderr copied into
        `log`. OSError when it cannot start."""
        process = await asyncio.create_subprocess_exec(
            command, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=server_env(env), cwd=str(cwd), start_new_session=True)
        return cls(process, log)

    # -- sending ----------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        size = 0
        try:
            size = self._write_now(message)
            self._awaited += size
            async with self._write_lock:
                await stdin.drain()
        except (ConnectionError, OSError, RuntimeError) as exc:  # (a closed transport raises RuntimeError)
            self._close_pending(exc)
            raise ConnectionClosed(str(self._closed) if isinstance(self._closed, ConnectionClosed)
                                   else "the server closed the connection") from exc
        finally:
            self._awaited -= size

    def _send_soon(self, message: dict[str, Any]) -> None:
        """Write at once (a reply, a cancellation); the server is cut off when more than
        OUT_CAP bytes of what we sent it on our own wait unread."""
        stdin = self.process.stdin
        if self._closed is not None or stdin is None:
            return
        if stdin.transport.get_write_buffer_size() - self._awaited > OUT_CAP:
            self._cut_off(f"the server does not read its input: over {OUT_CAP / (1 << 20):g} MiB of our "
                          "answers to its requests wait unread")
            return
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._write_now(message)

    def _write_now(self, message: dict[str, Any]) -> int:
        """Hand `message` to the pipe; its size in bytes."""
        stdin = self.process.stdin
        assert stdin is not None
        if stdin.is_closing():
            raise ConnectionResetError("the server's stdin is closed")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        stdin.write(data)
        return len(data)

    def _cut_off(self, reason: str) -> None:
        stdin = self.process.stdin
        if stdin is not None:
            stdin.transport.abort()  # (what it left unread goes now, not at the close)
        super()._cut_off(reason)

    # -- what the server sends -----------------------------------------------------------------

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        held: list[bytes] = []  # the start of a line still coming (joined once, not per chunk)
        size = 0
        error: BaseException = ConnectionClosed("the server closed the connection")
        try:
            while self._closed is None and (chunk := await stdout.read(_CHUNK)):
                pieces = chunk.split(b"\n")
                if len(pieces) > 1:
                    pieces[0] = b"".join([*held, pieces[0]])
                    held, size = [], 0
                    for line in pieces[:-1]:
                        if line.strip():
                            self._receive_json(line)
                if pieces[-1]:
                    held.append(pieces[-1])
                    size += len(pieces[-1])
                    if size > LINE_CAP:
                        error = ConnectionClosed(f"the server sent a line over {LINE_CAP / (1 << 20):g} MiB")
                        self._note(f"(stopped reading: {error})")
                        break
        except (ConnectionError, OSError) as exc:
            error = exc
        self._close_pending(error)

    async def _copy_stderr(self) -> None:
        """The server's stderr into its log while it has room; the rest is read and dropped (a
        server blocked on a full pipe would stop answering)."""
        stderr = self.process.stderr
        assert stderr is not None
        full = False
        with contextlib.suppress(ConnectionError, OSError, ValueError):
            while chunk := await stderr.read(_CHUNK):
                full = full or not logfile.append(self._log, chunk)

    # -- stopping -----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.process.returncode is None and self._closed is None

    async def close(self, graceful: bool = True) -> None:
        """Stop the server: stdin closed and `GRACE` to exit (when `graceful`), then SIGTERM to
        its group and `GRACE` more, then SIGKILL; its pipes closed."""
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if not (graceful and await self._exited(GRACE)):
            _signal_group(self.pid, signal.SIGTERM)
            if not await self._exited(GRACE):
                _signal_group(self.pid, signal.SIGKILL)
                await self._exited(GRACE)
        await stop_task(self._reader)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
            # (its last words, for the failure message: a child it left may hold the pipe open)
            await asyncio.wait_for(asyncio.shield(self._stderr), 0.5)
        self._stderr.cancel()
        self._close_pending(ConnectionClosed("the connection was closed"))
        transport = getattr(self.process, "_transport", None)  # (else it warns when collected)
        if transport is not None:
            transport.close()

    async def _exited(self, within: float) -> bool:
        """Whether the server exited within `within` seconds (its return code: its pipes may
        stay open in a child it left behind)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while self.process.returncode is None:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True


def server_env(own: Mapping[str, str]) -> dict[str, str]:
    """A server's environment: INHERITED_ENV of ours, then `own` (its entry's `env`)."""
    inherited = {name: os.environ[name] for name in INHERITED_ENV
                 if name in os.environ and not os.environ[name].startswith("()")}  # (not a shell function)
    return {**inherited, **own}


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
