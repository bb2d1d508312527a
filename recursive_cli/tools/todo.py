"""The `todo_write` tool: the agent's own task list, replaced whole on every call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from msgspec import Meta

from ..core.tool import BaseTool, TodoItem, ToolContext, ToolResult

MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


@dataclass(slots=True, kw_only=True)
class TodoEntry:
    content: Annotated[str, Meta(min_length=1, description="What to do, as a short imperative sentence.")]
    status: Annotated[Literal["pending", "in_progress", "completed"],  # (msgspec's schema lists them sorted)
                      Meta(description="pending, in_progress (one at a time) or completed.",
                           extra_json_schema={"type": "string"})] = "pending"  # (some APIs want an enum's type)


@dataclass(slots=True, kw_only=True)
class TodoArgs:
    todos: Annotated[list[TodoEntry], Meta(description="The complete task list; it replaces the previous one.")]


class TodoWriteTool(BaseTool[TodoArgs]):
    name = "todo_write"
    description = (
        "Keep a task list for work with several steps: send the whole list each time, with "
        "each item's status (pending, in_progress, completed). Mark an item in_progress "
        "before starting it and completed as soon as it is done. The user sees the list. "
        "Skip it for simple one-step tasks."
    )
    kind = "other"
    Args = TodoArgs
    subject_field = None

    async def run(self, args: TodoArgs, ctx: ToolContext) -> ToolResult:
        # Replace in place: whoever shows the list may hold a reference to it.
        ctx.todos[:] = [TodoItem(entry.content, entry.status) for entry in args.todos]
        done = sum(item.status == "completed" for item in ctx.todos)
        return ToolResult(render_todos(ctx.todos), summary=f"{done}/{len(ctx.todos)} done")


def render_todos(todos: list[TodoItem]) -> str:
    """One `[x]`/`[~]`/`[ ]` line per item."""
    if not todos:
        return "(the todo list is empty)"
    return "\n".join(f"{MARKS[item.status]} {item.content}" for item in todos)
