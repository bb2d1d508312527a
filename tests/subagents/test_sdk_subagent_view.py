"""A subagent's conversation read back through the Agent SDK's own functions: `list_subagents()`
and `get_subagent_messages()` (the files beside the session's Claude-layout transcript, as Claude
Code writes them), and their `SessionStore` counterparts (fed by `--session-mirror`)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from clitools import invoke, require

from .conftest import AgentCli
from .test_sdk_agents import collect, script_review

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    InMemorySessionStore,
    ResultMessage,
    TaskStartedMessage,
    get_session_messages,
    get_subagent_messages,
    get_subagent_messages_from_store,
    list_subagents,
    list_subagents_from_store,
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


def test_a_session_store_gets_the_subagents_conversation(agent_cli: AgentCli) -> None:
    script_review(agent_cli)
    store = InMemorySessionStore()

    session_id, agent_id = _ids(collect(agent_cli, session_store=store))

    workspace = str(agent_cli.workspace)
    assert asyncio.run(list_subagents_from_store(store, session_id, workspace)) == [agent_id]
    mirrored = asyncio.run(get_subagent_messages_from_store(store, session_id, agent_id, workspace))
    on_disk = get_subagent_messages(session_id, agent_id, workspace)
    assert [(m.type, m.uuid, m.parent_tool_use_id) for m in mirrored] == [
        (m.type, m.uuid, "call_task") for m in on_disk]
    assert len(on_disk) == 4


def test_sessions_rm_removes_the_subagents_files_too(agent_cli: AgentCli) -> None:
    script_review(agent_cli)
    session_id, agent_id = _ids(collect(agent_cli))
    assert list_subagents(session_id, str(agent_cli.workspace)) == [agent_id]

    result = invoke("sessions", "rm", session_id, cwd=agent_cli.workspace, env=agent_cli.env())

    assert result.returncode == 0, result.stderr
    assert list_subagents(session_id, str(agent_cli.workspace)) == []
    assert not list(Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}*"))
