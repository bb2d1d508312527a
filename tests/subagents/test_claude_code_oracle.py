"""The oracle: the same Agent SDK program with `agents=`, once on the real Claude Code CLI that
the SDK bundles and once on `recursive`, both on the same loopback Anthropic-shaped model, gets
the same messages: the Agent call, the task lines, the subagent's prompt, tool call and result
under the Agent call's id, the hand-back and the answer.

Claude Code's `task_progress` and `task_updated` lines are left out of the comparison: they are
optional progress notes (the SDKs need `task_started` and `task_notification`), which we do not
write. The model answers by what each request is: the subagent's (its prompt in the system
prompt), the main conversation's (it has the Agent tool), or any other request Claude Code
makes (a plain "ok").
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from clitools import require

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AgentDefinition,
    ClaudeAgentOptions,
    ResultMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskUpdatedMessage,
    ToolResultBlock,
    UserMessage,
    query,
)

CLAUDE = Path(sdk.__file__).parent / "_bundled" / "claude"
ROOT = Path(__file__).resolve().parents[2]
MARK = "REVIEWER PROMPT"


def reply(body: dict[str, Any], workspace: Path) -> list[dict[str, Any]]:
    """The model's content blocks for one request."""
    tools = [tool.get("name") for tool in body.get("tools", [])]
    answered = any(block.get("type") == "tool_result" for message in body.get("messages", [])
                   if isinstance(message.get("content"), list) for block in message["content"])
    if MARK in json.dumps(body.get("system", "")):
        if answered:
            return [{"type": "text", "text": "notes.txt has one TODO."}]
        read = ({"name": "read_file", "input": {"path": "notes.txt"}} if "read_file" in tools
                else {"name": "Read", "input": {"file_path": str(workspace / "notes.txt")}})
        return [{"type": "text", "text": "Reading it."}, {"type": "tool_use", "id": "toolu_read", **read}]
    agent = next((name for name in ("Agent", "Task", "task") if name in tools), None)
    if agent is None:
        return [{"type": "text", "text": "ok"}]
    if answered:
        return [{"type": "text", "text": "The reviewer found one TODO."}]
    return [{"type": "tool_use", "id": "toolu_agent", "name": agent, "input": {
        "description": "review notes", "prompt": "Review notes.txt.", "subagent_type": "reviewer",
        "run_in_background": False}}]


class _Model(BaseHTTPRequestHandler):
    workspace = Path()  # (set by the test)

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if "count_tokens" in self.path:
            return self._json({"input_tokens": 10})
        blocks = reply(body, self.workspace)
        stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
        message = {"id": "msg_oracle", "type": "message", "role": "assistant", "model": body.get("model", "m"),
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 1}}
        if not body.get("stream"):
            return self._json({**message, "content": blocks, "stop_reason": stop,
                               "usage": {"input_tokens": 10, "output_tokens": 5}})
        events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [{"type": "content_block_start", "index": index, "content_block": start},
                       {"type": "content_block_delta", "index": index, "delta": delta},
                       {"type": "content_block_stop", "index": index}]
        events += [{"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5}}, {"type": "message_stop"}]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in events:
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

    def _json(self, value: dict[str, Any]) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def model_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def conversation(cli: str, workspace: Path, env: dict[str, str]) -> list[Any]:
    options = ClaudeAgentOptions(
        cli_path=cli, cwd=str(workspace), env=env, model="claude-sonnet-4-5", permission_mode="acceptEdits",
        allowed_tools=["Read", "Agent"],
        agents={"reviewer": AgentDefinition(description="Reviews files", prompt=f"{MARK}: review and report.",
                                            tools=["Read", "Grep"])})

    async def run() -> list[Any]:
        return [message async for message in query(prompt="review notes.txt", options=options)]

    return asyncio.run(asyncio.wait_for(run(), 90))


def shape(messages: list[Any]) -> list[tuple[Any, ...]]:
    """What the comparison looks at: each message's class, whether it is the subagent's, and
    the kinds of its blocks (tool uses with their names)."""
    shown = []
    for message in messages[1:]:  # (the init lines differ: tools, versions, settings)
        if isinstance(message, (TaskProgressMessage, TaskUpdatedMessage)):
            continue
        content = getattr(message, "content", None)
        blocks = tuple(type(block).__name__ + (f":{block.name}" if hasattr(block, "name") else "")
                       for block in content) if isinstance(content, list) else None
        shown.append((type(message).__name__, getattr(message, "parent_tool_use_id", None), blocks))
    return shown


@pytest.mark.skipif(not CLAUDE.is_file() or sys.platform != "linux", reason="the SDK bundles no Claude Code here")
def test_recursive_streams_a_subagent_as_claude_code_does(tmp_path: Path, model_url: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("TODO: fix\n", encoding="utf-8")
    _Model.workspace = workspace
    keys = {"ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "sk-test", "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1", "HOME": str(tmp_path / "home")}
    wrapper = tmp_path / "recursive-for-sdk"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m recursive_cli --provider anthropic --api-base '
                       f'{model_url} --no-checkpoints "$@"\n', encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    ours_env = {**keys, "RECURSIVE_HOME": str(tmp_path / "rhome"), "RECURSIVE_API_KEY": "sk-test",
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    theirs = conversation(str(CLAUDE), workspace, keys)
    ours = conversation(str(wrapper), workspace, ours_env)

    assert shape(ours) == shape(theirs)
    assert shape(ours)[:3] == [("AssistantMessage", None, ("ToolUseBlock:Agent",)),
                               ("TaskStartedMessage", None, None),
                               ("UserMessage", "toolu_agent", ("TextBlock",))]
    summaries = [[m.summary for m in found if isinstance(m, TaskNotificationMessage)] for found in (ours, theirs)]
    assert summaries[0] == summaries[1] == ["notes.txt has one TODO."]
    read = [[str(block.content) for m in found if isinstance(m, UserMessage) and m.parent_tool_use_id
             for block in m.content if isinstance(block, ToolResultBlock)] for found in (ours, theirs)]
    assert all(len(texts) == 1 and "TODO: fix" in texts[0] for texts in read), read
    results = [found[-1] for found in (ours, theirs)]
    assert all(isinstance(r, ResultMessage) and r.result == "The reviewer found one TODO." for r in results)
