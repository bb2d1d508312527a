"""Skills through Claude's real Python Agent SDK (issue 33): a project skill under
`.claude/skills` is offered when `setting_sources` names `project`, its body reaches the model
only through the Skill tool, and the SDK sees that call under Claude's name."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from clitools import require

from .conftest import AgentCli, system_text, tool_names

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    ToolUseBlock,
    query,
)

BODY = "BODY-MARKER: run scripts/extract.py FILE to get the text."


def project_skill(workspace: Path, name: str, description: str) -> None:
    folder = workspace / ".claude" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{BODY}\n")


def ask(agent_cli: AgentCli, **options: Any) -> list[Any]:
    opts = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env(),
                              **options)

    async def run() -> list[Any]:
        return [message async for message in query(prompt="summarise doc.pdf", options=opts)]

    return asyncio.run(asyncio.wait_for(run(), 60))


def test_a_project_skill_with_setting_sources_project(agent_cli: AgentCli) -> None:
    project_skill(agent_cli.workspace, "pdf-tools", "Extract text from PDF files.")
    agent_cli.server.add({"tool_calls": [{"name": "skill", "arguments": {"skill": "pdf-tools"}}]},
                         {"text": "done"})
    messages = ask(agent_cli, setting_sources=["project"])

    init = messages[0]
    assert isinstance(init, SystemMessage) and "Skill" in init.data["tools"]
    assert init.data["skills"] == ["pdf-tools"] and "pdf-tools" in init.data["slash_commands"]  # as Claude Code
    uses = [block for m in messages if isinstance(m, AssistantMessage) for block in m.content
            if isinstance(block, ToolUseBlock)]
    assert [(use.name, use.input) for use in uses] == [("Skill", {"skill": "pdf-tools"})]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "done" and not result.is_error
    first, second = (request.body for request in agent_cli.server.requests)
    assert "- pdf-tools: Extract text from PDF files." in system_text(first) and "skill" in tool_names(first)
    assert BODY not in json.dumps(first)
    assert BODY in json.dumps(second["messages"][-1])
    agent_cli.lines()


def test_without_project_in_setting_sources_the_project_skill_is_not_offered(agent_cli: AgentCli) -> None:
    project_skill(agent_cli.workspace, "pdf-tools", "Extract text from PDF files.")
    agent_cli.server.add({"text": "done"})
    messages = ask(agent_cli, setting_sources=["user"])
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "done"
    first = agent_cli.server.requests[0].body
    assert "pdf-tools" not in json.dumps(first) and "skill" not in tool_names(first)


def test_the_sdks_skills_list_narrows_what_is_offered(agent_cli: AgentCli) -> None:
    project_skill(agent_cli.workspace, "pdf-tools", "Extract text from PDF files.")
    project_skill(agent_cli.workspace, "deploy", "How we deploy.")
    agent_cli.server.add({"text": "done"})
    messages = ask(agent_cli, skills=["deploy"])  # (the SDK adds setting_sources user and project)
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "done"
    prompt = system_text(agent_cli.server.requests[0].body)
    assert "- deploy: How we deploy." in prompt and "pdf-tools" not in prompt
    init = messages[0]
    assert isinstance(init, SystemMessage) and init.data["skills"] == ["deploy"]
