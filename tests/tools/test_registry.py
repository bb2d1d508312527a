"""The registry turns every kind of bad call into an error result the model can read."""

from __future__ import annotations

import asyncio

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
