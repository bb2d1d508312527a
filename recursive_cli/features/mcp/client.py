"""One MCP server, spoken to by us: stdio (stdio.py), streamable HTTP or HTTP with SSE
(http.py), the JSON-RPC of each in rpc.py; its tools, calls and resources as our typed values
(models.py). (The official `mcp` SDK is the tests' oracle, not a part of `recursive`.)

A stdio server runs in its own session (process group) with HOME, LOGNAME, PATH, SHELL, TERM
and USER of our environment plus its entry's `env` (stdio.py); its stderr goes to `log`, never
to the terminal (the server's log notices too, for every transport). The tools it lists are
screened (tools.py: `screen`), those left out named in `left_out`. A server the session cuts
off (it would not read our answers: rpc.py) is failed for the rest of the run: stopped, its
calls errors, `on_failed` told.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, TypeVar

from ...core.diagnostics import log_cause
from ...core.errors import McpCallError, McpProtocolError
from ...core.procs import process_alive
from .config import HttpServer, SdkServer, ServerEntry, StdioServer
from .http import HttpError, HttpSession, SseSession
from .models import (
    CallResult,
    Content,
    Contents,
    Resource,
    ServerPrompt,
    ServerTool,
    call_result,
    prompt_messages,
    prompts_page,
    read_result,
    resources_page,
    tools_page,
)
from .rpc import ConnectionClosed, CutOff, RpcError, RpcPeer
from .sdk_peer import NO_CLIENT, SdkChannel, SdkPeer
from .stdio import StdioSession
from .tools import screen

CLIENT_NAME = "recursive"
_PAGE_CAP = 50  # list pages read at most (a server whose cursor never ends cannot hang us)
T = TypeVar("T")


class McpConnection:
    """One configured server: its status (`pending`, `connected`, `failed`), its tools, and
    the calls made to it."""

    def __init__(self, entry: ServerEntry, *, workspace: Path, log: TextIO, start_timeout: float,
                 sdk_channel: SdkChannel | None = None, roots: Sequence[Path] = ()) -> None:
        self.entry = entry
        self._sdk_channel = sdk_channel
        self._roots = tuple(roots) or (workspace,)  # given to a server that asks (`roots/list`)
        self.name = entry.name
        self.status = "pending"
        self.error = ""
        self.tools: list[ServerTool] = []
        self.left_out: list[str] = []  # a line for each tool it lists that is not offered (`screen`)
        self.prompts: list[ServerPrompt] = []
        self.server_info: dict[str, str] = {}  # name and version, as it introduced itself
        self.has_resources = False
        self.pid: int | None = None
        self._workspace = workspace
        self._log = log
        self._start_timeout = start_timeout
        self._session: RpcPeer | None = None
        self.on_tools_changed: Callable[[McpConnection], None] | None = None  # after a new listing
        self.on_failed: Callable[[McpConnection], None] | None = None  # cut off while connected
        self._stopping: asyncio.Future[None] | None = None
        self._cut: CutOff | None = None  # why the session cut the server off, if it did
        self._relisting: asyncio.Future[None] | None = None
        self._relist_again = False

    async def start(self) -> None:
        """Connect: start the process (or open the HTTP session), initialize, list the tools,
        within the start-up timeout. Ends `connected` or `failed` (with `error`), never raising."""
        spec = self.entry.spec
        if spec is None:
            self._fail(self.entry.problem)
            return
        try:
            session = await self._open(spec)
        except Exception as exc:
            log_cause(f"MCP server {self.name} failed", exc)
            self._fail(describe(exc))
            return
        self._session, self.pid = session, session.pid
        session.roots = [{"uri": root.resolve().as_uri(), "name": root.name or str(root)} for root in self._roots]
        session.on_cut_off = self._cut_off
        try:
            await asyncio.wait_for(self._handshake(session), self._start_timeout)
            if self._cut is not None:  # (between two of the handshake's requests)
                raise self._cut
        except asyncio.TimeoutError:
            await self.close(graceful=False)
            self._fail(f"did not start within {self._start_timeout:g} s")
        except Exception as exc:  # the server's failure must not end the run
            log_cause(f"MCP server {self.name} failed", exc)
            await self.close(graceful=False)
            self._fail(describe(exc))
        else:
            self.status = "connected"

    async def _open(self, spec: StdioServer | HttpServer | SdkServer) -> RpcPeer:
        if isinstance(spec, SdkServer):
            if self._sdk_channel is None:
                raise ConnectionClosed(NO_CLIENT)
            return SdkPeer(spec.name, self._sdk_channel, self._log)
        if isinstance(spec, StdioServer):
            cwd = Path(spec.cwd).expanduser() if spec.cwd else self._workspace
            return await StdioSession.spawn(spec.command, list(spec.args), env=dict(spec.env),
                                            cwd=self._workspace / cwd, log=self._log)
        return SseSession(spec, self._log) if spec.transport == "sse" else HttpSession(spec, self._log)

    async def _handshake(self, session: RpcPeer) -> None:
        await session.initialize(CLIENT_NAME, _version())
        self.server_info = session.server_info
        self.tools, self.left_out = screen(await _all_pages(session, "tools/list", tools_page))
        self.has_resources = isinstance(session.capabilities.get("resources"), dict)
        if isinstance(session.capabilities.get("prompts"), dict):
            try:
                self.prompts = await _all_pages(session, "prompts/list", prompts_page)
            except (RpcError, McpProtocolError) as exc:  # its tools still count
                log_cause(f"MCP server {self.name}: listing its prompts failed", exc)
        session.on_tools_changed = self._tools_changed

    def _cut_off(self, error: CutOff) -> None:
        """(The session cut the server off.) Starting, its start fails; connected, it is failed
        for the rest of the run, and stopped."""
        self._cut = error
        if self.status != "connected":
            return
        self._fail(str(error))
        self._stopping = asyncio.ensure_future(self.close(graceful=False))
        if self.on_failed is not None:
            self.on_failed(self)

    def _tools_changed(self) -> None:
        """(The server said its tools changed.) List them again, once at a time: a change
        told while listing lists once more after."""
        if self._relisting is not None and not self._relisting.done():
            self._relist_again = True
            return
        self._relisting = asyncio.ensure_future(self._relist())

    async def _relist(self) -> None:
        while True:
            self._relist_again = False
            session = self._session
            if session is None or self.status != "connected":
                return
            try:
                listed = await asyncio.wait_for(_all_pages(session, "tools/list", tools_page), self._start_timeout)
            except Exception as exc:  # the tools stay as they were
                log_cause(f"MCP server {self.name}: listing its changed tools failed", exc)
                return
            tools, self.left_out = screen(listed)
            if tools != self.tools:
                self.tools = tools
                if self.on_tools_changed is not None:
                    self.on_tools_changed(self)
            if not self._relist_again:
                return

    async def tools_settled(self, timeout: float = 5.0) -> None:
        """Wait for a listing of changed tools under way (the next step should see them), for
        `timeout` seconds at most (a slow listing still lands, a step later)."""
        if self._relisting is not None and not self._relisting.done():
            await asyncio.wait({self._relisting}, timeout=timeout)  # (its end, whatever it was: a close cancels it)

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float) -> CallResult:
        """The tool's result; McpCallError when there is none (`closed` set when the
        connection is gone), TimeoutError after `timeout` seconds."""
        result = await self._request("tools/call", {"name": name, "arguments": arguments}, timeout)
        return self._read(call_result, result)

    async def get_prompt(self, name: str, arguments: dict[str, str], timeout: float) -> list[tuple[str, Content]]:
        """The messages of prompt `name` filled with `arguments`; McpCallError when none came."""
        result = await self._request("prompts/get", {"name": name, "arguments": arguments}, timeout)
        return self._read(prompt_messages, result)

    async def list_resources(self) -> list[Resource]:
        session = self._live()
        try:
            return await _all_pages(session, "resources/list", resources_page)
        except (McpProtocolError, McpCallError):
            raise
        except Exception as exc:
            raise self._call_error(exc) from exc

    async def read_resource(self, uri: str, timeout: float) -> list[Contents]:
        return self._read(read_result, await self._request("resources/read", {"uri": uri}, timeout))

    async def _request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        session = self._live()
        try:
            return await asyncio.wait_for(session.request(method, params), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except Exception as exc:
            raise self._call_error(exc) from exc

    def _read(self, parse: Callable[[Any], T], result: Any) -> T:
        try:
            return parse(result)
        except McpProtocolError as exc:
            raise McpCallError(f"the server's answer is malformed: {exc}") from None

    def _live(self) -> RpcPeer:
        session = self._session
        if session is None or self.status != "connected" or not session.running:
            raise McpCallError(f"MCP server {self.name!r} is not running" +
                               (f" ({self.error})" if self.error else ""), closed=True)
        if self.pid is not None and not process_alive(self.pid):
            raise McpCallError(f"MCP server {self.name!r} has exited", closed=True)
        return session

    def _call_error(self, exc: Exception) -> McpCallError:
        closed = isinstance(exc, ConnectionClosed) or (self.pid is not None and not process_alive(self.pid))
        return McpCallError(describe(exc), closed=closed)

    async def close(self, graceful: bool = True) -> None:
        """Stop the server (its whole process group) and wait until it is stopped."""
        if self._relisting is not None:
            self._relisting.cancel()
        session, self._session = self._session, None
        if session is None:
            if self._stopping is not None and not self._stopping.done():
                await asyncio.wait({self._stopping})  # (a cut-off server being stopped)
            return
        with contextlib.suppress(Exception):
            await session.close(graceful)
        if self.pid is not None:  # a group member that outlived the server
            kill_group(self.pid)

    def kill_now(self) -> None:
        """Kill the server's process group at once (the process is about to exit)."""
        if self.pid is not None:
            kill_group(self.pid)

    def _fail(self, reason: str) -> None:
        self.status, self.error = "failed", reason
        tail = log_tail(self._log)
        if tail and tail not in reason and reason not in tail:
            self.error = f"{reason} (stderr: {tail})"


async def _all_pages(session: RpcPeer, method: str,
                     read: Callable[[Any], tuple[list[T], str | None]]) -> list[T]:
    """The items of every page `method` returns, `_PAGE_CAP` pages at most."""
    items: list[T] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page, cursor = read(await session.request(method, {"cursor": cursor} if cursor else None))
        items.extend(page)
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
    if isinstance(exc, (RpcError, ConnectionClosed, McpProtocolError, HttpError)):
        return text or "the server answered with an error"
    if not text:
        return name
    return f"{name}: {text}" if name not in text else text


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


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("recursive-cli")
    except Exception:
        return "0"
