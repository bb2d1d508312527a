"""Claude's Python Agent SDK asks `recursive` for thinking as it asks Claude Code
(`max_thinking_tokens=`, `thinking=`, `effort=` become its CLI flags), and reads the model's
thinking back as `ThinkingBlock`s, on the Anthropic provider against the loopback fake model."""

from __future__ import annotations

import asyncio
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from clitools import require
from fakeserver import FakeLLMServer

from .conftest import AgentCli
from .test_typescript_sdk import ts_query, ts_sdk  # noqa: F401 (ts_sdk: the fixture)

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    StreamEvent,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    query,
)

TIMEOUT = 60
THOUGHT = "First list the files, then answer."
SIGNATURE = "EqQBCkgIBRABGAIiQLsig+/=="


@pytest.fixture
def anthropic_cli(tmp_path: Path, fake_model: FakeLLMServer, workspace: Path, isolated_home: Path) -> AgentCli:
    """The SDK's `cli_path`: `recursive` on the Anthropic provider, behind the fake model."""
    log = tmp_path / "stdout.jsonl"
    path = tmp_path / "recursive-anthropic"
    path.write_text("#!/bin/bash\nset -o pipefail\n"
                    f"RECURSIVE_API_KEY=sk-sdk-thinking {sys.executable} -m recursive_cli --provider anthropic --api-base "
                    f'{fake_model.anthropic_base_url} --no-checkpoints "$@" | tee -a {log}\n', encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return AgentCli(path, log, fake_model, workspace, isolated_home)


def collect(cli: AgentCli, env: dict[str, str] | None = None, **kwargs: Any) -> list[Any]:
    opts = ClaudeAgentOptions(cli_path=str(cli.path), cwd=str(cli.workspace),
                              env={**cli.env(), **(env or {})},
                              permission_mode="bypassPermissions", **kwargs)

    async def run() -> list[Any]:
        return [message async for message in query(prompt="What is here?", options=opts)]

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


@pytest.mark.parametrize(("kwargs", "thinking", "effort"), [
    ({"max_thinking_tokens": 4000}, {"type": "enabled", "budget_tokens": 4000}, None),
    ({"thinking": {"type": "enabled", "budget_tokens": 6000}}, {"type": "enabled", "budget_tokens": 6000}, None),
    ({"thinking": {"type": "adaptive"}, "model": "claude-opus-4-6"}, {"type": "adaptive"}, {"effort": "high"}),
    ({"effort": "low", "model": "claude-opus-4-6"}, {"type": "adaptive"}, {"effort": "low"}),
], ids=["max_thinking_tokens", "thinking-enabled", "thinking-adaptive", "effort"])
def test_query_asks_for_thinking_and_reads_thinking_blocks(anthropic_cli: AgentCli, kwargs: dict[str, Any],
                                                           thinking: dict[str, Any],
                                                           effort: dict[str, Any] | None) -> None:
    anthropic_cli.server.add(
        {"thinking": [{"thinking": THOUGHT, "signature": SIGNATURE}], "text": "Looking.",
         "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"thinking": [{"thinking": "Empty folder.", "signature": "EqSecond=="}], "text": "Nothing here."})

    messages = collect(anthropic_cli, **kwargs)

    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    assert replies[0].content[0] == ThinkingBlock(thinking=THOUGHT, signature=SIGNATURE)
    assert isinstance(replies[0].content[1], TextBlock) and isinstance(replies[0].content[2], ToolUseBlock)
    assert replies[1].content[0] == ThinkingBlock(thinking="Empty folder.", signature="EqSecond==")
    assert [m for m in messages if isinstance(m, ResultMessage)][0].result == "Nothing here."
    anthropic_cli.lines()  # every line in its SPEC §4 shape
    first, second = anthropic_cli.server.requests
    for request in (first, second):
        assert request.body["thinking"] == thinking
        assert request.body.get("output_config") == effort
    sent_back = second.body["messages"][1]["content"][0]
    assert sent_back == {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}


def test_max_thinking_tokens_in_the_environment_asks_for_thinking(anthropic_cli: AgentCli) -> None:
    """Claude Code's `MAX_THINKING_TOKENS` (the SDK e2e suite sets it in `env=`), under its flags."""
    anthropic_cli.server.add({"text": "ok"}, {"text": "ok"})
    collect(anthropic_cli, env={"MAX_THINKING_TOKENS": "8000"})
    collect(anthropic_cli, env={"MAX_THINKING_TOKENS": "8000"}, max_thinking_tokens=2048)
    assert [request.body.get("thinking") for request in anthropic_cli.server.requests] == [
        {"type": "enabled", "budget_tokens": 8000}, {"type": "enabled", "budget_tokens": 2048}]


def test_thinking_disabled_sends_none(anthropic_cli: AgentCli) -> None:
    anthropic_cli.server.add({"text": "ok"})
    collect(anthropic_cli, thinking={"type": "disabled"}, effort="high")
    (request,) = anthropic_cli.server.requests
    assert "thinking" not in request.body and "output_config" not in request.body


def test_partial_messages_stream_the_thinking_as_anthropic_does(anthropic_cli: AgentCli) -> None:
    anthropic_cli.server.add(
        {"thinking": [{"thinking": THOUGHT, "signature": SIGNATURE}], "text": "Looking.",
         "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"text": "Nothing here."})

    messages = collect(anthropic_cli, max_thinking_tokens=2048, include_partial_messages=True)

    events = [m.event for m in messages if isinstance(m, StreamEvent)]
    first = events[:next(i for i, e in enumerate(events) if e["type"] == "message_stop")]
    starts = [(e["index"], e["content_block"]["type"]) for e in first if e["type"] == "content_block_start"]
    assert starts == [(0, "thinking"), (1, "text"), (2, "tool_use")]
    thought = "".join(e["delta"]["thinking"] for e in first
                      if e["type"] == "content_block_delta" and e["delta"]["type"] == "thinking_delta")
    assert thought == THOUGHT
    stops = [e["index"] for e in first if e["type"] == "content_block_stop"]
    assert stops == [0, 1, 2]


@pytest.mark.parametrize(("options", "thinking"), [
    ({"maxThinkingTokens": 3000}, {"type": "enabled", "budget_tokens": 3000}),
    ({"thinking": {"type": "enabled", "budgetTokens": 5000}}, {"type": "enabled", "budget_tokens": 5000}),
    ({"thinking": {"type": "adaptive"}, "model": "claude-opus-4-6"}, {"type": "adaptive"}),
], ids=["maxThinkingTokens", "thinking-enabled", "thinking-adaptive"])
def test_typescript_query_asks_for_thinking_and_reads_thinking_blocks(ts_sdk: Path, anthropic_cli: AgentCli,  # noqa: F811
                                                                     options: dict[str, Any],
                                                                     thinking: dict[str, Any]) -> None:
    anthropic_cli.server.add({"thinking": [{"thinking": THOUGHT, "signature": SIGNATURE}], "text": "Done."})

    out = ts_query(ts_sdk, anthropic_cli, "go", {**options, "permissionMode": "bypassPermissions"})

    assert out["error"] is None
    reply = next(m for m in out["messages"] if m["type"] == "assistant")
    assert reply["message"]["content"][0] == {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
    assert anthropic_cli.server.requests[0].body["thinking"] == thinking
