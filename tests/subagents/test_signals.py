"""Ctrl-C, the SDK's interrupt and `kill -9` while a subagent waits for its model: the parent's
task call is answered (or repaired on resume) like any interrupted tool call."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from clitools import invoke, json_lines, require, wait_until
from fakeserver import FakeLLMServer

from .conftest import AgentCli

ROOT = Path(__file__).resolve().parents[2]
AGENTS = json.dumps({"slow": {"description": "Takes its time", "prompt": "SLOW AGENT"}})
INTERRUPTED = "interrupted before completion; effects unknown"


def task_call() -> dict[str, Any]:
    return {"tool_calls": [{"name": "task", "id": "call_t", "arguments": {
        "description": "slow work", "prompt": "Take your time.", "subagent_type": "slow"}}]}


def start(server: FakeLLMServer, workspace: Path, session: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "recursive_cli", "run", "work", "-C", str(workspace), "--provider", "openai",
         "--api-base", server.openai_base_url, "-m", "fake-model", "--no-checkpoints", "--session-id", session,
         "--agents", AGENTS, "-o", "stream-json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def records(home: Path, session: str) -> list[dict[str, Any]]:
    text = (home / "sessions" / session / "transcript.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_ctrl_c_during_a_subagent_stops_it_and_answers_the_task_call(workspace: Path, isolated_home: Path) -> None:
    release = threading.Event()
    with FakeLLMServer([task_call(), {"text": "never seen", "hold": release}]) as server:
        proc = start(server, workspace, "s-int")
        wait_until(lambda: len(server.requests) >= 2, proc=proc)  # the subagent waits for its model
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        release.set()

    assert proc.returncode == 130, err
    lines = json_lines(out)
    assert [(line["status"], line["tool_use_id"]) for line in lines if line.get("subtype") == "task_notification"] \
        == [("stopped", "call_t")]
    assert lines[-1]["subtype"] == "interrupted"
    kept = records(isolated_home, "s-int")
    answers = [r["message"] for r in kept if r["type"] == "message" and r["message"]["role"] == "tool"]
    assert [(a["tool_call_id"], a["content"]) for a in answers] == [("call_t", INTERRUPTED)]
    assert [r["message"]["content"] for r in kept if r["type"] == "subagent_message"] == ["Take your time."]


def test_kill_9_during_a_subagent_then_resume_repairs_the_task_call(workspace: Path, isolated_home: Path) -> None:
    release = threading.Event()
    with FakeLLMServer([task_call(), {"text": "never seen", "hold": release}]) as server:
        proc = start(server, workspace, "s-kill")
        wait_until(lambda: len(server.requests) >= 2, proc=proc)
        proc.kill()
        proc.communicate(timeout=30)
        release.set()
    assert proc.returncode == -signal.SIGKILL

    with FakeLLMServer([{"text": "picked up again"}]) as server:
        result = invoke("resume", "s-kill", "go on", "--provider", "openai", "--api-base", server.openai_base_url,
                        "-m", "fake-model", "--no-checkpoints")
        sent = server.requests[0].body["messages"]
        tools = [tool["function"]["name"] for tool in server.requests[0].body["tools"]]

    assert result.returncode == 0, result.stderr
    assert result.stdout == "picked up again\n"
    assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [("call_t", INTERRUPTED)]
    assert "SLOW AGENT" not in json.dumps(sent)  # the subagent's conversation is not the parent's
    assert "task" in tools  # the session's --agents, kept for resume
    kept = records(isolated_home, "s-kill")
    assert [r["tool_call_id"] for r in kept if r["type"] == "repair"] == ["call_t"]
    assert [r["type"] for r in kept].count("task_started") == 1


def test_the_sdk_clients_interrupt_reaches_a_running_subagent(agent_cli: AgentCli) -> None:
    require("claude_agent_sdk")
    from claude_agent_sdk import (
        AgentDefinition,
        ClaudeAgentOptions,
        ClaudeSDKClient,
        ResultMessage,
        TaskNotificationMessage,
        TaskStartedMessage,
    )

    release = threading.Event()
    agent_cli.server.add(task_call(), {"text": "never seen", "hold": release})
    options = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env(),
                                 agents={"slow": AgentDefinition(description="Takes its time", prompt="SLOW AGENT")})

    async def run() -> list[Any]:
        seen: list[Any] = []
        async with ClaudeSDKClient(options=options) as client:
            await client.query("work")
            async for message in client.receive_response():
                seen.append(message)
                if isinstance(message, TaskStartedMessage):
                    await asyncio.to_thread(wait_until, lambda: len(agent_cli.server.requests) >= 2)
                    await client.interrupt()
        return seen

    try:
        messages = asyncio.run(asyncio.wait_for(run(), 60))
    finally:
        release.set()

    notes = [m for m in messages if isinstance(m, TaskNotificationMessage)]
    assert [(m.status, m.tool_use_id) for m in notes] == [("stopped", "call_t")]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and (result.subtype, result.errors) == ("error_during_execution",
                                                                                    ["interrupted"])
    assert len(agent_cli.server.requests) == 2  # nothing more was asked of the model
