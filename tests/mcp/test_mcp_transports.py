"""Streamable HTTP and legacy SSE (the demo server over each), and published servers: the
reference `@modelcontextprotocol/server-everything` (npx) and `mcp-server-time` (PyPI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, json_lines, write_script
from mcphelpers import command_or_skip, servers_json, time_server


def run(workspace: Path, config: str, calls: list[dict[str, Any]]) -> tuple[Any, list[dict]]:
    script = write_script(workspace.parent / "script.json", [{"tool_calls": calls}, {"text": "done"}])
    result = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                    "--strict-mcp-config", "--mcp-config", config, "-o", "stream-json", "--no-checkpoints")
    return result, json_lines(result.stdout)


def results(lines: list[dict]) -> list[dict]:
    return [block for line in lines if line["type"] == "user" for block in line["message"]["content"]
            if block.get("type") == "tool_result"]


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_http_transports(transport: str, workspace: Path, demo_dir: Path, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("http_url" if transport == "http" else "sse_url")
    config = servers_json(remote={"type": transport, "url": url, "headers": {"X-Test": "${HOME}"}})
    result, lines = run(workspace, config, [{"name": "mcp__remote__weather", "arguments": {"city": "Lima"}},
                                            {"name": "mcp__remote__fail", "arguments": {"reason": "remote"}}])
    assert result.returncode == 0, result.stderr
    ok, failed = results(lines)
    assert json.loads(ok["content"]) == {"city": "Lima", "celsius": 21.5}
    assert failed["is_error"] and "failing on purpose: remote" in failed["content"]


def test_an_unreachable_url_fails_that_server(workspace: Path, demo_dir: Path) -> None:
    from mcphelpers import free_port

    config = servers_json(gone={"type": "http", "url": f"http://127.0.0.1:{free_port()}/mcp"})
    result, lines = run(workspace, config, [])
    assert result.returncode == 0
    assert "warning: MCP server 'gone' failed to start:" in result.stderr


def npx_or_skip() -> str:
    return command_or_skip("npx", "npx is missing (Node.js): the reference MCP server cannot run here",
                           "npx is missing: the CI machine needs Node.js for the reference MCP server")


def test_reference_server_everything(workspace: Path) -> None:
    npx = npx_or_skip()
    config = servers_json(everything={"command": npx, "args": ["-y", "@modelcontextprotocol/server-everything"]})
    listed = invoke("mcp", "get", "everything", "--json", "--strict-mcp-config", "--mcp-config", config,
                    "-C", str(workspace), env={"RECURSIVE_MCP_TIMEOUT": "120s"})
    assert listed.returncode == 0, listed.stderr
    tools = {tool["server_tool"]: tool for tool in json.loads(listed.stdout)["tools"]}
    assert {"echo", "get-sum", "get-tiny-image"} <= set(tools)
    assert tools["get-sum"]["parameters"]["properties"]["a"]["type"] == "number"
    result, lines = run(workspace, config, [
        {"name": "mcp__everything__echo", "arguments": {"message": "hello there"}},
        {"name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 40}},
        {"name": "mcp__everything__get-tiny-image", "arguments": {}}])
    assert result.returncode == 0, result.stderr
    echo, total, image = results(lines)
    assert "hello there" in echo["content"]
    assert "42" in total["content"]
    assert "[image: image/png," in image["content"] and "binary content not shown" in image["content"]
    assert not any(block["is_error"] for block in (echo, total, image))


def test_published_python_server_mcp_server_time(workspace: Path) -> None:
    config = servers_json(time={"command": time_server(), "args": ["--local-timezone", "UTC"]})
    result, lines = run(workspace, config, [
        {"name": "mcp__time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
        {"name": "mcp__time__get_current_time", "arguments": {"timezone": "Not/AZone"}}])
    assert result.returncode == 0, result.stderr
    tokyo, bad = results(lines)
    assert json.loads(tokyo["content"])["timezone"] == "Asia/Tokyo"
    assert bad["is_error"]

