"""The JSON-RPC 2.0 side of one MCP connection, whatever carries its messages (stdio.py,
http.py): the `initialize` handshake, requests answered by id, and what the server sends.

We offer the newest handshake revision and take any the server counters with from
`HANDSHAKE_VERSIONS`. What the server asks of us is answered: `ping` with an empty result,
`roots/list` with the workspace (as Claude Code gives its project folder: a filesystem server
started without folders works in it), anything else (sampling, elicitation: we do not claim
them) with "method not found".
Its log notifications go to its log file (logfile.py: capped); `notifications/tools/list_changed`
is handed to `on_tools_changed` (the connection lists the tools again); other notifications
are dropped.
A batch (a JSON array, 2025-03-26) is read message by message. A request abandoned by its
caller (a timeout, Ctrl-C) is cancelled at the server with `notifications/cancelled`.

A transport subclasses `RpcPeer`: `_send` delivers one message (a ConnectionClosed when it
cannot), `_send_soon` one without waiting (a reply, a cancellation: a task unless the
transport can write at once), and whatever the server sends goes to `_receive` (or
`_receive_json`, for its text).

Our answers to what the server asks wait for it to take them: at most SOON_CAP of them here
(a transport that writes at once bounds their bytes instead: stdio.py). A server that asks
faster than it takes the answers is cut off (`_cut_off`): the connection ends on our side,
every request waiting fails saying why, and `on_cut_off` hears it (the connection stops the
server for the rest of the run).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any, TextIO

from ...core.errors import ConnectionClosed, CutOff, McpProtocolError, RpcError  # noqa: F401 (re-exported)
from . import logfile

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first: we offer the first
METHOD_NOT_FOUND = -32601
_OPENERS = ("{", "[", b"{", b"[")  # how a message (or a batch) starts
SOON_CAP = 256  # answers to the server's requests waiting to be sent, at most (then it is cut off)


class RpcPeer:
    """Requests in flight to one server, and the dispatch of what it sends."""

    pid: int | None = None  # the server's process, when it is ours (stdio)

    def __init__(self, log: TextIO) -> None:
        self.capabilities: dict[str, Any] = {}
        self.protocol_version = ""
        self._log = log
        self._ids = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._closed: BaseException | None = None
        self.on_tools_changed: Callable[[], None] | None = None
        self.on_cut_off: Callable[[CutOff], None] | None = None
        self._log_full = False
        self.roots: list[dict[str, str]] = []  # `{"uri": "file://…", "name": …}`: claimed when there are any
        self.server_info: dict[str, str] = {}  # its `serverInfo` (name, version), from `initialize`
        self._soon: set[asyncio.Future[None]] = set()

    @property
    def running(self) -> bool:
        return self._closed is None

    # -- the handshake and requests ----------------------------------------------------------

    async def initialize(self, client_name: str, client_version: str) -> None:
        """`initialize`, then `notifications/initialized`; McpProtocolError when the server
        counters with a revision we do not speak."""
        capabilities = {"roots": {"listChanged": False}} if self.roots else {}
        result = await self.request("initialize", {
            "protocolVersion": HANDSHAKE_VERSIONS[0], "capabilities": capabilities,
            "clientInfo": {"name": client_name, "version": client_version}})
        if not isinstance(result, dict):
            raise McpProtocolError("the server's initialize result is not a JSON object")
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_VERSIONS:
            raise McpProtocolError(f"the server speaks MCP revision {version!r}; recursive speaks "
                                f"{', '.join(HANDSHAKE_VERSIONS)}")
        offered = result.get("capabilities")
        self.capabilities = offered if isinstance(offered, dict) else {}
        info = result.get("serverInfo")
        if isinstance(info, dict):
            self.server_info = {key: str(info[key]) for key in ("name", "version") if key in info}
        self.protocol_version = version
        await self.notify("notifications/initialized")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The server's result for `method`; RpcError for its error, ConnectionClosed when it
        is gone. Cancelled (a timeout), the request is cancelled at the server too."""
        if self._closed is not None:
            raise ConnectionClosed(str(self._closed) if isinstance(self._closed, ConnectionClosed)
                                   else "the server closed the connection")
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
                self._send_soon({"jsonrpc": "2.0", "method": "notifications/cancelled",
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
        raise NotImplementedError

    def _send_soon(self, message: dict[str, Any]) -> None:
        """Send without waiting (a reply, a cancellation): a task, kept until it is done;
        SOON_CAP of them waiting cut the server off."""
        if self._closed is not None:
            return
        if len(self._soon) >= SOON_CAP:
            self._cut_off(f"the server sent requests faster than it took {SOON_CAP} answers")
            return
        task = asyncio.ensure_future(self._quietly(message))
        self._soon.add(task)
        task.add_done_callback(self._soon.discard)

    async def _quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):
            await self._send(message)

    async def _finish_soon(self, timeout: float) -> None:
        """Let the messages sent without waiting go out (`timeout` seconds at most)."""
        if self._soon:
            await asyncio.wait(list(self._soon), timeout=timeout)

    async def close(self, graceful: bool = True) -> None:
        """End the connection (and stop the server, when it is our process)."""
        raise NotImplementedError

    def answered(self, number: int) -> bool:
        """Whether the request `number` has its answer (or is no longer waited for)."""
        future = self._pending.get(number)
        return future is None or future.done()

    # -- what the server sends -----------------------------------------------------------------

    def _receive_json(self, text: bytes | str) -> None:
        """One message's JSON (or a batch's): a text that is not JSON (or nested too deep to
        read) is noted and skipped."""
        message = _parsed(text)
        if message is None:
            shown = text[:200].decode("utf-8", "replace") if isinstance(text, bytes) else text[:200]
            self._note(f"(not JSON from the server, skipped: {shown})")
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
            elif method == "notifications/tools/list_changed" and self.on_tools_changed is not None:
                self.on_tools_changed()
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
        elif method == "roots/list" and self.roots:
            reply["result"] = {"roots": self.roots}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
        self._send_soon(reply)

    def _note_log(self, params: Any) -> None:
        if isinstance(params, dict):
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            logger = f" {params['logger']}" if isinstance(params.get("logger"), str) else ""
            self._note(f"[{params.get('level', 'info')}{logger}] {text}")

    def _note(self, text: str) -> None:
        """A line in the server's log (LOG_CAP bytes of it at most: logfile.py)."""
        if not self._log_full:
            self._log_full = not logfile.append(self._log, (text + "\n").encode("utf-8", "replace"))

    def _cut_off(self, reason: str) -> None:
        """End the connection on our side (the server broke a limit): noted in its log, every
        request waiting fails with CutOff(`reason`), and `on_cut_off` hears of it."""
        if self._closed is not None:
            return
        error = CutOff(reason)
        self._note(f"(cut off: {reason})")
        self._close_pending(error)
        if self.on_cut_off is not None:
            self.on_cut_off(error)

    def _close_pending(self, error: BaseException) -> None:
        """The connection is gone: every request waiting fails with ConnectionClosed."""
        if self._closed is None:
            self._closed = error
        for future in self._pending.values():
            if not future.done():
                closed = ConnectionClosed(str(error) if isinstance(error, ConnectionClosed)
                                          else "the server closed the connection")
                closed.__cause__ = error if not isinstance(error, ConnectionClosed) else None
                future.set_exception(closed)


def _parsed(text: bytes | str) -> Any:
    """The JSON object or array `text` holds; None when it holds none (a junk line costs no
    exception: a flood of them is read fast)."""
    if text.lstrip()[:1] not in _OPENERS:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


async def stop_task(task: asyncio.Future[Any] | None) -> None:
    """Cancel `task` (a reader of the connection) and wait for it to end, however it ends."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
