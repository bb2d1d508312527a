"""Claude's real Python Agent SDK with `agents=` (sent in `initialize`) and a scripted model that
calls the Agent tool: the SDK gets the subagent's messages under the Agent call's id, the task
lifecycle lines, and the result; the subagent's model request has its own prompt and tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clitools import require

from .conftest import AgentCli

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

REVIEWER = AgentDefinition(description="Reviews a file and reports problems",
                           prompt="REVIEWER PROMPT: you review files and report.", tools=["Read", "Grep"])


def call(name: str, id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": id, "arguments": arguments}


def collect(agent_cli: AgentCli, **options: Any) -> list[Any]:
    opts = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env(),
                              agents={"reviewer": REVIEWER}, **options)

    async def run() -> list[Any]:
        return [message async for message in query(prompt="review notes.txt", options=opts)]

    return asyncio.run(asyncio.wait_for(run(), 60))


def script_review(agent_cli: AgentCli) -> None:
    (agent_cli.workspace / "notes.txt").write_text("TODO: fix\n", encoding="utf-8")
    agent_cli.server.add(
        {"tool_calls": [call("task", "call_task", description="review notes", prompt="Review notes.txt.",
                             subagent_type="reviewer")]},
        {"text": "Reading it.", "tool_calls": [call("read_file", "call_read", path="notes.txt")]},
        {"text": "notes.txt has one TODO."},
        {"text": "The reviewer found one TODO."})


def test_query_with_agents_streams_the_subagent_under_the_agent_call(agent_cli: AgentCli) -> None:
    script_review(agent_cli)

    messages = collect(agent_cli)

    init = messages[0]
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert "reviewer" in init.data["agents"] and "Task" in init.data["tools"]  # (as Claude Code lists it)
    main = [m for m in messages if isinstance(m, AssistantMessage) and m.parent_tool_use_id is None]
    uses = [block for block in main[0].content if isinstance(block, ToolUseBlock)]
    assert [(use.name, use.id, use.input["subagent_type"]) for use in uses] == [("Agent", "call_task", "reviewer")]
    started = [m for m in messages if isinstance(m, TaskStartedMessage)]
    finished = [m for m in messages if isinstance(m, TaskNotificationMessage)]
    assert [(m.tool_use_id, m.description, m.task_type) for m in started] == [("call_task", "review notes",
                                                                               "local_agent")]
    assert [(m.tool_use_id, m.status, m.summary) for m in finished] == [("call_task", "completed",
                                                                         "notes.txt has one TODO.")]
    assert started[0].task_id == finished[0].task_id
    sub_replies = [m for m in messages if isinstance(m, AssistantMessage) and m.parent_tool_use_id == "call_task"]
    sub_uses = [block for m in sub_replies for block in m.content if isinstance(block, ToolUseBlock)]
    assert [(use.name, use.input) for use in sub_uses] == [
        ("Read", {"file_path": str(agent_cli.workspace / "notes.txt")})]
    assert not [b for m in sub_replies for b in m.content if isinstance(b, TextBlock)]  # (forwarded only on request)
    sub_results = [block for m in messages if isinstance(m, UserMessage) and m.parent_tool_use_id == "call_task"
                   for block in (m.content if isinstance(m.content, list) else []) if isinstance(block, ToolResultBlock)]
    assert [(r.tool_use_id, "TODO: fix" in str(r.content)) for r in sub_results] == [("call_read", True)]
    answers = [block for m in messages if isinstance(m, UserMessage) and m.parent_tool_use_id is None
               for block in (m.content if isinstance(m.content, list) else []) if isinstance(block, ToolResultBlock)]
    assert [(a.tool_use_id, a.content) for a in answers] == [("call_task", "notes.txt has one TODO.")]
    handback = next(m for m in messages if isinstance(m, UserMessage) and m.parent_tool_use_id is None
                    and m.tool_use_result).tool_use_result
    assert {key: handback[key] for key in ("status", "prompt", "agentId", "agentType", "content")} == {
        "status": "completed", "prompt": "Review notes.txt.", "agentId": started[0].task_id,
        "agentType": "reviewer", "content": [{"type": "text", "text": "notes.txt has one TODO."}]}
    assert handback["totalToolUseCount"] == 1
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert result.result == "The reviewer found one TODO."

    sub_request = agent_cli.server.requests[1].body
    assert sub_request["messages"][0]["content"].startswith("REVIEWER PROMPT: you review files and report.")
    assert sub_request["messages"][1] == {"role": "user", "content": "Review notes.txt."}
    assert [tool["function"]["name"] for tool in sub_request["tools"]] == ["read_file", "search_files"]
    main_request = agent_cli.server.requests[0].body
    task_tool = next(t for t in main_request["tools"] if t["function"]["name"] == "task")
    assert "- reviewer: Reviews a file and reports problems" in task_tool["function"]["description"]
    last = agent_cli.server.requests[3].body["messages"]
    assert [m for m in last if m["role"] == "tool"][-1]["content"] == "notes.txt has one TODO."
    assert "REVIEWER PROMPT" not in json.dumps(last)  # the sub-conversation stays out of the parent's


def test_forward_subagent_text_sends_the_subagents_words_too(agent_cli: AgentCli) -> None:
    script_review(agent_cli)

    messages = collect(agent_cli, forward_subagent_text=True)

    texts = [block.text for m in messages if isinstance(m, AssistantMessage) and m.parent_tool_use_id == "call_task"
             for block in m.content if isinstance(block, TextBlock)]
    assert texts == ["Reading it.", "notes.txt has one TODO."]
    agent_cli.lines()  # every line printed has its SPEC §4 shape


def test_setting_sources_project_loads_the_workspaces_agent_files(agent_cli: AgentCli) -> None:
    """As the SDK's own e2e test of filesystem agents: `.claude/agents/*.md` count only when the
    program names `project` among its setting sources (the workspace's configuration)."""
    folder = agent_cli.workspace / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "fs-test-agent.md").write_text(
        "---\nname: fs-test-agent\ndescription: A filesystem test agent\ntools:\n  - Read\n  - Glob\n"
        "model: \"inherit\"\n---\n\n# Filesystem Test Agent\n\nFS AGENT PROMPT.\n", encoding="utf-8")

    def init_agents(**options: Any) -> list[str]:
        agent_cli.server.add({"text": "hello there friend"})
        opts = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env(),
                                  max_turns=1, **options)

        async def run() -> list[Any]:
            return [message async for message in query(prompt="Say hello in exactly 3 words", options=opts)]

        messages = asyncio.run(asyncio.wait_for(run(), 60))
        assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
        return list(messages[0].data["agents"])

    assert "fs-test-agent" in init_agents(setting_sources=["project"])
    described = json.dumps(agent_cli.server.requests[-1].body["tools"])
    assert "fs-test-agent: A filesystem test agent" in described
    assert "fs-test-agent" not in init_agents(setting_sources=["user"])


