"""An MCP server over streamable HTTP or legacy SSE, spoken to through the official `mcp` SDK.

The SDK's transports are anyio context managers, entered and left in one task: the
connection is held open by a task of its own (`_hold`), inside an anyio cancel scope that
`close` cancels, so the SDK's own shutdown runs. Requests come from the turn's task, named by
their JSON-RPC method (as our stdio session takes them), and their results come back as the
protocol's JSON (the SDK's models dumped by alias), so the rest of the feature sees one shape
whichever transport carried it. The SDK's errors become ours: its closed connection
`ConnectionClosed`, an error answer `RpcError`.

Importing the SDK costs ≈ 0.45 s of CPU: `import_sdk` is called off the event loop, before
the server's start-up clock runs.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from .config import HttpServer
from .stdio import ConnectionClosed, RpcError

CONNECTION_CLOSED = -32000  # the SDK's code for a connection that went away (mcp_types.CONNECTION_CLOSED)


class SdkSession:
    """One HTTP or SSE server, connected through the SDK's `Client`."""

    pid: int | None = None  # (no process of ours)

    def __init__(self, spec: HttpServer) -> None:
        self.spec = spec
        self.capabilities: dict[str, Any] = {}
        self._client: Any = None
        self._scope: Any = None
        self._ready = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    async def initialize(self, client_name: str, client_version: str) -> None:
        """Connect (the SDK runs the handshake as it enters its client); the failure raised."""
        self._task = asyncio.create_task(self._hold(client_name, client_version), name=f"mcp {self.spec.url}")
        await self._ready.wait()
        if self._error is not None:
            raise self._error

    async def _hold(self, client_name: str, client_version: str) -> None:
        import anyio

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with AsyncExitStack() as stack:
                    client = await self._connect(stack, client_name, client_version)
                    capabilities = client.server_capabilities
                    self.capabilities = ({} if capabilities is None else
                                         capabilities.model_dump(by_alias=True, mode="json", exclude_none=True))
                    self._client = client
                    self._ready.set()
                    await anyio.sleep_forever()
        except Exception as exc:  # reported by `initialize`, or seen by the next request
            self._error = exc
        finally:
            self._client = None
            self._ready.set()

    async def _connect(self, stack: AsyncExitStack, client_name: str, client_version: str) -> Any:
        from mcp.client import Client
        from mcp_types import Implementation

        spec = self.spec
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            transport: Any = sse_client(spec.url, headers=dict(spec.headers))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0)))
            transport = streamable_http_client(spec.url, http_client=http)
        client = Client(transport, mode="legacy", cache=None,
                        client_info=Implementation(name=client_name, version=client_version))
        return await stack.enter_async_context(client)

    @property
    def running(self) -> bool:
        return self._client is not None

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The result of `method` as the protocol's JSON."""
        client = self._client
        if client is None:
            raise ConnectionClosed("the server closed the connection") from self._error
        params = params or {}
        try:
            if method == "tools/list":
                result = await client.list_tools(cursor=params.get("cursor"))
            elif method == "tools/call":
                result = await client.call_tool(params["name"], params.get("arguments") or {})
            elif method == "resources/list":
                result = await client.list_resources(cursor=params.get("cursor"))
            elif method == "resources/read":
                result = await client.read_resource(params["uri"])
            else:
                raise RpcError(-32601, f"Method not found: {method}")
        except Exception as exc:
            code = getattr(exc, "code", None)
            if type(exc).__name__ == "MCPError" and isinstance(code, int):
                if code == CONNECTION_CLOSED:
                    raise ConnectionClosed("the server closed the connection") from exc
                raise RpcError(code, str(exc)) from exc
            raise
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def close(self, graceful: bool = True) -> None:
        task = self._task
        if task is None:
            return
        if self._scope is not None:
            self._scope.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):  # noqa: S110 (its failure was reported at start)
            pass
        self._task = None


def import_sdk(spec: HttpServer) -> None:
    """Load the parts of the SDK a connection to `spec` uses."""
    import mcp.client  # noqa: F401
    import mcp_types  # noqa: F401

    if spec.transport == "sse":
        import mcp.client.sse  # noqa: F401
    else:
        import mcp.client.streamable_http  # noqa: F401


def quiet_sdk_logging() -> None:
    """Keep the SDK's log records off the terminal (Python prints unhandled warnings to
    stderr); `-v` still shows failures through `log_cause`."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())
