"""Our stdio MCP session (features/mcp/stdio.py) against the SDK's own server, read the same
as through the SDK's own client; and, through a server written by hand (raw_server.py), the
corners of the protocol SDK servers never show. (The published mcp-server-time and the
reference TypeScript server run through `recursive` in test_mcp_transports.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

import pytest
from clitools import alive, wait_gone
from mcphelpers import command_or_skip, demo_entry, demo_env

from recursive_cli.features.mcp import logfile, rpc, stdio
from recursive_cli.features.mcp.client import McpCallError, McpConnection
from recursive_cli.features.mcp.config import ServerEntry, StdioServer
from recursive_cli.features.mcp.models import call_result, tools_page
from recursive_cli.features.mcp.tools import to_result

RAW = Path(__file__).with_name("raw_server.py")
DEMO = demo_entry()  # the SDK's demo server, forked from this worker's zygote (the `demo_dir` fixture)
T = TypeVar("T")


def connection(command: str, *args: str, env: dict[str, str] | None = None, timeout: float = 30) -> McpConnection:
    spec = StdioServer(command, tuple(args), tuple({**demo_env(), **(env or {})}.items()))
    log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed with the test's process)
    return McpConnection(ServerEntry("s", spec, "test"), workspace=Path.cwd(), log=log, start_timeout=timeout)


def run(body: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(body())


def log_text(conn: McpConnection) -> str:
    conn._log.seek(0)  # noqa: SLF001 (the server's log file)
    return conn._log.read()  # noqa: SLF001


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- the protocol's corners, through the hand-written server ------------------------------------

def test_handshake_paging_batches_big_lines_errors_and_what_the_server_asks(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    conn = connection(sys.executable, "-I", str(RAW), str(record))

    async def body() -> tuple[Any, ...]:
        await conn.start()
        try:
            assert conn.status == "connected", conn.error
            echo = await conn.call_tool("echo", {"text": "héllo"}, timeout=10)
            big = await conn.call_tool("big", {}, timeout=10)
            with pytest.raises(McpCallError) as failed:
                await conn.call_tool("fail", {}, timeout=10)
            return echo, big, failed.value
        finally:
            await conn.close()

    echo, big, failed = run(body)
    assert [tool.name for tool in conn.tools] == ["echo", "fail", "hang", "big"]  # both pages; the nameless one left out
    assert conn.tools[0].read_only and conn.tools[0].title == "Echo"
    assert to_result(echo).content == "héllo"  # (the structured copy says the same: not repeated)
    assert echo.structured == {"result": "héllo"}
    assert len(big.content[0].text) == 1 << 20
    assert str(failed) == "unknown tool: fail" and not failed.closed
    sent = records(record)
    first = sent[0]
    assert first["method"] == "initialize" and first["params"]["protocolVersion"] == rpc.HANDSHAKE_VERSIONS[0]
    assert first["params"]["clientInfo"]["name"] == "recursive"
    assert first["params"]["capabilities"] == {"roots": {"listChanged": False}}
    answers = {str(m["id"]): m for m in sent if "method" not in m and "id" in m}
    assert answers["from-server-1"]["result"] == {}  # its ping answered
    assert answers["7"]["result"] == {"roots": [{"uri": Path.cwd().resolve().as_uri(), "name": Path.cwd().name}]}
    assert answers["8"]["error"]["code"] == -32601  # sampling: we do not claim it
    assert [m.get("method") for m in sent if "method" in m][:2] == ["initialize", "notifications/initialized"]
    assert sent[-1] == {"eof": True}  # stdin closed to stop it
    log = log_text(conn)
    assert "[warning raw] starting up" in log and "a banner that is not JSON" in log


def test_a_call_that_times_out_is_cancelled_at_the_server(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    conn = connection(sys.executable, "-I", str(RAW), str(record))

    async def body() -> None:
        await conn.start()
        try:
            with pytest.raises(TimeoutError):
                await conn.call_tool("hang", {}, timeout=0.3)
            echo = await conn.call_tool("echo", {"text": "still here"}, timeout=10)  # the session goes on
            assert to_result(echo).content == "still here"
        finally:
            await conn.close()

    run(body)
    sent = records(record)
    (call,) = [m for m in sent if m.get("method") == "tools/call" and m["params"]["name"] == "hang"]
    (cancel,) = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert cancel["params"]["requestId"] == call["id"]


def test_a_line_past_the_cap_ends_the_connection_not_our_memory(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "LINE_CAP", 1 << 19)  # (1 MiB answers, a cap of 512 KiB)
    monkeypatch.setattr(stdio, "GRACE", 0.2)  # (blocked writing the rest, it cannot exit on its own)
    conn = connection(sys.executable, "-I", str(RAW), str(tmp_path / "r.jsonl"))

    async def body() -> McpCallError:
        await conn.start()
        try:
            with pytest.raises(McpCallError) as stopped:
                await conn.call_tool("big", {}, timeout=10)
            return stopped.value
        finally:
            await conn.close()

    stopped = run(body)
    assert stopped.closed and "the server sent a line over 0.5 MiB" in str(stopped)
    assert "stopped reading" in log_text(conn)


def test_a_chatty_stderr_is_kept_up_to_the_cap_and_the_server_still_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfile, "LOG_CAP", 1 << 16)  # (4 MiB of stderr, 64 KiB kept)
    conn = connection(sys.executable, "-I", str(RAW), str(tmp_path / "r.jsonl"), env={"RAW_STDERR": "4"})

    async def body() -> Any:
        await conn.start()
        try:
            assert conn.status == "connected", conn.error  # (not blocked on a full stderr pipe)
            return await conn.call_tool("echo", {"text": "still answering"}, timeout=10)
        finally:
            await conn.close()

    assert to_result(run(body)).content == "still answering"
    log = log_text(conn)
    assert len(log) < (1 << 16) + 200 and log.count("e" * 1023) >= 60
    assert "(the log is full at 0.0625 MiB: the server's stderr and notices past it are not kept)" in log


def test_a_revision_we_do_not_speak_fails_the_server_and_stops_it(tmp_path: Path) -> None:
    conn = connection(sys.executable, "-I", str(RAW), str(tmp_path / "r.jsonl"), env={"RAW_VERSION": "2099-01-01"})
    run(conn.start)
    assert conn.status == "failed"
    assert "the server speaks MCP revision '2099-01-01'" in conn.error and "2025-11-25" in conn.error
    assert conn.pid is not None and wait_gone(conn.pid, timeout=5)


def test_a_server_deaf_to_its_stdin_closing_is_terminated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "GRACE", 0.3)
    conn = connection(sys.executable, "-I", str(RAW), str(tmp_path / "r.jsonl"), env={"RAW_DEAF": "1"})

    async def body() -> float:
        await conn.start()
        assert conn.status == "connected", conn.error
        began = time.monotonic()
        await conn.close()
        return time.monotonic() - began

    took = run(body)
    assert conn.pid is not None and not alive(conn.pid)
    assert 0.3 <= took < 5  # the grace period, then SIGTERM to its group
    assert records(tmp_path / "r.jsonl")[-1] == {"eof": True}


def test_a_server_that_dies_ends_its_calls_as_closed(tmp_path: Path, demo_dir: Path) -> None:
    conn = connection(DEMO["command"], *DEMO["args"])

    async def body() -> McpCallError:
        await conn.start()
        try:
            with pytest.raises(McpCallError) as died:
                await conn.call_tool("crash", {}, timeout=30)
            return died.value
        finally:
            await conn.close()

    died = run(body)
    assert died.closed and "closed the connection" in str(died)


def test_a_missing_command_and_a_server_that_exits_at_once(tmp_path: Path) -> None:
    missing = connection("no-such-mcp-server-here")
    run(missing.start)
    assert missing.status == "failed" and missing.error == "command not found: no-such-mcp-server-here"
    quits = connection(sys.executable, "-c", "import sys; sys.stderr.write('bad flag --x\\n'); sys.exit(2)")
    run(quits.start)
    assert quits.status == "failed"
    assert quits.error == "the server closed the connection (stderr: bad flag --x)"


# --- the same servers through the SDK's client: the same tools, the same results -------------

async def sdk_answers(command: str, args: list[str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, ...]:
    """Tools and call results as the SDK's own client reads them, dumped to the protocol's JSON."""
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with AsyncExitStack() as stack:
        errlog = stack.enter_context(tempfile.TemporaryFile("w+"))  # (sys.stderr may have no fd in a test)
        client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog), mode="legacy",
                                                        cache=None))
        tools = (await client.list_tools()).model_dump(by_alias=True, mode="json", exclude_none=True)
        results = [(await client.call_tool(name, arguments)).model_dump(by_alias=True, mode="json", exclude_none=True)
                   for name, arguments in calls]
    return tools, results


async def our_answers(command: str, args: list[str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, ...]:
    conn = connection(command, *args, timeout=120)
    await conn.start()
    try:
        assert conn.status == "connected", conn.error
        results = [await conn.call_tool(name, arguments, timeout=60) for name, arguments in calls]
        return conn.tools, results
    finally:
        await conn.close()


def assert_same_as_the_sdk(command: str, args: list[str], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    sdk_tools, sdk_results = run(lambda: sdk_answers(command, args, calls))
    tools, results = run(lambda: our_answers(command, args, calls))
    assert tools == tools_page(sdk_tools)[0]
    assert results == [call_result(result) for result in sdk_results]
    return results


def test_the_sdks_own_server_reads_the_same_as_through_the_sdk(demo_dir: Path) -> None:
    results = assert_same_as_the_sdk(DEMO["command"], DEMO["args"], [
        ("weather", {"city": "Oslo"}), ("picture", {}), ("fail", {"reason": "because"}), ("env", {"name": "HOME"})])
    weather, picture, fail, _ = results
    assert weather.structured == {"city": "Oslo", "celsius": 21.5}
    assert [block.type for block in picture.content] == ["text", "image"]
    assert fail.is_error and "failing on purpose: because" in fail.content[0].text


def test_a_stdio_run_does_not_import_the_sdk(tmp_path: Path, demo_dir: Path) -> None:
    """The SDK costs ≈ 0.45 s of CPU to import; a run whose servers are all stdio never loads it."""
    probe = ("import runpy, sys, atexit\n"
             "atexit.register(lambda: sys.__stderr__.write('SDK LOADED\\n' if 'mcp' in sys.modules else 'NO SDK\\n'))\n"
             "sys.argv = ['recursive'] + sys.argv[1:]\n"
             "runpy.run_module('recursive_cli', run_name='__main__')\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "mcp__demo__weather", "arguments": {"city": "Rome"}}]},
                                  {"text": "done"}]))
    config = json.dumps({"mcpServers": {"demo": DEMO}})
    done = subprocess.run([sys.executable, "-c", probe, "run", "go", "-C", str(tmp_path), "--provider", "scripted",
                           "--script", str(script), "--strict-mcp-config", "--mcp-config", config,
                           "--no-checkpoints", "-o", "stream-json"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "21.5" in done.stdout
    assert "NO SDK" in done.stderr, done.stderr


def test_the_reference_filesystem_server_gets_the_workspace_as_its_root(workspace: Path) -> None:
    """`@modelcontextprotocol/server-filesystem` started without folders asks its client for
    roots (`roots/list`); it is given the workspace, as Claude Code gives its project folder.
    (It takes the answer in a moment of its own: the test asks until it has.)"""
    npx = command_or_skip("npx", "npx is missing (Node.js): the reference MCP server cannot run here",
                          "npx is missing: the CI machine needs Node.js for the reference MCP server")
    (workspace / "note.txt").write_text("from the workspace\n")
    spec = StdioServer(npx, ("-y", "@modelcontextprotocol/server-filesystem"))
    log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
    conn = McpConnection(ServerEntry("fs", spec, "test"), workspace=workspace, log=log, start_timeout=120)

    async def body() -> tuple[str, str]:
        await conn.start()
        assert conn.status == "connected", conn.error
        try:
            for _ in range(100):
                allowed = to_result(await conn.call_tool("list_allowed_directories", {}, timeout=30)).content
                if str(workspace.resolve()) in allowed:
                    break
                await asyncio.sleep(0.05)
            note = await conn.call_tool("read_text_file", {"path": str(workspace / "note.txt")}, timeout=30)
            return allowed, to_result(note).content
        finally:
            await conn.close()

    allowed, note = run(body)
    assert str(workspace.resolve()) in allowed
    assert "from the workspace" in note


def test_the_roots_are_the_workspace_and_every_add_dir(workspace: Path, tmp_path: Path) -> None:
    from clitools import invoke

    other = tmp_path / "docs"
    other.mkdir()
    record = tmp_path / "received.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "done"}]))
    config = json.dumps({"mcpServers": {"raw": {"command": sys.executable, "args": ["-I", str(RAW), str(record)]}}})
    done = invoke("run", "go", "-C", str(workspace), "--add-dir", str(other), "--provider", "scripted",
                  "--script", str(script), "--strict-mcp-config", "--mcp-config", config, "--no-checkpoints")
    assert done.returncode == 0, done.stderr
    (roots,) = [m["result"]["roots"] for m in records(record) if m.get("id") == 7 and "result" in m]
    assert [root["uri"] for root in roots] == [workspace.resolve().as_uri(), other.resolve().as_uri()]
