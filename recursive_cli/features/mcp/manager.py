"""The MCP servers of one runtime: started together when a run first needs its tools, stopped
on every way out.

`McpManager` is a feature (the builder attaches it) and a turn observer: before the first turn
it starts every configured server in parallel, each within its start-up timeout, and adds the
tools of those that connected. The CLI starts them a moment earlier, before the `init` line,
which lists them with their status (`start`; idempotent). A server that fails to start is
reported once on stderr and the run goes on without it, as is each tool left out (tools.py:
`screen`) and each name two tools come to (offered from neither). A server that dies turns the
call it was answering into an error result and is restarted once; one that dies while idle is
restarted before the next call is sent; one cut off (it would not read our answers) stays
stopped, said once. A server that says its tools changed is listed again and the runtime's
tools of it become the new list (a call that changed them waits for the listing, so the next
step sees it). `aclose` stops them all; `kill_now` kills their
process groups at once, for a process about to `os._exit`, and runs at interpreter exit too.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ...core.tool import ToolContext, ToolResult
from .client import McpCallError, McpConnection
from .config import HttpServer, McpConfig, SdkServer, ServerEntry, StdioServer, call_timeout
from .models import Resource, ServerPrompt, ServerTool
from .sdk_peer import SdkChannel
from .tools import (
    ListMcpResourcesTool,
    McpTool,
    ReadMcpResourceTool,
    block_text,
    claim_names,
    resource_text,
    shown,
    to_result,
    tool_name,
)

if TYPE_CHECKING:
    from ...core.kernel import TurnOutcome
    from ...core.runtime import RuntimeCore

_RESTARTED = "it has been restarted; call the tool again if you still need it"
LOG_FOLDER = "mcp"  # in the session folder: one `<server>.log` per server, its stderr


class McpManager:
    """Starts, calls, restarts and stops the configured MCP servers of one runtime."""

    def __init__(self, config: McpConfig, workspace: Path, *,
                 log_dir: Callable[[], Path | None] = lambda: None,
                 warn: Callable[[str], None] | None = None,
                 env: Mapping[str, str] | None = None, roots: Sequence[Path] | None = None) -> None:
        self.config = config
        self._roots = tuple(roots or ())  # what a server asking for roots is given (none: the workspace)
        self.connections: dict[str, McpConnection] = {}
        self._workspace = workspace
        self._log_dir = log_dir
        self._warn = warn or _to_stderr
        self._env = os.environ if env is None else env
        self._logs: dict[str, TextIO] = {}
        self._start: asyncio.Task[None] | None = None
        self._restarts: dict[str, asyncio.Task[str]] = {}
        self._added: set[str] = set()
        self._runtime: RuntimeCore | None = None  # the one given the tools (a server's changes go there)
        self.sdk_channel: SdkChannel | None = None  # the Agent SDK client's, for its own servers (sdk_peer.py)
        self._listed: dict[str, list[ServerTool]] = {}  # each server's tools, as the runtime was given them
        self._offered: dict[str, McpTool] = {}  # our name → the tool the runtime has of that name
        self._told: set[str] = set()  # the lines said already (a left-out tool, a clash)

    # -- starting ----------------------------------------------------------------------------

    async def start(self, runtime: RuntimeCore | None = None) -> None:
        """Start every server (once, in parallel) and give `runtime` the tools of those that
        connected. Interrupted (Ctrl-C) when the runtime's interrupt token fires."""
        if self._start is None:
            self._start = asyncio.ensure_future(self._start_all())
            atexit.register(self.kill_now)
        work = asyncio.shield(self._start)
        if runtime is not None:
            from ...core.interrupt import Interrupted

            try:
                await runtime.interrupt_token.race(work)
            except Interrupted:
                return
            self.add_tools(runtime)
        else:
            await work

    async def _start_all(self) -> None:
        for name, entry in self.config.servers.items():
            self.connections[name] = self._connection(entry)
        await asyncio.gather(*(connection.start() for connection in self.connections.values()))
        for connection in self.connections.values():
            if connection.status == "failed":
                self._warn(f"warning: MCP server {connection.name!r} failed to start: {connection.error}; "
                           "going on without it")
            self._tell_left_out(connection)
        self._tell_clashes(claim_names({c.name: c.tools for c in self.connections.values()
                                        if c.status == "connected"})[1])

    def _connection(self, entry: ServerEntry) -> McpConnection:
        connection = McpConnection(entry, workspace=self._workspace, log=self._log(entry.name),
                                   start_timeout=self.config.start_timeout, sdk_channel=self.sdk_channel,
                                   roots=self._roots)
        connection.on_tools_changed = self._tools_changed
        connection.on_failed = self._cut_off
        return connection

    def _cut_off(self, connection: McpConnection) -> None:
        self._warn(f"warning: MCP server {connection.name!r} was cut off: {connection.error}; going on without it")

    def add_servers(self, config: McpConfig) -> bool:
        """More servers to start with the others (a client's `initialize` sends them); a name
        already configured takes the new entry. False, with nothing added, once they started."""
        if self._start is not None:
            return False
        self.config = self.config.merge(config)
        return True

    def add_tools(self, runtime: RuntimeCore) -> None:
        """Add each connected server's tools (and the resource tools, when a server has resources)."""
        self._runtime = runtime
        resources = False
        for connection in self.connections.values():
            if connection.status == "connected":
                self._listed.setdefault(connection.name, connection.tools)
                resources = resources or connection.has_resources
        self._offer(runtime)
        if resources:
            self._add(runtime, ListMcpResourcesTool(self))
            self._add(runtime, ReadMcpResourceTool(self))

    def _add(self, runtime: RuntimeCore, tool: Any) -> None:
        if tool.name not in self._added:
            self._added.add(tool.name)
            runtime.add_tool(tool)

    def _offer(self, runtime: RuntimeCore) -> None:
        """The runtime's MCP tools become those of `_listed` (by name, `claim_names`): a name
        two tools come to is taken away from both, never handed from one server to another."""
        wanted, clashes = claim_names(self._listed)
        for name, tool in list(self._offered.items()):
            if wanted.get(name) != (tool.server, tool.source):
                del self._offered[name]
                if name not in wanted:
                    runtime.remove_tool(name)
        for name, (server, source) in wanted.items():
            if name not in self._offered:
                new: Any = McpTool(self, server, source)  # (a Tool, whose name is per object: mypy wants a ClassVar)
                self._offered[name] = new
                runtime.add_tool(new)  # (one of that name, if any, is replaced)
        self._tell_clashes(clashes)

    def _tell_left_out(self, connection: McpConnection) -> None:
        for line in connection.left_out:
            self._tell(f"warning: MCP server {connection.name!r}: {line}")

    def _tell_clashes(self, clashes: Mapping[str, list[tuple[str, str]]]) -> None:
        for name, claimants in clashes.items():
            who = " and ".join(f"tool {shown(tool)} of server {shown(server)}" for server, tool in claimants)
            self._tell(f"warning: MCP {who} both come to the name {name}: offered from neither, "
                       "so that no call goes to the wrong server (rename a server in its config)")

    def _tell(self, line: str) -> None:
        """Say `line` on stderr once a run."""
        if line not in self._told:
            self._told.add(line)
            self._warn(line)

    def _tools_changed(self, connection: McpConnection, quiet: bool = False) -> None:
        """(A server listed new tools.) The runtime's tools of that server become these: new
        ones added, changed ones replaced, gone ones removed; said once on stderr."""
        runtime = self._runtime
        if runtime is None or self.connections.get(connection.name) is not connection:
            return  # (not given to a runtime yet: `add_tools` will take the new list)
        had, listed = self._offered_by(connection.name), self._listed.get(connection.name, [])
        self._listed[connection.name] = connection.tools if connection.status == "connected" else []
        self._tell_left_out(connection)
        self._offer(runtime)
        now = self._offered_by(connection.name)
        added, gone = sorted(now - had), sorted(had - now)
        same = {tool.name for tool in listed} == {tool.name for tool in self._listed[connection.name]}
        change = ", ".join([*(f"+{name}" for name in added), *(f"-{name}" for name in gone)]) or (
            "schemas changed" if same else "no tool offered anew")
        if not quiet:
            self._warn(f"MCP server {connection.name!r} changed its tools ({change}): {len(now)} now")

    def _offered_by(self, server: str) -> set[str]:
        return {name for name, tool in self._offered.items() if tool.server == server}

    async def reconnect(self, server: str, quiet: bool = True) -> McpConnection:
        """Stop `server` and start it again (a restart, the Agent SDKs' `reconnect_mcp_server`);
        once it runs, the runtime gets its tools as it lists them now (`quiet`: without a line
        when they changed). KeyError for a name not configured."""
        old = self.connections.get(server)
        entry = old.entry if old is not None else self.config.servers[server]
        if old is not None:
            await old.close()
        new = self._connection(entry)
        self.connections[server] = new
        await new.start()
        if new.status == "connected":  # (one that failed keeps its tools: their calls say why)
            self._tools_changed(new, quiet=quiet or old is None or new.tools == old.tools)
        return new

    @property
    def started(self) -> bool:
        return self._start is not None

    async def set_servers(self, config: McpConfig, owned: set[str]) -> dict[str, Any]:
        """The TypeScript SDK's `setMcpServers`: the servers of `config` replace those of the
        same name (one whose entry is unchanged and running is left as it is); those this
        method set before (`owned`) and `config` leaves out are stopped and removed. Servers
        started already start now; before that, with the others. `{"added", "removed",
        "errors"}` as the SDK reads it."""
        added: list[str] = []
        removed: list[str] = []
        errors: dict[str, str] = {}
        for name in sorted(owned - set(config.servers)):
            if name in self.connections:
                await self.disable(name)
                del self.connections[name]
            self.config.servers.pop(name, None)
            removed.append(name)
        for name, entry in config.servers.items():
            current = self.config.servers.get(name)
            running = self.connections.get(name)
            if current is not None and current.written == entry.written and running is not None \
                    and running.status == "connected":
                continue
            self.config.servers[name] = entry
            if current is None:
                added.append(name)
            if self._start is not None:
                connection = await self.reconnect(name)
                if connection.status != "connected":
                    errors[name] = connection.error
        owned.clear()
        owned.update(config.servers)
        return {"added": added, "removed": removed, "errors": errors}

    async def disable(self, server: str) -> None:
        """Stop `server` and take its tools away until it is reconnected (`toggle_mcp_server`)."""
        connection = self.connections.get(server)
        if connection is None:
            raise KeyError(server)
        await connection.close()
        connection.status, connection.error = "disabled", ""
        self._tools_changed(connection, quiet=True)

    async def before_turn(self, runtime: RuntimeCore, turn: int) -> None:
        """(A turn observer.) The tools are needed now: start the servers if nobody did."""
        await self.start(runtime)

    async def after_turn(self, runtime: RuntimeCore, turn: int, outcome: TurnOutcome) -> None:
        return None

    def statuses(self) -> list[dict[str, str]]:
        """`[{"name", "status"}]` per configured server, as the `init` line shows them."""
        return [{"name": name, "status": self._status(name, entry)} for name, entry in self.config.servers.items()]

    def _status(self, name: str, entry: ServerEntry) -> str:
        connection = self.connections.get(name)
        if connection is not None:
            return connection.status
        return "failed" if entry.spec is None else "pending"

    def status_report(self) -> list[dict[str, Any]]:
        """Each configured server as the Agent SDKs' `get_mcp_status()` reads it: name, status,
        `serverInfo`, `error`, `config` (its transport and where it is: no env or headers),
        `scope` (where it was configured) and its tools."""
        report = []
        for name, entry in self.config.servers.items():
            connection = self.connections.get(name)
            status = self._status(name, entry)
            item: dict[str, Any] = {"name": name, "status": status, "scope": entry.origin}
            spec = entry.spec
            if isinstance(spec, StdioServer):
                item["config"] = {"type": "stdio", "command": spec.command, "args": list(spec.args)}
            elif isinstance(spec, HttpServer):
                item["config"] = {"type": spec.transport, "url": spec.url}
            elif isinstance(spec, SdkServer):
                item["config"] = {"type": "sdk", "name": spec.name}
            error = connection.error if connection is not None else entry.problem
            if status == "failed" and error:
                item["error"] = error
            if connection is not None and status == "connected":
                if connection.server_info:
                    item["serverInfo"] = connection.server_info
                item["tools"] = [{"name": tool.name, "description": tool.description,
                                  "annotations": {"readOnly": tool.read_only}} for tool in connection.tools]
            report.append(item)
        return report

    # -- calls ---------------------------------------------------------------------------------

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call `tool` on `server`; every failure is an error result for the model."""
        timeout = call_timeout(self._env, ctx.shell_timeout)
        try:
            result = to_result(await self._call(server, lambda c: c.call_tool(tool, arguments, timeout)))
            connection = self.connections.get(server)
            if connection is not None:  # (a call that changed the server's tools: the next step sees them)
                await connection.tools_settled()
            return result
        except TimeoutError as exc:
            return ToolResult(f"the MCP tool {tool} of server {server!r} timed out: {exc}", is_error=True,
                              summary="timed out")
        except McpCallError as exc:
            return ToolResult(str(exc), is_error=True, summary="MCP error")

    async def _call(self, server: str, send: Callable[[McpConnection], Any]) -> Any:
        """`send` on the server's connection. A server found dead before sending is restarted
        (once per run) and sent to; one that dies while answering turns into an McpCallError
        saying so, after its restart."""
        connection = self.connections.get(server)
        if connection is None:
            raise McpCallError(f"no MCP server named {server!r} (servers: {', '.join(self.connections) or 'none'})")
        if connection.status == "connected" and not _runs(connection):
            note = await self.restart(server, connection, "it had exited")
            connection = self.connections[server]
            if connection.status != "connected":
                raise McpCallError(f"the MCP server {server!r} is not running: {note}", closed=True)
        if connection.status != "connected":
            raise McpCallError(f"the MCP server {server!r} is not running ({connection.error})", closed=True)
        try:
            return await send(connection)
        except McpCallError as exc:
            if not exc.closed:
                raise McpCallError(f"MCP server {server!r}: {exc}") from None
            if connection.status != "connected":  # (cut off meanwhile: a restart would only repeat it)
                raise McpCallError(f"the MCP server {server!r} is not running ({connection.error})",
                                   closed=True) from None
            note = await self.restart(server, connection, str(exc))
            raise McpCallError(f"the MCP server {server!r} stopped before answering ({exc}); {note}",
                               closed=True) from None

    async def restart(self, server: str, failed: McpConnection, why: str) -> str:
        """Restart `failed`, a connection of `server` that stopped, once per run; what became
        of it, for the model."""
        task = self._restarts.get(server)
        if task is not None and not task.done():
            return await asyncio.shield(task)
        if self.connections.get(server) is not failed:  # another call restarted it meanwhile
            return _RESTARTED
        if task is not None:
            failed.status, failed.error = "failed", f"stopped again after its restart ({why})"
            self._warn(f"warning: MCP server {server!r} stopped again ({why}); going on without it")
            await failed.close()
            return "it had been restarted once already and stays stopped for this run"
        task = asyncio.ensure_future(self._restart(server, why))
        self._restarts[server] = task
        return await asyncio.shield(task)

    async def _restart(self, server: str, why: str) -> str:
        self._warn(f"warning: MCP server {server!r} stopped ({why}); restarting it")
        new = await self.reconnect(server, quiet=False)
        if new.status != "connected":
            self._warn(f"warning: MCP server {server!r} could not be restarted: {new.error}")
            return f"restarting it failed: {new.error}"
        return _RESTARTED

    async def list_resources(self, server: str | None) -> ToolResult:
        """The resources of one server (or all that have them), as JSON lines for the model."""
        names = [server] if server else [c.name for c in self.connections.values()
                                         if c.status == "connected" and c.has_resources]
        found: list[str] = []
        for name in names:
            try:
                for resource in await self._call(name, lambda c: c.list_resources()):
                    found.append(_resource_line(name, resource))
            except McpCallError as exc:
                return ToolResult(str(exc), is_error=True, summary="MCP error")
        return ToolResult("\n".join(found) or "no resources", summary=f"{len(found)} resources")

    async def read_resource(self, server: str, uri: str, ctx: ToolContext) -> ToolResult:
        timeout = call_timeout(self._env, ctx.shell_timeout)
        try:
            result = await self._call(server, lambda c: c.read_resource(uri, timeout))
        except TimeoutError as exc:
            return ToolResult(f"reading {uri} from MCP server {server!r} timed out: {exc}", is_error=True)
        except McpCallError as exc:
            return ToolResult(str(exc), is_error=True, summary="MCP error")
        return ToolResult("\n".join(resource_text(contents) for contents in result) or "(empty)")

    # -- prompts -------------------------------------------------------------------------------

    def prompt_commands(self) -> dict[str, tuple[str, ServerPrompt]]:
        """`/mcp__<server>__<prompt>` (as Claude Code names them) → (server, prompt), for the
        prompts of every connected server."""
        found: dict[str, list[tuple[str, ServerPrompt]]] = {}
        for connection in self.connections.values():
            for prompt in connection.prompts if connection.status == "connected" else ():
                found.setdefault("/" + tool_name(connection.name, prompt.name), []).append((connection.name, prompt))
        return {name: claimants[0] for name, claimants in found.items()
                if len(claimants) == 1}  # (a name two prompts come to: neither, as for tools)

    async def prompt_text(self, command: str, words: list[str]) -> str:
        """The text of the prompt that `command` names, its arguments filled from `words` in
        order (the last argument takes the words left over); McpCallError when the server gives
        none, ValueError (the usage) when a required argument has no word."""
        server, prompt = self.prompt_commands()[command]
        names = [argument.name for argument in prompt.arguments]
        values = words[:len(names)]
        if len(words) > len(names) and names:
            values[-1] = " ".join(words[len(names) - 1:])
        missing = [a.name for a in prompt.arguments[len(values):] if a.required]
        if missing:
            usage = " ".join(a.name.upper() if a.required else f"[{a.name.upper()}]" for a in prompt.arguments)
            raise ValueError(f"usage: {command} {usage} ({', '.join(missing)} missing)")
        arguments = dict(zip(names, values))
        timeout = call_timeout(self._env, self.config.start_timeout)  # (a template: as long as a start)
        messages = await self._call(server, lambda c: c.get_prompt(prompt.name, arguments, timeout))
        texts = [block_text(content) for _role, content in messages]
        return "\n\n".join(text for text in texts if text)

    # -- stopping ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every server and wait for it; close the logs."""
        if self._start is not None and not self._start.done():
            self._start.cancel()
        for task in self._restarts.values():
            task.cancel()
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
        self.kill_now()  # (their groups: whatever a server started and left behind)
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        atexit.unregister(self.kill_now)

    def kill_now(self) -> None:
        """Kill every server's process group at once (the process is about to exit)."""
        for connection in list(self.connections.values()):
            connection.kill_now()

    # -- logs ----------------------------------------------------------------------------------

    def _log(self, server: str) -> TextIO:
        """Where the server's stderr goes: `mcp/<server>.log` in the session folder (appended
        to on restart and resume), else a temporary file read back for failure messages."""
        if server in self._logs:
            return self._logs[server]
        folder = self._log_dir()
        log: TextIO
        if folder is not None and folder.is_dir():
            path = folder / LOG_FOLDER / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', server)}.log"
            try:
                path.parent.mkdir(mode=0o700, exist_ok=True)
                log = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (closed in aclose; read back for failures)
            except OSError:
                log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        else:
            log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        self._logs[server] = log
        return log


def _runs(connection: McpConnection) -> bool:
    from ...core.procs import process_alive

    return connection.pid is None or process_alive(connection.pid)


def _resource_line(server: str, resource: Resource) -> str:
    import json

    entry = {"server": server, "uri": resource.uri, "name": resource.name}
    if resource.mime_type:
        entry["mimeType"] = resource.mime_type
    if resource.description:
        entry["description"] = resource.description
    return json.dumps(entry, ensure_ascii=False)


def _to_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def kill_servers_now(runtime: Any) -> None:
    """Kill the MCP servers of `runtime` at once, if it has any (before `os._exit`)."""
    feature = getattr(runtime, "feature", None)
    manager = feature(McpManager) if feature is not None else None
    if manager is not None:
        manager.kill_now()
