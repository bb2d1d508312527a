"""Claude Code's headless mode (`recursive -p`) with `--mcp-config`: real servers in the init
line and as tools, Claude's permission rules for them, and no server left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clitools import json_lines, run_cli, wait_gone, write_script
from mcphelpers import demo_entry, servers_json, started_pids

CONFIG = servers_json(demo=demo_entry(), broken={"command": "no-such-mcp-server-xyz"})


def headless(workspace: Path, replies: list[dict[str, Any]], *args: str) -> tuple[int, list[dict], str]:
    script = write_script(workspace.parent / "script.json", replies)
    proc = run_cli("-p", "go", "--provider", "scripted", "--script", str(script), "--output-format", "stream-json",
                   "--mcp-config", CONFIG, "-C", str(workspace), *args, cwd=workspace)
    return proc.returncode, json_lines(proc.stdout), proc.stderr


def results(lines: list[dict]) -> list[dict]:
    return [block for line in lines if line["type"] == "user" for block in line["message"]["content"]
            if block.get("type") == "tool_result"]


def calls(*names: str) -> dict[str, Any]:
    arguments = {"mcp__demo__weather": {"city": "Oslo"}, "mcp__demo__touch": {"path": "made.txt"}}
    return {"tool_calls": [{"name": name, "arguments": arguments[name]} for name in names]}


def test_init_line_tools_and_default_mode(workspace: Path, demo_dir: Path) -> None:
    code, lines, err = headless(workspace, [calls("mcp__demo__weather", "mcp__demo__touch"), {"text": "done"}])
    assert code == 0, err
    init = lines[0]
    assert init["mcp_servers"] == [{"name": "demo", "status": "connected"}, {"name": "broken", "status": "failed"}]
    assert "mcp__demo__weather" in init["tools"] and "ListMcpResourcesTool" in init["tools"]
    assert init["slash_commands"] == ["clear", "mcp__demo__review"]  # /clear, and its prompt, as Claude Code lists them
    weather, touch = results(lines)
    assert not weather["is_error"]  # read-only: no permission needed, as for Read
    assert touch["is_error"] and "needs permission" in touch["content"]
    assert [d["tool_name"] for d in lines[-1]["permission_denials"]] == ["mcp__demo__touch"]
    assert err.count("MCP server 'broken' failed to start") == 1
    assert all(wait_gone(pid) for pid in started_pids(demo_dir))


def test_allowed_tools_by_server(workspace: Path, demo_dir: Path) -> None:
    code, lines, err = headless(workspace, [calls("mcp__demo__touch"), {"text": "done"}], "--allowedTools", "mcp__demo")
    assert code == 0, err
    assert not results(lines)[0]["is_error"]
    assert (demo_dir / "made.txt").exists()


def test_disallowed_tools_remove_an_mcp_tool(workspace: Path, demo_dir: Path) -> None:
    code, lines, err = headless(workspace, [{"text": "done"}], "--disallowedTools", "mcp__demo__touch")
    assert code == 0, err
    tools = lines[0]["tools"]
    assert "mcp__demo__touch" not in tools and "mcp__demo__weather" in tools
    assert "no tool" not in err
