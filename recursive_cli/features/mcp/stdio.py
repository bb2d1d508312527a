"""An MCP server over stdio, spoken to by us: JSON-RPC 2.0, one message a line, on the
server's stdin and stdout (the protocol's stdio transport, its `initialize` handshake).

Why not the `mcp` SDK here: importing it costs ≈ 0.45 s of CPU before the first byte reaches
the server (its package loads its server half, uvicorn and starlette among it), which every
run with a local server paid. The exchange itself is small: `initialize` (we offer the newest
handshake revision and take any the server counters with from `HANDSHAKE_VERSIONS`),
`notifications/initialized`, then requests answered by id. What the server asks of us is
answered too: `ping` with an empty result, anything else (roots, sampling, elicitation: we do
not claim them) with "method not found". Its log notifications go to its log file beside its
stderr; other notifications are dropped. A line that is not JSON is noted in the log and
skipped; a batch (a JSON array, 2025-03-26) is read message by message.

The server runs in a session (process group) of its own, so that stopping it stops what it
started. Stopping follows the protocol's order: close its stdin, give it 2 s to exit, SIGTERM
its group, 2 s more, SIGKILL. A request abandoned by its caller (a timeout) is cancelled with
`notifications/cancelled`. The tests hold this against the SDK's own client on the same
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

from .models import ProtocolError

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first: we offer the first
METHOD_NOT_FOUND = -32601
GRACE = 2.0  # seconds a server has to exit after its stdin closes, and again after SIGTERM
LINE_CAP = 64 << 20  # bytes of one message at most (a server that never ends its line cannot fill our memory)
_CHUNK = 1 << 16


class RpcError(Exception):
    """An error the server answered a request with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message or f"error {code}")
        self.code = code
        self.data = data


class ConnectionClosed(Exception):
    """The server's stdout ended (or its stdin broke): no answer will come."""


class StdioSession:
    """One running stdio server and the requests in flight to it."""

    def __init__(self, process: asyncio.subprocess.Process, log: TextIO) -> None:
        self.process = process
        self.pid: int = process.pid
        self.capabilities: dict[str, Any] = {}
        self.protocol_version = ""
        self._log = log
        self._ids = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._closed: BaseException | None = None
        self._write_lock = asyncio.Lock()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def spawn(cls, command: str, args: list[str], *, env: Mapping[str, str], cwd: Path,
                    log: TextIO) -> StdioSession:
        """Start `command args` with its stderr in `log`. OSError when it cannot start."""
        log.flush()
        process = await asyncio.create_subprocess_exec(
            command, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log,
            env=dict(env), cwd=str(cwd), start_new_session=True)
        return cls(process, log)

    # -- the handshake and requests ----------------------------------------------------------

    async def initialize(self, client_name: str, client_version: str) -> None:
        """`initialize`, then `notifications/initialized`; ProtocolError when the server
        counters with a revision we do not speak."""
        result = await self.request("initialize", {
            "protocolVersion": HANDSHAKE_VERSIONS[0], "capabilities": {},
            "clientInfo": {"name": client_name, "version": client_version}})
        if not isinstance(result, dict):
            raise ProtocolError("the server's initialize result is not a JSON object")
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_VERSIONS:
            raise ProtocolError(f"the server speaks MCP revision {version!r}; recursive speaks "
                             f"{', '.join(HANDSHAKE_VERSIONS)}")
        capabilities = result.get("capabilities")
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.protocol_version = version
        await self.notify("notifications/initialized")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The server's result for `method`; RpcError for its error, ConnectionClosed when it
        is gone. Cancelled (a timeout), the request is cancelled at the server too."""
        if self._closed is not None:
            raise ConnectionClosed("the server closed the connection")
        self._ids += 1
        number = self._ids
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[number] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            return await future
        except asyncio.CancelledError:
            answered = future.done() and not future.cancelled()  # (the task's cancel cancels the future too)
            if not answered and self._closed is None:
                self._write_now({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": number, "reason": "the client stopped waiting"}})
            raise
        finally:
            self._pending.pop(number, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

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
                            self._receive_line(line)
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

    def _receive_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._note(f"(not JSON on stdout, skipped: {line[:200].decode('utf-8', 'replace')})")
            return
        for one in message if isinstance(message, list) else [message]:
            if isinstance(one, dict):
                self._receive(one)

    def _receive(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._answer(message["id"], method)
            elif method == "notifications/message":
                self._note_log(message.get("params"))
            return
        future = self._pending.get(message["id"]) if isinstance(message.get("id"), int) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            future.set_exception(RpcError(code if isinstance(code, int) else 0, str(error.get("message") or ""),
                                          error.get("data")))
        else:
            future.set_result(message.get("result"))

    def _answer(self, number: Any, method: str) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": number}
        if method == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._write_now(reply)

    def _note_log(self, params: Any) -> None:
        if isinstance(params, dict):
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            logger = f" {params['logger']}" if isinstance(params.get("logger"), str) else ""
            self._note(f"[{params.get('level', 'info')}{logger}] {text}")

    def _note(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._log.write(text + "\n")
            self._log.flush()

    def _close_pending(self, error: BaseException) -> None:
        if self._closed is None:
            self._closed = error
        for future in self._pending.values():
            if not future.done():
                closed = ConnectionClosed(str(error) if isinstance(error, ConnectionClosed)
                                          else "the server closed the connection")
                closed.__cause__ = error if not isinstance(error, ConnectionClosed) else None
                future.set_exception(closed)

    # -- stopping -----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.process.returncode is None

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
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
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
