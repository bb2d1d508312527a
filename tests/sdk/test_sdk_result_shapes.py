"""Result and control shapes the Agent SDK reads, as Claude Code gives them (issue 35): a failed
model request, structured output after a denial, the cost of an unpriced model, the host's
`origin`, the `interrupt` answer, SDK MCP tool results as blocks, `get_context_usage`,
`get_server_info`. Driven by the real `claude-agent-sdk` against the loopback fake model."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from clitools import require

from .conftest import AgentCli
from .test_python_sdk import call, client_run, collect, collect_until_error, options, response, result_of

require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeSDKClient,
    PermissionResultDeny,
    ResultMessage,
    TextBlock,
    UserMessage,
)


@pytest.mark.parametrize(("status", "kind", "api_type", "said"), [
    (400, "invalid_request", "invalid_request_error", "no such model"),
    (401, "authentication_failed", "authentication_error", "API key")])
def test_an_api_failure_ends_as_claude_code_ends_it(agent_cli: AgentCli, status: int, kind: str,
                                                    api_type: str, said: str) -> None:
    agent_cli.server.add({"error": {"status": status, "message": "no such model"}})

    messages, error = collect_until_error("hi", options(agent_cli))

    result = result_of(messages)
    assert (result.subtype, result.is_error, result.terminal_reason) == ("success", True, "api_error")
    assert result.api_error_status == status
    assert result.result.startswith(f"API Error: {status} ") and said in result.result
    synthetic = [m for m in messages if isinstance(m, AssistantMessage)]
    assert [m.model for m in synthetic] == ["<synthetic>"] and synthetic[0].error == kind
    assert [block.text for block in synthetic[0].content] == [result.result]
    # the SDK's typed error carries the result's payload (what claude-code-action reads)
    from claude_agent_sdk import ResultError

    assert isinstance(error, ResultError) and result.result in str(error)
    assert (error.subtype, error.terminal_reason, error.api_error_status) == ("success", "api_error", status)
    raw = [line for line in agent_cli.lines() if line["type"] in ("assistant", "result")]
    assert raw[0]["api_error_type"] == raw[1]["api_error_type"] == api_type
    assert raw[0]["is_api_error_message"] is True


def test_structured_output_is_kept_when_the_run_had_a_denial(agent_cli: AgentCli) -> None:
    schema = {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]}
    agent_cli.server.add({"tool_calls": [call("write_file", path="x.txt", content="1")]}, {"text": '{"done": false}'})

    async def deny(name: str, data: dict[str, Any], context: Any) -> PermissionResultDeny:
        return PermissionResultDeny(message="not today")

    messages = collect(_stream("write x"), options(agent_cli, can_use_tool=deny,
                                                   output_format={"type": "json_schema", "schema": schema}))

    result = result_of(messages)
    assert (result.subtype, result.is_error, result.structured_output) == ("success", False, {"done": False})
    assert [d["tool_name"] for d in result.permission_denials] == ["Write"]
    assert not (agent_cli.workspace / "x.txt").exists()


async def _stream(text: str) -> Any:
    yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}


def test_an_unpriced_model_costs_zero_with_cost_known_false(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "hi"}, {"text": "hi again"})

    unpriced = result_of(collect("hi", options(agent_cli, model="no-price-model")))
    priced = result_of(collect("hi", options(agent_cli)))  # gpt-4.1-mini has a price

    assert unpriced.total_cost_usd == 0  # a number, as the SDK's own quick_start.py compares it
    assert priced.total_cost_usd is not None and priced.total_cost_usd > 0
    results = [line for line in agent_cli.lines() if line["type"] == "result"]
    assert [line["cost_known"] for line in results] == [False, True]
    assert unpriced.model_usage == {"no-price-model": {**results[0]["modelUsage"]["no-price-model"],
                                                       "costUSD": 0.0, "costBasis": "unknown"}}
    assert "costBasis" not in results[1]["modelUsage"]["gpt-4.1-mini"]


def test_the_hosts_origin_stamp_and_prompt_uuid_are_echoed(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "one"}, {"text": "two"})

    def prompt(text: str, **stamps: Any) -> Any:
        async def stream() -> Any:
            yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None,
                   **stamps}
        return stream()

    async def conversation(client: ClaudeSDKClient) -> list[ResultMessage]:
        await client.query(prompt("one", origin={"kind": "human"}, uuid="5d6a4c1e-0000-4000-8000-000000000001"))
        first = await response(client)
        await client.query(prompt("two", origin={"kind": "channel"}))  # only `human` is taken from a host
        second = await response(client)
        return [result_of(first), result_of(second)]

    stamped, other = client_run(agent_cli, conversation)

    assert stamped.origin == {"kind": "human"} and other.origin is None
    assert stamped.user_message_uuid == "5d6a4c1e-0000-4000-8000-000000000001"
    assert other.user_message_uuid is None


def test_interrupt_answers_still_queued_and_says_so_in_the_stream(agent_cli: AgentCli) -> None:
    server = agent_cli.server
    server.add({"text": "never seen", "delay": 20})

    async def conversation(client: ClaudeSDKClient) -> tuple[Any, list[Any]]:
        await client.query("count slowly")
        while not server.requests:
            await asyncio.sleep(0.02)
        answer = await client._query._send_control_request({"subtype": "interrupt"})  # noqa: SLF001
        return answer, await response(client)

    answer, messages = client_run(agent_cli, conversation)

    assert answer == {"still_queued": []}
    init = next(m for m in messages if getattr(m, "subtype", None) == "init")
    assert "interrupt_receipt_v1" in init.data["capabilities"]  # (so the TypeScript SDK returns the receipt)
    said = [block.text for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list)
            for block in m.content if isinstance(block, TextBlock)]
    assert said == ["[Request interrupted by user]"]
    result = result_of(messages)
    assert (result.subtype, result.is_error, result.terminal_reason) == (
        "error_during_execution", True, "aborted_streaming")


def test_context_usage_and_server_info(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "a reply " * 50})
    (agent_cli.workspace / "AGENTS.md").write_text("Be brief.\n", encoding="utf-8")

    async def conversation(client: ClaudeSDKClient) -> tuple[Any, Any, Any]:
        before = await client.get_context_usage()
        await client.query("hello " * 100)
        await response(client)
        return before, await client.get_context_usage(), await client.get_server_info()

    before, after, info = client_run(agent_cli, conversation)

    assert after["model"] == "gpt-4.1-mini" and after["maxTokens"] > after["totalTokens"] > before["totalTokens"]
    names = {category["name"]: category["tokens"] for category in after["categories"]}
    assert names["Messages"] > 100 and names["System prompt"] > 0 and names["System tools"] > 0
    assert sum(tokens for name, tokens in names.items() if name != "Free space") == after["totalTokens"]
    assert after["memoryFiles"] == [{"path": str(agent_cli.workspace / "AGENTS.md"), "type": "Project"}]
    assert after["apiUsage"]["output_tokens"] == 5
    assert info["current_permission_mode"] == "default" and info["output_style"] == "default"
    assert isinstance(info["commands"], list)


def test_prompts_sent_at_once_run_the_first_then_the_rest_together(agent_cli: AgentCli) -> None:
    """Claude Code's queue: the first of a burst starts a turn; the others wait and go together."""
    agent_cli.server.add({"text": "a"}, {"text": "b"})

    async def prompts() -> Any:
        for text in ("one", "two", "three"):
            yield {"type": "user", "message": {"role": "user", "content": text}}

    messages = collect(prompts(), options(agent_cli))

    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["a", "b"]
    assert [r.body["messages"][-1]["content"] for r in agent_cli.server.requests] == ["one", "two\n\nthree"]


