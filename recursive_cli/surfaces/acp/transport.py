"""The stdio line transport under the ACP connection: one JSON-RPC message per line.

The library's own reader drops a line that is not JSON with a log line; JSON-RPC 2.0 wants an
answer, so here a line that is not JSON gets a Parse error (-32700) and one that is not a
request, notification or response gets an Invalid Request error (-32600), both with `id`
null (or the message's own), and the connection goes on.

The protocol owns stdout: `claim_stdout` moves the process's fd 1 onto stderr, so a stray
write (a library's print, a child that inherited it) cannot break a message in two.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from typing import Any, BinaryIO

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def claim_stdout() -> BinaryIO:
    """The process's stdout, kept for the protocol alone; fd 1 (and `sys.stdout`) now go to stderr."""
    sys.stdout.flush()
    private = os.fdopen(os.dup(1), "wb")  # (buffered: a write goes out whole, flushed per message)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return private


class StdioTransport:
    """JSON-RPC messages as lines on stdin and `out` (the library's message `Transport`)."""

    def __init__(self, out: BinaryIO, stdin: BinaryIO | None = None) -> None:
        self._out = out
        self._stdin = stdin if stdin is not None else sys.stdin.buffer
        self._lines: asyncio.Queue[bytes | None] | None = None
        self._write_lock = threading.Lock()

    def _start(self) -> asyncio.Queue[bytes | None]:
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def pump() -> None:  # a daemon thread: a blocked read never holds the process at exit
            try:
                for raw in iter(self._stdin.readline, b""):
                    loop.call_soon_threadsafe(lines.put_nowait, raw)
            except (OSError, ValueError):
                pass
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=pump, name="acp-stdin", daemon=True).start()
        return lines

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        try:
            with self._write_lock:
                self._out.write(data)
                self._out.flush()
        except (OSError, ValueError) as exc:  # the client has gone (its end of the pipe closed)
            raise ConnectionError(f"the client is gone: {exc}") from None

    async def receive(self) -> dict[str, Any] | None:
        """The next message; None at the end of stdin."""
        if self._lines is None:
            self._lines = self._start()
        while True:
            raw = await self._lines.get()
            if raw is None:
                return None
            if not raw.strip():
                continue
            try:
                message = json.loads(raw)
            except ValueError as exc:
                await self._error(None, PARSE_ERROR, "Parse error", f"the line is not JSON: {exc}")
                continue
            problem = _not_a_message(message)
            if problem:
                request_id = message.get("id") if isinstance(message, dict) else None
                await self._error(request_id if isinstance(request_id, (str, int)) else None,
                                  INVALID_REQUEST, "Invalid Request", problem)
                continue
            return dict(message)

    async def _error(self, request_id: str | int | None, code: int, text: str, details: str) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id,
                         "error": {"code": code, "message": text, "data": {"details": details}}})

    async def close(self) -> None:
        return None


def _not_a_message(message: Any) -> str:
    """Why `message` is no JSON-RPC request, notification or response ("" when it is one)."""
    if not isinstance(message, dict):
        return f"a message is a JSON object, not {type(message).__name__}"
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return "`method` must be a string"
    if method is None and "id" not in message:
        return "a message needs a `method` (request, notification) or an `id` (response)"
    if "id" in message and not isinstance(message["id"], (str, int, type(None))):
        return "`id` must be a string, a number or null"
    return ""
