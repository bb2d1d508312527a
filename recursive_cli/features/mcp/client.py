"""One MCP server, spoken to through the official `mcp` SDK: stdio, streamable HTTP or SSE.

The SDK's transports are anyio context managers, entered and left in one task: a connection
is held open by a task of its own (`_hold`), inside an anyio cancel scope that `close`
cancels, so the SDK's own shutdown runs (close stdin, wait, then stop the whole process
group). Calls come from the turn's task. A stdio server runs in its own session (process
group) with the environment of `recursive` plus its entry's `env` and a marker variable, by
which its pid is found; its stderr goes to `log`, never to the terminal.

The SDK is imported here only, when a server is started: `--help` and runs with no server
never load it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

from ...core.diagnostics import log_cause
from ...tools.base import carries, proc_pids
from .config import HttpServer, ServerEntry, StdioServer

MARKER = "RECURSIVE_MCP_SERVER"  # in a stdio server's environment: how its pid is found
CLIENT_NAME = "recursive"
_PAGE_CAP = 50  # tools/list pages read at most (a server whose cursor never ends cannot hang us)


class McpCallError(Exception):
    """A call that got no result: `closed` when the connection to the server is gone."""

    def __init__(self, message: str, closed: bool = False) -> None:
        super().__init__(message)
        self.closed = closed


class McpConnection:
    """One configured server: its status (`pending`, `connected`, `failed`), its tools, and
    the calls made to it."""

    def __init__(self, entry: ServerEntry, *, workspace: Path, log: TextIO, start_timeout: float) -> None:
        self.entry = entry
        self.name = entry.name
        self.status = "pending"
        self.error = ""
        self.tools: list[Any] = []  # the SDK's Tool models, as the server listed them
        self.has_resources = False
        self.pid: int | None = None
        self._workspace = workspace
        self._log = log
        self._start_timeout = start_timeout
        self._client: Any = None
        self._scope: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        """Connect: start the process (or open the HTTP session), initialize, list the tools.
        Ends `connected` or `failed` (with `error`), never raising."""
        if self.entry.spec is None:
            self._fail(self.entry.problem)
            return
        quiet_sdk_logging()
        # Importing the SDK (≈ 0.8 s of CPU the first time, seconds on a loaded machine) is our
        # cost, not the server's: done off the event loop, before the server's clock starts.
        await asyncio.to_thread(import_sdk, self.entry.spec)
        self._ready = asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name=f"mcp server {self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self._start_timeout)
        except asyncio.TimeoutError:
            await self.close()
            self._fail(f"did not start within {self._start_timeout:g} s")

    async def _hold(self) -> None:
        import anyio

        try:
            # The scope holds the whole connection (anyio scopes nest strictly): `close`, and
            # the start-up timeout through it, cancel the scope and the SDK shuts down inside.
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with AsyncExitStack() as stack:
                    client = await self._connect(stack)
                    self.tools = await _list_tools(client)
                    capabilities = client.server_capabilities
                    self.has_resources = capabilities is not None and capabilities.resources is not None
                    self._client, self.status = client, "connected"
                    self._ready.set()
                    await anyio.sleep_forever()
        except Exception as exc:  # the server's failure must not end the run
            log_cause(f"MCP server {self.name} failed", exc)
            self._fail(describe(exc))
        finally:
            self._client = None
            self._ready.set()

    async def _connect(self, stack: AsyncExitStack) -> Any:
        from mcp.client import Client
        from mcp_types import Implementation

        spec = self.entry.spec
        if isinstance(spec, StdioServer):
            transport: Any = self._stdio(spec)
        elif isinstance(spec, HttpServer) and spec.transport == "sse":
            from mcp.client.sse import sse_client

            transport = sse_client(spec.url, headers=dict(spec.headers))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            assert isinstance(spec, HttpServer)
            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0)))
            transport = streamable_http_client(spec.url, http_client=http)
        client = Client(transport, mode="legacy", cache=None,
                        client_info=Implementation(name=CLIENT_NAME, version=_version()))
        return await stack.enter_async_context(client)

    @contextlib.asynccontextmanager
    async def _stdio(self, spec: StdioServer) -> AsyncIterator[Any]:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        token = secrets.token_hex(8)
        env = {**os.environ, **dict(spec.env), MARKER: token}
        cwd = Path(spec.cwd).expanduser() if spec.cwd else self._workspace
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=env,
                                       cwd=str(self._workspace / cwd))
        async with stdio_client(params, errlog=self._log) as streams:
            self.pid = find_server(token)
            yield streams

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float) -> Any:
        """The server's CallToolResult; McpCallError when there is none (`closed` set when the
        connection is gone), TimeoutError after `timeout` seconds."""
        client = self._live()
        try:
            return await asyncio.wait_for(client.call_tool(name, arguments), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except Exception as exc:
            raise self._call_error(exc) from exc

    async def list_resources(self) -> list[Any]:
        client = self._live()
        try:
            return await _all_pages(client.list_resources, "resources")
        except Exception as exc:
            raise self._call_error(exc) from exc

    async def read_resource(self, uri: str, timeout: float) -> Any:
        client = self._live()
        try:
            return await asyncio.wait_for(client.read_resource(uri), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except Exception as exc:
            raise self._call_error(exc) from exc

    def _live(self) -> Any:
        if self._client is None or self.status != "connected":
            raise McpCallError(f"MCP server {self.name!r} is not running" +
                               (f" ({self.error})" if self.error else ""), closed=True)
        if self.pid is not None and not process_alive(self.pid):
            raise McpCallError(f"MCP server {self.name!r} has exited", closed=True)
        return self._client

    def _call_error(self, exc: Exception) -> McpCallError:
        from mcp_types import CONNECTION_CLOSED

        code = getattr(exc, "code", None)
        closed = code == CONNECTION_CLOSED or (self.pid is not None and not process_alive(self.pid))
        return McpCallError(describe(exc), closed=closed)

    async def close(self) -> None:
        """Stop the server (its whole process group) and wait until it is stopped."""
        task = self._task
        if task is None:
            return
        if self._scope is not None:
            self._scope.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        self._task = None
        if self.pid is not None:  # a group member that outlived the SDK's escalation
            kill_group(self.pid)

    def kill_now(self) -> None:
        """Kill the server's process group at once (the process is about to exit)."""
        if self.pid is not None:
            kill_group(self.pid)

    def _fail(self, reason: str) -> None:
        self.status, self.error = "failed", reason
        tail = log_tail(self._log)
        if tail and tail not in reason:
            self.error = f"{reason} (stderr: {tail})"