def test_prompts_sent_while_a_turn_runs_are_one_turn_after_it(agent_cli: AgentCli) -> None:
    """As Claude Code takes them: each queued prompt is not a turn of its own."""
    server = agent_cli.server
    release = threading.Event()
    server.add({"text": "first answer", "hold": release}, {"text": "both answered"})

    async def prompts() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "one"}, "uuid": "00000000-0000-4000-8000-00000000000a"}
        while not server.requests:  # the first turn runs
            await asyncio.sleep(0.02)
        for text, number in (("two", "b"), ("three", "c")):
            yield {"type": "user", "message": {"role": "user", "content": text},
                   "uuid": f"00000000-0000-4000-8000-00000000000{number}"}
        await asyncio.sleep(0.3)  # (both are read while the model still holds the first answer)
        release.set()

    messages = collect(prompts(), options(agent_cli))

    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["first answer", "both answered"]
    assert results[0].user_message_uuids == ["00000000-0000-4000-8000-00000000000a"]
    assert results[1].user_message_uuids == ["00000000-0000-4000-8000-00000000000b",
                                             "00000000-0000-4000-8000-00000000000c"]
    assert server.requests[1].body["messages"][-1] == {"role": "user", "content": "two\n\nthree"}


def test_a_finished_turn_that_spent_the_budget_ends_error_max_budget_usd(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "4"}, {"text": "4 again"})

    messages, error = collect_until_error("What is 2 + 2?", options(agent_cli, max_budget_usd=0.000001))
    roomy = result_of(collect("What is 2 + 2?", options(agent_cli, max_budget_usd=1.0)))

    result = result_of(messages)  # gpt-4.1-mini's one call cost more than that
    assert (result.subtype, result.is_error, result.terminal_reason) == ("error_max_budget_usd", True, "budget_exhausted")
    assert result.errors == ["Reached maximum budget ($1e-06)"] and result.result == "4"
    assert error is not None and len(agent_cli.server.requests) == 2
    assert (roomy.subtype, roomy.is_error, roomy.result) == ("success", False, "4 again")
