"""An MCP server inside the Agent SDK client's own process (`"type": "sdk"`: the Python SDK's
`create_sdk_mcp_server`, the TypeScript SDK's `createSdkMcpServer`), spoken to as Claude Code
does: each JSON-RPC message travels in an `mcp_message` control request over the stream-json
channel (`{"subtype": "mcp_message", "server_name", "message"}`), and a request's answer comes
back as the control response's `mcp_response`. The headless surface hands the manager its
channel (`McpManager.sdk_channel`); elsewhere (a plain `recursive run`) there is no client to
ask, and such a server fails to start saying so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from .rpc import ConnectionClosed, RpcPeer

# (server name, JSON-RPC message) → the control response's body
SdkChannel = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
NO_CLIENT = ("a server in the Agent SDK client's own process (type sdk): it is reached only when "
             "an Agent SDK runs recursive")


class SdkPeer(RpcPeer):
    """One SDK server, through the client's control channel."""

    def __init__(self, name: str, channel: SdkChannel, log: TextIO) -> None:
        super().__init__(log)
        self.name = name
        self._channel = channel

    async def _send(self, message: dict[str, Any]) -> None:
        try:
            body = await self._channel(self.name, message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # (the channel's ControlError: the client refused, or is gone)
            raise ConnectionClosed(f"the Agent SDK client did not pass the message on: {exc}") from exc
        answer = body.get("mcp_response") if isinstance(body, dict) else None
        if "method" in message and "id" in message and isinstance(answer, dict):
            self._receive({**answer, "id": message["id"]})  # (the answer to this very message)

    async def close(self, graceful: bool = True) -> None:
        """(The server lives in the client: nothing of ours to stop.)"""
        for task in list(self._soon):
            task.cancel()
        self._close_pending(ConnectionClosed("the connection was closed"))