async def _list_tools(client: Any) -> list[Any]:
    """Every tool the server lists, page by page."""
    return await _all_pages(client.list_tools, "tools")


async def _all_pages(fetch: Any, field: str) -> list[Any]:
    """The items in `field` of every page `fetch(cursor=…)` returns, `_PAGE_CAP` pages at most."""
    items: list[Any] = []
    cursor = None
    for _ in range(_PAGE_CAP):
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def describe(exc: BaseException) -> str:
    """One line for a failure: the first leaf of an exception group, a missing command named."""
    while isinstance(getattr(exc, "exceptions", None), (list, tuple)) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]  # (an exception group; Python 3.10 has no name for it)
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    if isinstance(exc, PermissionError) and exc.filename:
        return f"cannot run {exc.filename}: permission denied"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    name = type(exc).__name__
    if text.lower() == "connection closed":
        return "the server closed the connection"
    if name == "MCPError":
        return text or "the server answered with an error"
    if not text:
        return name
    return f"{name}: {text}" if name not in text else text


def find_server(token: str) -> int | None:
    """The pid of our child whose environment carries `MARKER=token` (None without /proc)."""
    wanted = f"{MARKER}={token}".encode()
    me = os.getpid()
    for pid in proc_pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
            if parent == me and carries(pid, wanted):
                return pid
        except (OSError, IndexError, ValueError):
            continue
    return None


def process_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not Path("/proc").is_dir()
    except (IndexError, ValueError):
        return False


def kill_group(pgid: int) -> None:
    """SIGKILL process group `pgid` (the server and all it started); gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def log_tail(log: TextIO) -> str:
    """The last non-empty line a server wrote to its log, shortened; '' when none. (Read with
    pread: the server shares the file's offset.)"""
    try:
        log.flush()
        fd = log.fileno()
        size = os.fstat(fd).st_size
        start = max(size - 4096, 0)
        text = os.pread(fd, size - start, start).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1]
    return last if len(last) <= 200 else last[:199] + "…"


def import_sdk(spec: StdioServer | HttpServer) -> None:
    """Load the parts of the SDK a connection to `spec` uses."""
    import mcp.client  # noqa: F401
    import mcp_types  # noqa: F401

    if isinstance(spec, StdioServer):
        import mcp.client.stdio  # noqa: F401
    elif spec.transport == "sse":
        import mcp.client.sse  # noqa: F401
    else:
        import mcp.client.streamable_http  # noqa: F401


def quiet_sdk_logging() -> None:
    """Keep the SDK's log records off the terminal (Python prints unhandled warnings to
    stderr); `-v` still shows failures through `log_cause`."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("recursive-cli")
    except Exception:
        return "0"