def test_can_use_tool_and_hooks_are_told_which_subagent_asks(agent_cli: AgentCli) -> None:
    """Parallel subagents' questions interleave on one channel: `agent_id` says whose each is."""
    from claude_agent_sdk import HookMatcher, PermissionResultAllow

    agent_cli.server.add(
        {"tool_calls": [call("task", "call_task", description="write it", prompt="Write out.txt.",
                             subagent_type="writer")]},
        {"tool_calls": [call("write_file", "call_write", path="out.txt", content="hi\n")]},
        {"text": "written"},
        {"text": "The writer wrote it."})
    asked: list[tuple[str, str | None]] = []
    hooked: list[tuple[str, str, Any, Any]] = []
    stopped: list[dict[str, Any]] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append((name, context.agent_id))
        return PermissionResultAllow()

    async def hook(data: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        hooked.append((data["hook_event_name"], data.get("tool_name", ""), data.get("agent_id"),
                       data.get("agent_type")))
        if data["hook_event_name"] == "SubagentStop":
            stopped.append(data)
        return {}

    async def prompt() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "write out.txt"}}

    opts = ClaudeAgentOptions(
        cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env(), can_use_tool=can_use_tool,
        agents={"writer": AgentDefinition(description="Writes files", prompt="WRITER", tools=["Write"])},
        hooks={event: [HookMatcher(hooks=[hook])]  # type: ignore[misc]
               for event in ("PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop")})

    async def run() -> list[Any]:
        return [message async for message in query(prompt=prompt(), options=opts)]

    messages = asyncio.run(asyncio.wait_for(run(), 60))

    task_id = next(m.task_id for m in messages if isinstance(m, TaskStartedMessage))
    assert asked == [("Write", task_id)]  # (the Agent call itself needs no permission)
    assert ("PreToolUse", "Agent", None, None) in hooked
    assert [h for h in hooked if h[1] == "Write"] == [("PreToolUse", "Write", task_id, "writer"),
                                                      ("PostToolUse", "Write", task_id, "writer")]
    assert [h for h in hooked if h[0].startswith("Subagent")] == [("SubagentStart", "", task_id, "writer"),
                                                                   ("SubagentStop", "", task_id, "writer")]
    assert stopped[0]["last_assistant_message"] == "written" and stopped[0]["stop_hook_active"] is False
    assert (agent_cli.workspace / "out.txt").read_text() == "hi\n"
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "The writer wrote it."


def test_large_agent_definitions_come_whole_through_initialize(agent_cli: AgentCli) -> None:
    """As the SDK's e2e test: twenty agents of 13 KB prompts (~260 KB in one initialize line)."""
    agents = {f"large-agent-{i}": AgentDefinition(description=f"Large test agent #{i}",
                                                  prompt=f"You are test agent #{i}. " + "x" * 13 * 1024)
              for i in range(20)}
    agent_cli.server.add({"text": "4"})
    opts = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env(),
                              agents=agents, max_turns=1)

    async def run() -> list[Any]:
        return [message async for message in query(prompt="What is 2 + 2?", options=opts)]

    messages = asyncio.run(asyncio.wait_for(run(), 60))

    assert set(agents) <= set(messages[0].data["agents"])
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "4"
    described = next(t for t in agent_cli.server.requests[0].body["tools"] if t["function"]["name"] == "task")
    assert "- large-agent-19: Large test agent #19" in described["function"]["description"]
    assert "x" * 100 not in json.dumps(agent_cli.server.requests[0].body)  # only their descriptions
