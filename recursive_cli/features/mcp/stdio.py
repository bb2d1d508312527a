"""An MCP server over stdio, spoken to by us: JSON-RPC 2.0 (rpc.py), one message a line, on
the server's stdin and stdout (the protocol's stdio transport).

Why not the `mcp` SDK: importing it cost ≈ 0.45 s of CPU before the first byte reached the
server (its package loads its server half, uvicorn and starlette among it), which every run
with a server paid, and its install pulled in twelve packages more. A line that is not JSON is noted in the server's log and skipped; a
line longer than LINE_CAP ends the connection rather than our memory.

Its stderr is copied into its log file, LOG_CAP bytes at most (the rest is read and dropped).
The server runs in a session (process group) of its own, so that stopping it stops what it
started. Stopping follows the protocol's order: close its stdin, give it 2 s to exit, SIGTERM
its group, 2 s more, SIGKILL. The tests hold this against the SDK's own client on the same
servers (tests/mcp/test_stdio_session.py).
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

from .rpc import ConnectionClosed, RpcPeer, stop_task

GRACE = 2.0  # seconds a server has to exit after its stdin closes, and again after SIGTERM
LINE_CAP = 64 << 20  # bytes of one message at most (a server that never ends its line cannot fill our memory)
LOG_CAP = 8 << 20  # bytes of a server's stderr kept in its log file, restarts included (nor can it fill the disk)
_CHUNK = 1 << 16


class StdioSession(RpcPeer):
    """One running stdio server and the requests in flight to it."""

    def __init__(self, process: asyncio.subprocess.Process, log: TextIO) -> None:
        super().__init__(log)
        self.process = process
        self.pid: int = process.pid
        self._write_lock = asyncio.Lock()
        self._reader = asyncio.ensure_future(self._read())
        self._stderr = asyncio.ensure_future(self._copy_stderr())

    @classmethod
    async def spawn(cls, command: str, args: list[str], *, env: Mapping[str, str], cwd: Path,
                    log: TextIO) -> StdioSession:
        """Start `command args`, its stderr copied into `log` (LOG_CAP bytes of it). OSError
        when it cannot start."""
        process = await asyncio.create_subprocess_exec(
            command, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=dict(env), cwd=str(cwd), start_new_session=True)
        return cls(process, log)

    # -- sending ----------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            self._write_now(message)
            async with self._write_lock:
                await stdin.drain()
        except (ConnectionError, OSError, RuntimeError) as exc:  # (a closed transport raises RuntimeError)
            self._close_pending(exc)
            raise ConnectionClosed("the server closed the connection") from exc

    def _send_soon(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._write_now(message)

    def _write_now(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        if stdin.is_closing():
            raise ConnectionResetError("the server's stdin is closed")
        stdin.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    # -- what the server sends -----------------------------------------------------------------

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        held: list[bytes] = []  # the start of a line still coming (joined once, not per chunk)
        size = 0
        error: BaseException = ConnectionClosed("the server closed the connection")
        try:
            while chunk := await stdout.read(_CHUNK):
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
        """The server's stderr into its log, LOG_CAP bytes of the file at most; the rest is
        read and dropped (a server blocked on a full pipe would stop answering)."""
        stderr = self.process.stderr
        assert stderr is not None
        cut = False
        with contextlib.suppress(ConnectionError, OSError, ValueError):
            while chunk := await stderr.read(_CHUNK):
                if cut:
                    continue
                self._log.flush()
                fd = self._log.fileno()
                room = LOG_CAP - os.fstat(fd).st_size
                if room > 0:
                    os.write(fd, chunk[:room])
                if room < len(chunk):
                    cut = True
                    os.write(fd, f"\n(stderr past {LOG_CAP / (1 << 20):g} MiB is not kept)\n".encode())

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


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
