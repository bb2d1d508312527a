"""Our HTTP MCP sessions (features/mcp/http.py): streamable HTTP and HTTP with SSE against the
SDK's own servers, read the same as through the SDK's own client; the reference TypeScript
server over streamable HTTP; the protocol's corners through a server written here (session
ids, a dropped session, events before the answer, the server's own requests, an error
status, the DELETE at the end); and a run with servers of every transport that never loads
the SDK."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import AsyncExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcphelpers import command_or_skip, demo_entry, free_port, wait_for_port

from recursive_cli.features.mcp.client import McpCallError, McpConnection
from recursive_cli.features.mcp.config import HttpServer, ServerEntry
from recursive_cli.features.mcp.models import call_result, tools_page
from recursive_cli.features.mcp.tools import to_result
from recursive_cli.net.http_client import PROXY_VARIABLES


def connection(url: str, transport: str = "http", headers: dict[str, str] | None = None) -> McpConnection:
    spec = HttpServer(url, transport, tuple((headers or {}).items()))  # type: ignore[arg-type]
    log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
    return McpConnection(ServerEntry("remote", spec, "test"), workspace=Path.cwd(), log=log, start_timeout=60)


def log_text(conn: McpConnection) -> str:
    conn._log.seek(0)  # noqa: SLF001
    return conn._log.read()  # noqa: SLF001


# --- the SDK's servers: the same tools and results as through the SDK's client ----------------

CALLS: list[tuple[str, dict[str, Any]]] = [("weather", {"city": "Oslo"}), ("picture", {}), ("fail", {"reason": "r"})]


async def sdk_answers(url: str, transport: str) -> tuple[Any, list[Any]]:
    from mcp.client import Client

    async with AsyncExitStack() as stack:
        if transport == "sse":
            from mcp.client.sse import sse_client

            client = await stack.enter_async_context(Client(sse_client(url), mode="legacy", cache=None))
        else:
            from mcp.client.streamable_http import streamable_http_client

            client = await stack.enter_async_context(Client(streamable_http_client(url), mode="legacy", cache=None))
        tools = (await client.list_tools()).model_dump(by_alias=True, mode="json", exclude_none=True)
        results = [(await client.call_tool(name, args)).model_dump(by_alias=True, mode="json", exclude_none=True)
                   for name, args in CALLS]
    return tools, results


async def our_answers(url: str, transport: str) -> tuple[Any, list[Any], bool]:
    conn = connection(url, transport)
    await conn.start()
    try:
        assert conn.status == "connected", conn.error
        return conn.tools, [await conn.call_tool(name, args, timeout=30) for name, args in CALLS], conn.has_resources
    finally:
        await conn.close()


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_the_sdks_server_reads_the_same_as_through_the_sdk(transport: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("http_url" if transport == "http" else "sse_url")
    sdk_tools, sdk_results = asyncio.run(sdk_answers(url, transport))
    tools, results, resources = asyncio.run(our_answers(url, transport))
    assert tools == tools_page(sdk_tools)[0] and len(tools) >= 7
    assert results == [call_result(result) for result in sdk_results]
    assert results[0].structured == {"city": "Oslo", "celsius": 21.5} and results[2].is_error
    assert resources


@pytest.mark.parametrize(("transport", "mode", "path"), [("http", "streamableHttp", "/mcp"), ("sse", "sse", "/sse")])
def test_the_reference_typescript_server(transport: str, mode: str, path: str) -> None:
    npx = command_or_skip("npx", "npx is missing (Node.js): the reference MCP server cannot run here",
                          "npx is missing: the CI machine needs Node.js for the reference MCP server")
    port = free_port()
    proc = subprocess.Popen([npx, "-y", "@modelcontextprotocol/server-everything", mode],
                            env={**os.environ, "PORT": str(port)}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, proc, 120, "the reference server")
        conn = connection(f"http://127.0.0.1:{port}{path}", transport)

        async def calls() -> list[Any]:
            await conn.start()
            assert conn.status == "connected", conn.error
            try:
                return [await conn.call_tool("echo", {"message": "hi there"}, timeout=30),
                        await conn.call_tool("get-sum", {"a": 2, "b": 40}, timeout=30)]
            finally:
                await conn.close()

        echo, total = asyncio.run(calls())
        assert "hi there" in to_result(echo).content and "42" in to_result(total).content
        assert {"echo", "get-sum"} <= {tool.name for tool in conn.tools}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


# --- the protocol's corners, through a server written here ------------------------------------

class Handwritten(BaseHTTPRequestHandler):
    """A streamable HTTP MCP server at /mcp, recording what it gets (see `server`)."""

    state: dict[str, Any]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _record(self, body: Any) -> None:
        self.state["got"].append({"verb": self.command, "path": self.path,
                                  "session": self.headers.get("Mcp-Session-Id"),
                                  "version": self.headers.get("MCP-Protocol-Version"),
                                  "accept": self.headers.get("Accept"), "body": body})

    def do_DELETE(self) -> None:  # noqa: N802
        self._record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._record(body)
        session = self.headers.get("Mcp-Session-Id")
        method = body.get("method")
        if self.state.get("token") and self.headers.get("Authorization") != f"Bearer {self.state['token']}":
            return self._reply(401, b'{"error": "invalid_token"}', headers={"WWW-Authenticate": "Bearer"})
        if method != "initialize" and session not in self.state["sessions"]:
            return self._reply(404, b"")
        if method == "initialize":
            self.state["count"] += 1
            name = f"session-{self.state['count']}"
            self.state["sessions"].add(name)
            result = {"protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "handwritten", "version": "1"}}
            return self._reply(200, self._one(body, result), headers={"Mcp-Session-Id": name})
        if "id" not in body or "method" not in body:  # a notification, or our reply to its ping
            return self._reply(202, b"")
        if method == "tools/list":
            events = [{"jsonrpc": "2.0", "id": "srv-1", "method": "ping"},
                      {"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": {"listing": True}}},
                      {"jsonrpc": "2.0", "id": body["id"], "result": {"tools": [
                          {"name": name, "inputSchema": {"type": "object"}} for name in ("echo", "forget", "boom")]}}]
            data = b"".join(b"event: message\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)
            return self._reply(200, data, kind="text/event-stream")
        name = body["params"]["name"]
        if name == "boom":
            return self._reply(500, b"boom")
        if name == "forget":
            self.state["sessions"].clear()
        text = json.dumps(body["params"].get("arguments"))
        return self._reply(200, self._one(body, {"content": [{"type": "text", "text": text}]}))

    @staticmethod
    def _one(request: dict[str, Any], result: Any) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()

    def _reply(self, status: int, data: bytes, kind: str = "application/json",
               headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def handwritten() -> Iterator[tuple[str, dict[str, Any]]]:
    state: dict[str, Any] = {"got": [], "sessions": set(), "count": 0}
    handler = type("Handler", (Handwritten,), {"state": state, "protocol_version": "HTTP/1.1"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", state
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("via_proxy", [False, True])
def test_session_ids_a_dropped_session_events_the_servers_requests_and_the_end(
        handwritten: tuple[str, dict[str, Any]], via_proxy: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """(`via_proxy`: HTTP_PROXY names the server itself, which answers the proxy's absolute-form
    requests as its own: every message then goes in absolute form, as to a real proxy.)"""
    url, state = handwritten
    for name in ("NO_PROXY", "no_proxy", *PROXY_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    if via_proxy:
        monkeypatch.setenv("HTTP_PROXY", url.rsplit("/", 1)[0])
    conn = connection(url, headers={"Authorization": "Bearer token-1"})

    async def body() -> tuple[Any, Any, McpCallError]:
        await conn.start()
        try:
            assert conn.status == "connected", conn.error
            first = await conn.call_tool("forget", {"n": 1}, timeout=10)  # the server drops the session after it
            again = await conn.call_tool("echo", {"n": 2}, timeout=10)  # 404 → a new initialize, sent once more
            with pytest.raises(McpCallError) as failed:
                await conn.call_tool("boom", {}, timeout=10)
            return first, again, failed.value
        finally:
            await conn.close()

    first, again, failed = asyncio.run(body())
    assert [tool.name for tool in conn.tools] == ["echo", "forget", "boom"]
    assert to_result(first).content == '{"n": 1}' and to_result(again).content == '{"n": 2}'
    assert str(failed) == "HTTP 500: boom" and not failed.closed
    got = state["got"]
    verbs = [(g["verb"], (g["body"] or {}).get("method") or ("reply" if g["body"] else None), g["session"])
             for g in got]
    assert verbs[0] == ("POST", "initialize", None)
    assert verbs[1] == ("POST", "notifications/initialized", "session-1")
    assert ("POST", "reply", "session-1") in verbs  # its ping, answered
    (reply,) = [g["body"] for g in got if g["body"] and "method" not in g["body"]]
    assert reply == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
    echo_tries = [g for g in got if g["body"] and g["body"].get("method") == "tools/call"
                  and g["body"]["params"]["name"] == "echo"]
    assert [g["session"] for g in echo_tries] == ["session-1", "session-2"]  # refused, then in the new session
    assert verbs[-1] == ("DELETE", None, "session-2")
    later = [g for g in got[1:] if g["verb"] == "POST" and g["body"].get("method") != "initialize"]
    assert all(g["version"] == "2025-11-25" for g in later)
    assert all(g["accept"] == "application/json, text/event-stream" for g in got if g["verb"] == "POST")
    assert '[info] {"listing": true}' in log_text(conn)
    assert all(g["path"] == (url if via_proxy else "/mcp") for g in got), {g["path"] for g in got}


def test_an_unreachable_server_fails_to_start_in_one_line() -> None:
    conn = connection(f"http://127.0.0.1:{free_port()}/mcp")
    asyncio.run(conn.start())
    assert conn.status == "failed" and conn.error.startswith("cannot reach the server:"), conn.error
    sse = connection(f"http://127.0.0.1:{free_port()}/sse", "sse")
    asyncio.run(sse.start())
    assert sse.status == "failed" and sse.error.startswith("cannot reach the server:"), sse.error


# --- no SDK in a run ---------------------------------------------------------------------------

def test_a_run_with_servers_of_every_transport_does_not_import_the_sdk(tmp_path: Path, demo_dir: Path,
                                                                       http_url: str, sse_url: str) -> None:
    """The SDK costs ≈ 0.45 s of CPU to import; `recursive` speaks MCP itself."""
    probe = ("import runpy, sys, atexit\n"
             "atexit.register(lambda: sys.__stderr__.write('SDK LOADED\\n' if 'mcp' in sys.modules else 'NO SDK\\n'))\n"
             "sys.argv = ['recursive'] + sys.argv[1:]\n"
             "runpy.run_module('recursive_cli', run_name='__main__')\n")
    calls = [{"name": f"mcp__{name}__weather", "arguments": {"city": name}} for name in ("local", "http", "sse")]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": calls}, {"text": "done"}]))
    config = json.dumps({"mcpServers": {"local": demo_entry(),
                                        "http": {"type": "http", "url": http_url},
                                        "sse": {"type": "sse", "url": sse_url}}})
    done = subprocess.run([sys.executable, "-c", probe, "run", "go", "-C", str(tmp_path), "--provider", "scripted",
                           "--script", str(script), "--strict-mcp-config", "--mcp-config", config,
                           "--no-checkpoints", "-o", "stream-json"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    results = [block for line in done.stdout.splitlines() for block in
               (json.loads(line).get("message") or {}).get("content", []) if isinstance(block, dict)
               and block.get("type") == "tool_result"]
    assert [json.loads(r["content"])["city"] for r in results] == ["local", "http", "sse"]
    assert "NO SDK" in done.stderr, done.stderr


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_a_tools_change_told_outside_a_request_is_heard(transport: str, request: pytest.FixtureRequest) -> None:
    """The SDK's server sends `tools/list_changed` unrelated to the call that caused it: over
    streamable HTTP on the GET stream (which we open after `initialize`), over SSE on the one
    stream there is."""
    url = request.getfixturevalue("http_url" if transport == "http" else "sse_url")
    conn = connection(url, transport)
    changes: list[list[str]] = []
    conn.on_tools_changed = lambda c: changes.append([tool.name for tool in c.tools])

    async def body() -> None:
        await conn.start()
        try:
            assert conn.status == "connected", conn.error
            await conn.call_tool("unlock", {}, timeout=10)
            await asyncio.wait_for(conn.tools_settled(), 10)
            for _ in range(100):  # (the notice and the answer travel on different streams)
                if changes:
                    break
                await asyncio.sleep(0.05)
                await conn.tools_settled()
        finally:
            await conn.close()

    asyncio.run(body())
    assert changes and "secret" in changes[-1]


def test_a_server_that_wants_authorization_says_how_to_give_it(handwritten: tuple[str, dict[str, Any]]) -> None:
    url, state = handwritten
    state["token"] = "t0ken"
    refused = connection(url)
    asyncio.run(refused.start())
    assert refused.status == "failed"
    assert refused.error.startswith('HTTP 401: {"error": "invalid_token"} (the server wants authorization: ')
    assert '"Authorization": "Bearer ${TOKEN}"' in refused.error
    allowed = connection(url, headers={"Authorization": "Bearer t0ken"})

    async def body() -> None:
        await allowed.start()
        await allowed.close()

    asyncio.run(body())
    assert allowed.status == "connected", allowed.error
