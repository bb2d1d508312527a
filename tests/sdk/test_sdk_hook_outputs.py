"""What hooks say back reaches the run as Claude Code applies it, through the real Agent SDK:
PreToolUse/PostToolUse `additionalContext` reaches the model after the call's result (in
Claude Code's `<system-reminder>` words), and PostToolUse `continue: false` ends the turn after
that call: one model request, a `success` result with `terminal_reason: "hook_stopped"` (what
the real Claude Code CLI reports against the same scripted model). Both for the program's own
callbacks (`hooks=`) and for the workspace's command hooks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from clitools import require

from .conftest import AgentCli
from .test_python_sdk import call, collect, options, result_of

sdk = require("claude_agent_sdk")

from claude_agent_sdk import HookMatcher  # noqa: E402

ECHO = {"tool_calls": [call("run_shell", command="echo hi > out.txt")]}
TWO = {"tool_calls": [call("run_shell", command="echo one > one.txt"),
                      call("run_shell", command="echo two > two.txt")]}


def tool_contents(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def test_callback_hooks_additional_context_reaches_the_model(agent_cli: AgentCli) -> None:
    agent_cli.server.add(ECHO, {"text": "done"})

    async def pre(hook_input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        return context("PreToolUse", "the build is green")

    async def post(hook_input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        return context("PostToolUse", "out.txt is generated")

    result = result_of(collect("go", options(agent_cli, allowed_tools=["Bash"], hooks={
        "PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre])],
        "PostToolUse": [HookMatcher(matcher="Bash", hooks=[post])]})))

    assert (result.subtype, result.result) == ("success", "done")
    (seen,) = tool_contents(agent_cli.server.requests[1].body)
    assert seen.endswith("<system-reminder>\nPreToolUse:Bash hook additional context: the build is green\n"
                         "</system-reminder>\n\n<system-reminder>\nPostToolUse:Bash hook additional context: "
                         "out.txt is generated\n</system-reminder>")
    assert (agent_cli.workspace / "out.txt").read_text() == "hi\n"


def test_callback_post_tool_use_continue_false_stops_the_turn(agent_cli: AgentCli) -> None:
    agent_cli.server.add(TWO, {"text": "never asked for"})

    async def stop(hook_input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        return {"continue": False, "stopReason": "the release freeze is on"}

    messages = collect("go", options(agent_cli, allowed_tools=["Bash"], hooks={
        "PostToolUse": [HookMatcher(matcher="Bash", hooks=[stop])]}))

    result = result_of(messages)
    assert (result.subtype, result.is_error, result.result) == ("success", False, "")
    assert result.terminal_reason == "hook_stopped"
    assert len(agent_cli.server.requests) == 1  # no model request after the stop
    assert (agent_cli.workspace / "one.txt").exists() and not (agent_cli.workspace / "two.txt").exists()


def _hook_script(tmp_path: Path, output: dict[str, Any]) -> str:
    path = tmp_path / "hook.py"
    path.write_text(f"import sys, json\njson.load(sys.stdin)\nprint(json.dumps({output!r}))\n")
    return f"{sys.executable} {path}"


def _project_hooks(cli: AgentCli, event: str, command: str) -> None:
    folder = cli.workspace / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"hooks": {event: [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}))


def test_command_hooks_additional_context_reaches_the_model(agent_cli: AgentCli, tmp_path: Path) -> None:
    _project_hooks(agent_cli, "PreToolUse", _hook_script(tmp_path, context("PreToolUse", "from the script")))
    agent_cli.server.add(ECHO, {"text": "done"})

    result = result_of(collect("go", options(agent_cli, allowed_tools=["Bash"], setting_sources=["project"])))

    assert result.subtype == "success"
    (seen,) = tool_contents(agent_cli.server.requests[1].body)
    assert seen.endswith("<system-reminder>\nPreToolUse:Bash hook additional context: from the script\n"
                         "</system-reminder>")


def test_command_post_tool_use_continue_false_stops_the_turn(agent_cli: AgentCli, tmp_path: Path) -> None:
    stop = {"continue": False, "stopReason": "enough"}
    _project_hooks(agent_cli, "PostToolUse", _hook_script(tmp_path, stop))
    agent_cli.server.add(TWO, {"text": "never asked for"})

    result = result_of(collect("go", options(agent_cli, allowed_tools=["Bash"], setting_sources=["project"])))

    assert (result.subtype, result.is_error, result.terminal_reason) == ("success", False, "hook_stopped")
    assert len(agent_cli.server.requests) == 1
    assert not (agent_cli.workspace / "two.txt").exists()
