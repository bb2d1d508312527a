"""The registry turns every kind of bad call into an error result the model can read."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clitools import invoke
from fakeserver import FakeLLMServer

from recursive_cli.core.messages import ToolCall
from recursive_cli.core.tool import ToolContext, ToolRegistry
from recursive_cli.tools.catalog import core_tools


def execute(registry: ToolRegistry, ctx: ToolContext, name: str, arguments: str):
    return asyncio.run(registry.execute(ToolCall(id="c1", name=name, arguments=arguments), ctx))


def test_malformed_json_is_an_error_result(registry, ctx) -> None:
    result = execute(registry, ctx, "read_file", '{"path": "a.txt"')
    assert result.is_error and "not valid JSON" in result.content


def test_non_object_arguments_are_an_error_result(registry, ctx) -> None:
    result = execute(registry, ctx, "read_file", '["a.txt"]')
    assert result.is_error and "JSON object" in result.content


def test_wrong_types_are_an_error_result(registry, ctx) -> None:
    result = execute(registry, ctx, "read_file", '{"path": "a.txt", "limit": "lots"}')
    assert result.is_error and "limit" in result.content
    result = execute(registry, ctx, "run_shell", '{"command": 42}')
    assert result.is_error and "command" in result.content
    result = execute(registry, ctx, "write_file", '{"path": "a.txt"}')
    assert result.is_error and "content" in result.content


BAD_CALLS = [  # (arguments, what the model is told) of calls in one reply
    ({"name": "read_file", "arguments": {"limit": 5}},
     "invalid arguments for read_file: Object missing required field `path`"),
    ({"name": "read_file", "arguments": {"path": "a.txt", "limit": "lots"}},
     "invalid arguments for read_file: limit: Expected `int | null`, got `str`"),
    ({"name": "list_dir", "arguments": {"depth": 11}}, "invalid arguments for list_dir: depth: Expected `int` <= 10"),
    ({"name": "run_shell", "arguments": {"command": "echo hi", "timeout_seconds": 0}},
     "invalid arguments for run_shell: timeout_seconds: Expected `float` > 0.0"),
    ({"name": "todo_write", "arguments": {"todos": [{"content": "x"}, {"content": ""}]}},
     "invalid arguments for todo_write: todos[1].content: Expected `str` of length >= 1"),
    ({"name": "read_file", "arguments": {"path": "a.txt", "limit": "1", "unknown": True}},
     "     1\tfirst\n\n[a.txt continues after line 1; call read_file with offset=2 to read more]"),
]


def test_a_run_tells_the_model_what_is_wrong_with_its_arguments(workspace: Path) -> None:
    (workspace / "a.txt").write_text("first\nsecond\n")
    replies = [{"tool_calls": [call for call, _ in BAD_CALLS]}, {"text": "noted"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "look", "-C", str(workspace), "--provider", "openai", "--api-base",
                      server.openai_base_url, "-m", "fake-model", env={"RECURSIVE_API_KEY": "sk-test"})
        told = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert proc.returncode == 0, proc.stderr
    assert told == [said for _, said in BAD_CALLS]  # (the last: "1" taken for 1, an unknown key ignored)


def test_unknown_tool_is_an_error_result(registry, ctx) -> None:
    result = execute(registry, ctx, "delete_everything", "{}")
    assert result.is_error and "unknown tool" in result.content and "read_file" in result.content


def test_core_tools_order_and_specs() -> None:
    tools = core_tools()
    assert [tool.name for tool in tools] == [
        "read_file", "write_file", "edit_file", "apply_patch", "list_dir", "glob",
        "search_files", "run_shell", "web_fetch", "todo_write", "remember", "recall"]
    for tool in tools:
        spec = tool.spec()
        assert spec.parameters["type"] == "object"
        assert "$defs" not in spec.parameters and len(spec.description) > 40
