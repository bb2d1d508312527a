"""A subagent that calls tools, read back through the Agent SDK's own `list_subagents()` and
`get_subagent_messages()` (the files beside the session's Claude-layout transcript, as Claude
Code writes them; tests/sdk/test_sdk_subagent_reads.py has the SessionStore and `sessions rm`);
a run killed mid-task leaves what the subagent said so far."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from clitools import require, wait_until
from fakeserver import FakeLLMServer

from .conftest import AgentCli
from .test_sdk_agents import collect, script_review
from .test_signals import AGENTS, ROOT, task_call

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    ResultMessage,
    TaskStartedMessage,
    get_session_messages,
    get_subagent_messages,
    list_subagents,
)


def _ids(messages: list[Any]) -> tuple[str, str]:
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error, messages
    return result.session_id, next(m.task_id for m in messages if isinstance(m, TaskStartedMessage))


def _subagent_shape(read: list[Any]) -> list[tuple[str, Any]]:
    """(type, what each message holds): the prompt, the text and tool uses of a reply, results."""
    shown = []
    for message in read:
        content = message.message["content"]
        if isinstance(content, str):
            shown.append((message.type, content))
        else:
            shown.append((message.type, [block.get("text") or block.get("name") or
                                         (block["tool_use_id"], "TODO: fix" in str(block["content"]))
                                         for block in content]))
    return shown


def test_the_sdk_lists_and_reads_a_subagents_conversation(agent_cli: AgentCli) -> None:
    script_review(agent_cli)

    session_id, agent_id = _ids(collect(agent_cli))

    workspace = str(agent_cli.workspace)
    assert list_subagents(session_id, workspace) == [agent_id]
    assert list_subagents(session_id) == [agent_id]  # (found in any project folder, as the SDK looks)
    read = get_subagent_messages(session_id, agent_id, workspace)
    assert _subagent_shape(read) == [
        ("user", "Review notes.txt."),
        ("assistant", ["Reading it.", "Read"]),
        ("user", [("call_read", True)]),
        ("assistant", ["notes.txt has one TODO."])]
    assert {(m.parent_tool_use_id, m.session_id) for m in read} == {("call_task", session_id)}
    assert get_subagent_messages(session_id, agent_id, workspace, limit=1, offset=1)[0].uuid == read[1].uuid
    # The main conversation stays the agent's alone: the task call, its report, the answer.
    main = get_session_messages(session_id, workspace)
    assert [m.type for m in main] == ["user", "assistant", "user", "assistant"]
    assert "Reading it." not in json.dumps([m.message for m in main])
    (view,) = Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}/subagents/agent-{agent_id}.meta.json")
    meta = json.loads(view.read_text())
    assert {key: meta[key] for key in ("agentType", "description", "toolUseId", "finished")} == {
        "agentType": "reviewer", "description": "review notes", "toolUseId": "call_task", "finished": True}
    entries = [json.loads(line) for line in view.with_name(f"agent-{agent_id}.jsonl").read_text().splitlines()]
    assert {(e["isSidechain"], e["agentId"]) for e in entries} == {(True, agent_id)}
    assert entries[0]["parentUuid"] is None
    assert [e["parentUuid"] for e in entries[1:]] == [e["uuid"] for e in entries[:-1]]


def test_kill_9_during_a_subagent_leaves_what_it_said_readable(tmp_path: Path, workspace: Path) -> None:
    """The subagent's file is written as it goes (a whole line at a time) and its metadata
    before its first message: a run killed mid-task leaves both, not yet `finished`."""
    session_id = str(uuid.uuid4())
    release = threading.Event()
    with FakeLLMServer([task_call(), {"text": "never seen", "hold": release}]) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "recursive_cli", "-p", "work", "--provider", "openai", "--api-base",
             server.openai_base_url, "-m", "fake-model", "--no-checkpoints", "--session-id", session_id,
             "--agents", AGENTS, "--output-format", "stream-json", "--verbose"],
            cwd=workspace, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        wait_until(lambda: len(server.requests) >= 2, proc=proc)  # the subagent waits for its model
        proc.kill()
        proc.communicate(timeout=30)
        release.set()
    assert proc.returncode == -signal.SIGKILL

    (agent_id,) = list_subagents(session_id, str(workspace))
    read = get_subagent_messages(session_id, agent_id, str(workspace))
    assert [(m.type, m.message["content"], m.parent_tool_use_id) for m in read] == [
        ("user", "Take your time.", "call_t")]
    (meta,) = Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}/subagents/agent-{agent_id}.meta.json")
    assert json.loads(meta.read_text())["agentType"] == "slow" and "finished" not in json.loads(meta.read_text())
