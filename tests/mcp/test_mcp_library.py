"""The library's builder option (`AgentRuntime.builder().mcp(...)`), and `resume`, which runs
with the MCP configuration the session had."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

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


def test_tools_a_server_adds_mid_turn_are_named_in_the_system_prompt_from_the_next_turn(
        workspace: Path, demo_dir: Path) -> None:
    """A tool the server adds during a turn is offered at the turn's next step; the transcript
    keeps every message of that turn, and the system prompt's tool list names the tool from the
    next turn on."""
    from recursive_cli import AgentRuntime, Settings
    from recursive_cli.providers.scripted import ScriptedProvider

    provider = ScriptedProvider([{"tool_calls": [{"name": "mcp__demo__unlock", "arguments": {}}]},
                                 {"tool_calls": [{"name": "mcp__demo__secret", "arguments": {"word": "w"}}]},
                                 {"text": "one"}, {"text": "two"}])

    async def main() -> tuple[list[str], list[str], list[str]]:
        runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace)).provider(provider)
                   .mcp({"demo": demo_entry()}).build())
        try:
            await runtime.run("first")
            after_first = [m.role for m in runtime.transcript()]
            prompt_then = runtime.transcript()[0].content
            await runtime.run("second")
            return after_first, [prompt_then], [runtime.transcript()[0].content]
        finally:
            await runtime.aclose()

    roles, (first_prompt,), (second_prompt,) = asyncio.run(main())
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert "mcp__demo__secret" not in first_prompt  # (the turn's steps held the transcript)
    assert "mcp__demo__secret" in second_prompt


def test_a_servers_prompts_as_commands(workspace: Path, demo_dir: Path) -> None:
    """The SDK's server's prompt `review` is the command `/mcp__demo__review PATH [FOCUS]`: its
    text filled from the words in order (the last argument takes the rest); a required one
    missing says the usage."""
    import pytest

    from recursive_cli import AgentRuntime, Settings
    from recursive_cli.providers.scripted import ScriptedProvider

    async def main() -> tuple[dict[str, Any], str, str, str]:
        runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace)).provider(ScriptedProvider([]))
                   .mcp({"demo": demo_entry()}).build())
        try:
            manager = runtime.mcp()
            assert manager is not None
            await manager.start(runtime)
            commands = manager.prompt_commands()
            plain = await manager.prompt_text("/mcp__demo__review", ["src/a.py"])
            focused = await manager.prompt_text("/mcp__demo__review", ["src/a.py", "race", "conditions"])
            with pytest.raises(ValueError) as usage:
                await manager.prompt_text("/mcp__demo__review", [])
            return commands, plain, focused, str(usage.value)
        finally:
            await runtime.aclose()

    commands, plain, focused, usage = asyncio.run(main())
    (server, prompt), = [commands["/mcp__demo__review"]]
    assert server == "demo" and prompt.description == "Ask for a review of one file."
    assert [(a.name, a.required) for a in prompt.arguments] == [("path", True), ("focus", False)]
    assert plain == "Review src/a.py, looking for bugs."
    assert focused == "Review src/a.py, looking for race conditions."
    assert usage == "usage: /mcp__demo__review PATH [FOCUS] (path missing)"
