"""`recursive mcp list`, `mcp get`, `tools` with MCP servers; where servers are configured and
with what precedence; malformed configurations (exit 2, naming file and key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import invoke
from mcphelpers import demo_entry, servers_json


def listed(workspace: Path, *args: str) -> tuple[int, list[dict], str]:
    result = invoke("mcp", "list", "--json", "-C", str(workspace), *args)
    return result.returncode, json.loads(result.stdout or "[]"), result.stderr


def test_list_shows_origin_status_and_tools_and_fails_when_one_failed(workspace: Path, demo_dir: Path) -> None:
    (workspace / ".mcp.json").write_text(servers_json(demo=demo_entry(), broken={"command": "no-such-xyz"}))
    result = invoke("mcp", "list", "-C", str(workspace))
    assert result.returncode == 1
    demo, broken = result.stdout.splitlines()
    assert demo.startswith("✓ demo\tconnected\tstdio\tproject ")
    assert "mcp__demo__weather" in demo and "9 tools" in demo
    assert broken.split("\t")[1:] == ["failed", "stdio", f"project {workspace.resolve() / '.mcp.json'}",
                                      "command not found: no-such-xyz"]


def test_sources_and_precedence(workspace: Path, demo_dir: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "mcp.json").write_text(servers_json(mine={"command": "user-cmd"}, shared={"command": "user-cmd"}))
    (workspace / ".mcp.json").write_text(servers_json(shared={"command": "project-cmd"},
                                                      proj={"command": "project-cmd"}))
    flag = servers_json(proj={"command": "flag-cmd"})
    code, servers, _ = listed(workspace, "--mcp-config", flag)
    assert code == 1  # none of these commands exist
    by_name = {s["name"]: s for s in servers}
    assert by_name["mine"]["origin"] == f"user {isolated_home / 'mcp.json'}"
    assert by_name["shared"]["origin"].startswith("project ") and "project-cmd" in by_name["shared"]["error"]
    assert by_name["proj"]["origin"] == "--mcp-config (JSON)" and "flag-cmd" in by_name["proj"]["error"]
    code, servers, _ = listed(workspace, "--mcp-config", flag, "--strict-mcp-config")
    assert [s["name"] for s in servers] == ["proj"]


def test_config_file_flag_and_get(workspace: Path, demo_dir: Path) -> None:
    config = workspace.parent / "servers.json"
    config.write_text(servers_json(demo=demo_entry()))
    result = invoke("mcp", "get", "demo", "--json", "--mcp-config", str(config), "-C", str(workspace))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["origin"] == f"--mcp-config {config}"
    weather = next(t for t in data["tools"] if t["name"] == "mcp__demo__weather")
    assert weather["read_only"] is True
    assert weather["parameters"]["required"] == ["city"]
    assert data["prompts"] == [{"command": "/mcp__demo__review", "description": "Ask for a review of one file.",
                                "arguments": [{"name": "path", "required": True, "description": ""},
                                              {"name": "focus", "required": False, "description": ""}]}]
    shown = invoke("mcp", "get", "demo", "--mcp-config", str(config), "-C", str(workspace))
    assert "\n/mcp__demo__review PATH [FOCUS] [prompt]\n  Ask for a review of one file.\n" in shown.stdout
    missing = invoke("mcp", "get", "nope", "--mcp-config", str(config), "-C", str(workspace))
    assert missing.returncode == 2
    assert missing.stderr == "error: no MCP server named 'nope' (configured: demo)\n"


def test_tools_lists_mcp_tools(workspace: Path, demo_dir: Path) -> None:
    result = invoke("tools", "--json", "--mcp-config", servers_json(demo=demo_entry()), "-C", str(workspace))
    assert result.returncode == 0, result.stderr
    names = [tool["name"] for tool in json.loads(result.stdout)]
    assert names[0] == "read_file"
    assert {"mcp__demo__weather", "mcp__demo__touch", "list_mcp_resources", "read_mcp_resource"} <= set(names)


def test_no_servers(workspace: Path) -> None:
    result = invoke("mcp", "list", "-C", str(workspace))
    assert result.returncode == 0 and result.stdout == ""
    assert "no MCP servers configured" in result.stderr


@pytest.mark.parametrize(("text", "message"), [
    ('{"mcpServers": {"a": {"command": 3}}}', "mcpServers.a.command: expected a string"),
    ('{"mcpServers": {"a": {"command": "x", "args": "-v"}}}', "mcpServers.a.args: expected a list of strings"),
    ('{"mcpServers": {"a": {"type": "websocket", "url": "ws://x"}}}', "mcpServers.a.type: expected stdio, http or sse"),
    ('{"mcpServers": {"a": {"type": "http", "url": "localhost:3000"}}}', "mcpServers.a.url: expected an http:// or https:// URL"),
    ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "mcpServers.a.env: expected an object of string values"),
    ('{"mcpServers": [1]}', "mcpServers: expected an object"),
    ('{"mcpServers": ', "not valid JSON"),
])
def test_a_malformed_file_names_file_and_key_and_exits_1(workspace: Path, text: str, message: str) -> None:
    (workspace / ".mcp.json").write_text(text)
    for args in (("mcp", "list"), ("run", "hi", "--provider", "scripted"), ("tools",)):
        result = invoke(*args, "-C", str(workspace))
        assert result.returncode == 1, (args, result.stderr)  # a config file found on disk
        assert result.stderr.startswith(f"error: {workspace.resolve() / '.mcp.json'}: {message}"), result.stderr
        assert len(result.stderr.splitlines()) == 1


def test_a_bad_flag_value_exits_2(workspace: Path) -> None:
    result = invoke("run", "hi", "--provider", "scripted", "--mcp-config", "no-such-file.json", "-C", str(workspace))
    assert result.returncode == 2
    assert result.stderr == "error: --mcp-config: 'no-such-file.json' is neither JSON text nor a file that exists\n"
    result = invoke("run", "hi", "--provider", "scripted", "--mcp-config", '{"mcpServers": {"a": {}}}',
                    "-C", str(workspace))
    assert result.returncode == 2
    assert result.stderr == "error: --mcp-config (JSON): mcpServers.a.command: expected a string (it is required)\n"
    result = invoke("mcp", "list", "-C", str(workspace), env={"MCP_TIMEOUT": "soon"})
    assert result.returncode == 1 and "MCP_TIMEOUT: expected milliseconds" in result.stderr  # (a variable)
