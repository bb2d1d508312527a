"""The library's builder option (`AgentRuntime.builder().mcp(...)`), and `resume`, which runs
with the MCP configuration the session had."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from clitools import invoke, json_lines, wait_gone, write_script
from mcphelpers import demo_entry, servers_json, started_pids


def test_builder_option_runs_and_aclose_stops_the_server(workspace: Path, demo_dir: Path) -> None:
    from recursive_cli import AgentRuntime, Settings
    from recursive_cli.providers.scripted import ScriptedProvider

    provider = ScriptedProvider([
        {"tool_calls": [{"name": "mcp__demo__weather", "arguments": {"city": "Bern"}}]}, {"text": "mild"}])

    async def main() -> tuple[str, str, list[str]]:
        runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace)).provider(provider)
                   .mcp({"demo": demo_entry()}).build())
        try:
            outcome = await runtime.run("weather in Bern?")
        finally:
            await runtime.aclose()
        answer = next(m.content for m in runtime.transcript() if m.role == "tool")
        return outcome.text, answer, runtime.tools.names()

    text, answer, names = asyncio.run(main())
    assert text == "mild"
    assert json.loads(answer) == {"city": "Bern", "celsius": 21.5}
    assert "mcp__demo__weather" in names
    assert all(wait_gone(pid) for pid in started_pids(demo_dir))


def test_resume_uses_the_sessions_mcp_config(workspace: Path, demo_dir: Path) -> None:
    config = servers_json(demo=demo_entry())
    script = write_script(workspace.parent / "script.json", [
        {"text": "hello"},
        {"tool_calls": [{"name": "mcp__demo__weather", "arguments": {"city": "Oslo"}}]}, {"text": "done"}])
    result = invoke("run", "hi", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                    "--mcp-config", config, "--strict-mcp-config", "-o", "json")
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)["session_id"]
    (workspace / ".mcp.json").write_text(servers_json(other={"command": "no-such-xyz"}))  # strict: not used
    resumed = invoke("resume", session, "again", "-o", "stream-json", cwd=workspace)
    assert resumed.returncode == 0, resumed.stderr
    lines = json_lines(resumed.stdout)
    assert "mcp__demo__weather" in lines[0]["tools"]
    assert "other" not in resumed.stderr
    tool = next(b for line in lines if line["type"] == "user" for b in line["message"]["content"])
    assert not tool["is_error"], tool["content"]
