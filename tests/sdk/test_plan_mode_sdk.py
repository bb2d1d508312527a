"""`query(permission_mode="plan")` with Claude's real Python Agent SDK (issue 33): the model's
writes are refused, its ExitPlanMode tool use reaches the SDK and the plan is the result."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clitools import require

from .conftest import AgentCli, tool_names

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    ToolUseBlock,
    query,
)

PLAN = "1. Create notes.txt.\n2. Run the tests."


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_query_in_plan_mode_returns_the_plan_and_writes_nothing(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("write_file", path="notes.txt", content="hi\n")]},
                         {"tool_calls": [call("run_shell", command="touch made.txt")]},
                         {"tool_calls": [call("exit_plan_mode", plan=PLAN)]})
    opts = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace),
                              env=agent_cli.env(), permission_mode="plan")

    async def run() -> list[Any]:
        return [message async for message in query(prompt="add notes.txt", options=opts)]

    messages = asyncio.run(asyncio.wait_for(run(), 60))

    init = messages[0]
    assert isinstance(init, SystemMessage) and init.data["permissionMode"] == "plan"
    assert "ExitPlanMode" in init.data["tools"]
    uses = [block for m in messages if isinstance(m, AssistantMessage) for block in m.content
            if isinstance(block, ToolUseBlock)]
    assert [(use.name, use.input) for use in uses][-1] == ("ExitPlanMode", {"plan": PLAN})
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error and result.result == PLAN
    assert [d["tool_name"] for d in result.permission_denials or []] == ["Write", "Bash"]
    assert list(agent_cli.workspace.iterdir()) == []
    tools = tool_names(agent_cli.server.requests[0].body)
    assert "exit_plan_mode" in tools
    assert "Plan mode is on" in json.dumps(agent_cli.server.requests[0].body)
    assert len(agent_cli.server.requests) == 3  # the plan ended the turn

    agent_cli.server.add({"tool_calls": [call("write_file", path="notes.txt", content="hi\n")]},
                         {"text": "notes.txt written"})
    opts = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env(),
                              permission_mode="acceptEdits", resume=result.session_id)

    async def go() -> list[Any]:
        return [message async for message in query(prompt="go", options=opts)]

    done = asyncio.run(asyncio.wait_for(go(), 60))[-1]
    assert isinstance(done, ResultMessage) and done.result == "notes.txt written" and not done.is_error
    assert (agent_cli.workspace / "notes.txt").read_text() == "hi\n"
    assert "1. Create notes.txt." in json.dumps(agent_cli.server.requests[3].body)  # the plan is in the conversation
    agent_cli.lines()
