"""Control requests that come while a turn runs take effect inside it: `set_model` from the
next model call (its request, its assistant line, its price), `set_permission_mode` from the
next tool call; after an `interrupt` the session can be resumed. Driven by the real
`ClaudeSDKClient` against the loopback fake model, with a shell call that blocks until the
test releases it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from clitools import require

from recursive_cli import AgentRuntime, Settings
from recursive_cli.core.events import AgentEvent, ToolStarted
from recursive_cli.providers.scripted import ScriptedProvider

from .conftest import AgentCli

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    ToolUseBlock,
    UserMessage,
    query,
)

TIMEOUT = 60  # seconds for a whole SDK conversation; each one takes a few
MILLION = {"input_tokens": 1_000_000, "output_tokens": 0}  # $0.40 on gpt-4.1-mini, $2.50 on gpt-4o


def options(cli: AgentCli, **kwargs: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(cli.path), cwd=str(cli.workspace), env=cli.env(), **kwargs)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def blocking_shell(marker: Path) -> dict[str, Any]:
    """A shell call that runs until `marker` exists (at most 30 s)."""
    return call("run_shell", timeout_seconds=40,
                command=f"for i in $(seq 600); do test -f {marker} && break; sleep 0.05; done; echo released")


def client_run(cli: AgentCli, work: Any, **kwargs: Any) -> Any:
    async def run() -> Any:
        async with ClaudeSDKClient(options=options(cli, **kwargs)) as client:
            return await work(client)

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


async def until_tool_use(client: ClaudeSDKClient, seen: list[Any]) -> None:
    """Read the client's messages into `seen` until the model's tool call shows."""
    async for message in client.receive_messages():
        seen.append(message)
        if isinstance(message, AssistantMessage) and any(isinstance(b, ToolUseBlock) for b in message.content):
            return
    raise AssertionError(f"no tool call: {seen}")


async def rest_of_turn(client: ClaudeSDKClient, seen: list[Any]) -> ResultMessage:
    async for message in client.receive_response():
        seen.append(message)
    result = seen[-1]
    assert isinstance(result, ResultMessage), seen
    return result


def replies(messages: list[Any]) -> list[AssistantMessage]:
    return [m for m in messages if isinstance(m, AssistantMessage)]


def test_set_model_while_a_tool_runs_switches_the_next_call(agent_cli: AgentCli) -> None:
    marker = agent_cli.workspace / "release"
    server = agent_cli.server
    server.add({"tool_calls": [blocking_shell(marker)]}, {"text": "answered by the other model"})

    async def conversation(client: ClaudeSDKClient) -> tuple[list[Any], ResultMessage]:
        seen: list[Any] = []
        await client.query("run it")
        await until_tool_use(client, seen)
        await client.set_model("other-model")  # answered while the shell call still runs
        assert len(server.requests) == 1
        marker.touch()
        return seen, await rest_of_turn(client, seen)

    seen, result = client_run(agent_cli, conversation, allowed_tools=["Bash"])

    assert [r.body["model"] for r in server.requests] == ["gpt-4.1-mini", "other-model"]
    said = [m.get("content") for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "released" in said[-1]  # the same turn went on: the tool's result is in the next request
    assert [m.model for m in replies(seen)] == ["gpt-4.1-mini", "other-model"]
    assert (result.result, result.is_error, result.num_turns) == ("answered by the other model", False, 2)
    assert sorted(result.model_usage or {}) == ["gpt-4.1-mini", "other-model"]
    # other-model has no price, so the total is unknown: the priced part, and the line says so
    assert result.total_cost_usd is not None and result.total_cost_usd > 0
    assert [line["cost_known"] for line in agent_cli.lines() if line["type"] == "result"] == [False]
    assistant_lines = [line for line in agent_cli.lines() if line["type"] == "assistant"]
    assert [line["message"]["model"] for line in assistant_lines] == ["gpt-4.1-mini", "other-model"]


def test_set_model_during_a_model_call_takes_the_next_call_at_the_new_price(agent_cli: AgentCli) -> None:
    server = agent_cli.server
    first_answer = threading.Event()  # the first call is answered only once the model was changed
    server.add({"tool_calls": [call("run_shell", command="echo hi")], "usage": MILLION, "hold": first_answer},
               {"text": "done", "usage": MILLION})

    async def conversation(client: ClaudeSDKClient) -> tuple[list[Any], ResultMessage]:
        seen: list[Any] = []
        await client.query("go")
        while not server.requests:  # the first call is under way, on gpt-4.1-mini
            await asyncio.sleep(0.02)
        await client.set_model("gpt-4o")  # answered while that call still waits
        first_answer.set()
        return seen, await rest_of_turn(client, seen)

    seen, result = client_run(agent_cli, conversation, allowed_tools=["Bash"])

    assert [r.body["model"] for r in server.requests] == ["gpt-4.1-mini", "gpt-4o"]
    assert [m.model for m in replies(seen)] == ["gpt-4.1-mini", "gpt-4o"]  # each reply names its own model
    usage = result.model_usage or {}
    assert usage["gpt-4.1-mini"]["costUSD"] == pytest.approx(0.40)  # the call under way, at the old price
    assert usage["gpt-4o"]["costUSD"] == pytest.approx(2.50)
    assert result.total_cost_usd == pytest.approx(2.90)
    agent_cli.lines()


@pytest.mark.parametrize("mode", ["plan", "default"])
def test_set_permission_mode_while_a_tool_runs_denies_the_next_edit(agent_cli: AgentCli, mode: str) -> None:
    marker = agent_cli.workspace / "release"
    server = agent_cli.server
    server.add({"tool_calls": [blocking_shell(marker)]},
               {"tool_calls": [call("write_file", path="edit.txt", content="x")]},
               {"text": "could not write it"})

    async def conversation(client: ClaudeSDKClient) -> tuple[list[Any], ResultMessage]:
        seen: list[Any] = []
        await client.query("write it")
        await until_tool_use(client, seen)
        await client.set_permission_mode(mode)
        marker.touch()
        return seen, await rest_of_turn(client, seen)

    # acceptEdits would write the file without asking; Bash is allowed by its rule in any mode
    seen, result = client_run(agent_cli, conversation, permission_mode="acceptEdits", allowed_tools=["Bash"])

    assert not (agent_cli.workspace / "edit.txt").exists()
    assert [d["tool_name"] for d in result.permission_denials or []] == ["Write"]
    assert (result.result, result.is_error) == ("could not write it", False)
    results = [block for m in seen if isinstance(m, UserMessage) and isinstance(m.content, list)
               for block in m.content]
    assert not results[0].is_error and results[1].is_error
    expected = "plan mode" if mode == "plan" else "needs permission in default mode"
    assert expected in str(results[1].content)
    assert len(server.requests) == 3
    agent_cli.lines()


def test_interrupted_tool_leaves_a_session_that_resumes(agent_cli: AgentCli) -> None:
    """(That the process stays up after an interrupt is test_python_sdk's; here a new process
    resumes the interrupted session.)"""
    marker = agent_cli.workspace / "never"
    server = agent_cli.server
    server.add({"tool_calls": [blocking_shell(marker)]}, {"text": "picked up again"})

    async def conversation(client: ClaudeSDKClient) -> ResultMessage:
        seen: list[Any] = []
        await client.query("wait for it")
        await until_tool_use(client, seen)
        await client.interrupt()
        return await rest_of_turn(client, seen)

    interrupted = client_run(agent_cli, conversation, allowed_tools=["Bash"])
    assert interrupted.is_error and interrupted.subtype == "error_during_execution"

    async def resumed() -> list[Any]:
        opts = options(agent_cli, resume=interrupted.session_id, allowed_tools=["Bash"])
        return [message async for message in query(prompt="go on", options=opts)]

    messages = asyncio.run(asyncio.wait_for(resumed(), TIMEOUT))

    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert (result.result, result.is_error, result.session_id) == ("picked up again", False, interrupted.session_id)
    said = server.requests[1].body["messages"][1:]
    assert [m["role"] for m in said] == ["user", "assistant", "tool", "user"]
    assert said[0]["content"] == "wait for it" and said[-1]["content"] == "go on"
    assert "interrupted before completion" in said[2]["content"]  # the interrupted call is answered
    agent_cli.lines()


def test_the_runtime_provider_replaced_mid_turn_makes_the_next_call(workspace: Path) -> None:
    """The core's side, as a library: a provider put in `runtime.provider` while a tool runs
    answers the turn's next step, and each step is priced at the model that answered it."""
    first = ScriptedProvider([{"tool_calls": [call("list_dir")], "usage": MILLION}], model="gpt-4.1-mini")
    second = ScriptedProvider([{"text": "from the second", "usage": MILLION}], model="gpt-4o")
    holder: list[AgentRuntime] = []

    class SwapOnTool:
        def emit(self, event: AgentEvent) -> None:
            if isinstance(event, ToolStarted):
                holder[0].provider = second

    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace, model="gpt-4.1-mini"))
               .provider(first).sink(SwapOnTool()).build())
    holder.append(runtime)

    outcome = asyncio.run(runtime.run("look"))

    assert (outcome.text, outcome.steps) == ("from the second", 2)
    assert sorted(runtime.budget.by_model) == ["gpt-4.1-mini", "gpt-4o"]
    assert runtime.budget.total_cost == pytest.approx(0.40 + 2.50)
