"""todo_write rendering and remember/recall persistence."""

from __future__ import annotations

import json
from pathlib import Path

from recursive_cli.core.tool import ToolContext
from recursive_cli.tools.memory import memory_path


def test_todo_write_renders_and_replaces(call, ctx: ToolContext) -> None:
    kept = ctx.todos
    result = call("todo_write", todos=[
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"},
    ])
    assert result.content == "[x] read the code\n[~] fix the bug\n[ ] run the tests"
    assert result.summary == "1/3 done"
    assert [item.status for item in ctx.todos] == ["completed", "in_progress", "pending"]
    assert ctx.todos is kept
    call("todo_write", todos=[{"content": "only one"}])
    assert [item.content for item in ctx.todos] == ["only one"]


def test_todo_write_rejects_bad_status(call, ctx: ToolContext) -> None:
    result = call("todo_write", todos=[{"content": "x", "status": "done"}])
    assert result.is_error and "status" in result.content
    assert ctx.todos == []


def test_remember_and_recall(call, ctx: ToolContext, tmp_path: Path) -> None:
    assert "nothing has been remembered" in call("recall").content
    call("remember", key="test command", value="pytest -q")
    call("remember", key="style", value="Black, line length 100")
    assert call("remember", key="style", value="ruff format").content == "updated 'style'"
    assert call("recall").content == "style: ruff format\ntest command: pytest -q"
    assert call("recall", query="PYTEST").content == "test command: pytest -q"
    assert call("recall", query="ruff").content == "style: ruff format"
    assert "no memories match" in call("recall", query="zzz").content
    path = memory_path(ctx.home, ctx.workspace)
    assert path.parent == tmp_path / "home" / "memory"
    data = json.loads(path.read_text())
    assert data["workspace"] == str(ctx.workspace)
    assert list(path.parent.iterdir()) == [path]  # no temporary files left behind


def test_memory_is_per_workspace(ctx: ToolContext, tmp_path: Path) -> None:
    assert memory_path(ctx.home, tmp_path / "a") != memory_path(ctx.home, tmp_path / "b")
