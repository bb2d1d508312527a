"""The older Python SDK (`claude-code-sdk`) runs on `recursive` too: it spawns
`--output-format stream-json --verbose … --print -- PROMPT` with stdin closed."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from clitools import require

from .conftest import AgentCli

old_sdk = require("claude_code_sdk")

from claude_code_sdk import AssistantMessage, ClaudeCodeOptions, ResultMessage, SystemMessage, query  # noqa: E402


def collect(prompt: str, options: ClaudeCodeOptions) -> list[Any]:
    async def run() -> list[Any]:
        return [message async for message in query(prompt=prompt, options=options)]

    return asyncio.run(asyncio.wait_for(run(), 60))


def test_print_mode_query(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
                         {"text": "wrote it"})
    options = ClaudeCodeOptions(cwd=str(agent_cli.workspace), env=agent_cli.env(),
                                allowed_tools=["Write"], max_turns=5, model="fake-old")

    messages = collect("write x.txt", options)

    assert isinstance(messages[0], SystemMessage) and messages[0].subtype == "init"
    assert any(isinstance(m, AssistantMessage) and m.model == "fake-old" for m in messages)
    result = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(result) == 1 and (result[0].subtype, result[0].is_error, result[0].result) == (
        "success", False, "wrote it")
    assert (agent_cli.workspace / "x.txt").read_text() == "x"
    assert agent_cli.server.requests[0].body["messages"][-1]["content"] == "write x.txt"
    assert not any(line["type"].startswith("control") for line in agent_cli.lines())


@pytest.fixture(autouse=True)
def claude_on_path(agent_cli: AgentCli, monkeypatch: pytest.MonkeyPatch) -> None:
    """This SDK has no `cli_path`: it runs `claude` from PATH, so the wrapper goes there by that name."""
    link = agent_cli.path.parent / "bin" / "claude"
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(agent_cli.path)
    monkeypatch.setenv("PATH", f"{link.parent}:{os.environ['PATH']}")
