"""Prompt caching: where the Anthropic request puts its cache_control breakpoints, and a
request prefix that stays byte-stable from step to step on both wires (what the model server
received, compared request by request), so each step's prompt is a cache hit up to the new part."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke
from fakeserver import FakeLLMServer

STEPS = 5


def read_calls(count: int) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": "read_file", "arguments": {"path": f"f{i}.txt"}}]} for i in range(count)]


def session_bodies(tmp_path: Path, provider: str, *prompts: str) -> list[dict[str, Any]]:
    """The request bodies of a run of STEPS steps (then one more turn per extra prompt)."""
    for i in range(STEPS):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n" * 20)
    replies = read_calls(STEPS - 1) + [{"text": "done"}] + [{"text": "again"} for _ in prompts]
    with FakeLLMServer(replies) as server:
        base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        args = ["-C", str(tmp_path), "--provider", provider, "--api-base", base, "-m", "fake-model"]
        env = {"RECURSIVE_API_KEY": "sk-test"}
        proc = invoke("run", "read the files", *args, "--session-id", "cache-1", env=env)
        assert proc.returncode == 0, proc.stderr
        for prompt in prompts:
            again = invoke("resume", "cache-1", prompt, *args, env=env)
            assert again.returncode == 0, again.stderr
        return [request.body for request in server.requests]


def without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the body's cache_control markers are."""
    found = [f"tools[{i}]" for i, tool in enumerate(body.get("tools") or []) if "cache_control" in tool]
    found += [f"system[{i}]" for i, block in enumerate(body["system"]) if "cache_control" in block]
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        found += [f"messages[{m}][{b}]" for b, block in enumerate(content if isinstance(content, list) else [])
                  if "cache_control" in block]
    return found


def test_anthropic_breakpoints_are_the_system_prompt_the_last_block_and_where_the_request_before_ended(
        tmp_path: Path) -> None:
    bodies = session_bodies(tmp_path, "anthropic")
    assert len(bodies) == STEPS
    for step, body in enumerate(bodies):
        messages = body["messages"]
        last = len(messages) - 1
        expected = [f"system[{len(body['system']) - 1}]"]
        if step:  # the previous request's last message: user, before this request's last reply
            before = bodies[step - 1]["messages"]
            assert messages[last - 2]["role"] == "user" and len(before) == last - 1
            expected.append(f"messages[{last - 2}][{len(messages[last - 2]['content']) - 1}]")
        expected.append(f"messages[{last}][{len(messages[last]['content']) - 1}]")
        assert breakpoints(body) == expected
        assert len(expected) <= 4  # the API's limit
        marked = [body["system"][-1], messages[-1]["content"][-1]] + ([messages[last - 2]["content"][-1]] if step else [])
        assert all(block["cache_control"] == {"type": "ephemeral"} for block in marked)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_each_request_begins_with_the_whole_of_the_one_before(tmp_path: Path, provider: str) -> None:
    bodies = session_bodies(tmp_path, provider, "and once more")
    assert len(bodies) == STEPS + 1
    for before, after in zip(bodies, bodies[1:]):
        before, after = without_cache_control(copy.deepcopy(before)), without_cache_control(copy.deepcopy(after))
        assert json.dumps(after.get("tools")) == json.dumps(before.get("tools"))
        assert json.dumps(after.get("system")) == json.dumps(before.get("system"))
        kept = after["messages"][:len(before["messages"])]
        assert json.dumps(kept) == json.dumps(before["messages"])  # the same bytes, in the same order
