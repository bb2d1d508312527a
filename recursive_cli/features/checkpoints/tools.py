"""`checkpoint_list` and `checkpoint_diff`: the agent reads its own workspace checkpoints (SPEC §8)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.provider import ToolSpec
from ...core.tool import BaseTool, Tool, ToolContext, ToolError, ToolResult
from ...core.wording import counted

if TYPE_CHECKING:
    from .checkpointer import GitCheckpointer, TurnCheckpoints
    from .tool_args import ListArgs

STATUS_WORDS = {"A": "added", "D": "deleted", "M": "modified", "T": "type changed"}
LISTED_FILES = 200


def turn_parameters(about: str) -> dict[str, Any]:
    """The tools' argument schema: an optional `turn` (what `tool_args.py`'s classes give,
    written out so that a run that never calls the tools loads no msgspec; tests/test_values.py
    checks it)."""
    return {"type": "object", "properties": {"turn": {"description": about, "anyOf": [
        {"type": "integer", "minimum": 1}, {"type": "null"}], "default": None}}}


class _CheckpointTool(BaseTool["ListArgs"]):
    """Shared by both tools: the session's checkpointer (None when checkpoints are off)."""

    args_name: ClassVar[str] = "ListArgs"  # its class in tool_args.py
    turn_about: ClassVar[str] = "Only this turn: list the files it changed."
    subject_field = None

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, turn_parameters(self.turn_about))

    def args_class(self) -> type[ListArgs]:
        from . import tool_args

        return getattr(tool_args, self.args_name)  # type: ignore[no-any-return]

    def __init__(self, checkpointer: GitCheckpointer | None = None) -> None:
        self._checkpointer = checkpointer

    def subject(self, arguments: dict[str, object]) -> str:
        turn = arguments.get("turn")
        return f"turn {turn}" if turn else ""

    async def run(self, args: ListArgs, ctx: ToolContext) -> ToolResult:
        if self._checkpointer is None:
            raise ToolError("checkpoints are off for this run")
        return await asyncio.to_thread(self.read, self._checkpointer, args.turn)

    def read(self, cp: GitCheckpointer, turn: int | None) -> ToolResult:
        raise NotImplementedError


class CheckpointListTool(_CheckpointTool):
    name = "checkpoint_list"
    description = (
        "List this session's workspace checkpoints: for each turn, how many files you changed "
        "(file tools and shell commands; edits by others are not counted). With `turn`, list "
        "that turn's changed files. The workspace is snapshotted before and after every turn, "
        "and the user can restore any of them."
    )

    def read(self, cp: GitCheckpointer, turn: int | None) -> ToolResult:
        turns = _live(cp)
        history = cp.history()
        if turn is not None:
            _check_turn(turns, turn)
            changes = list(history.own({turn}).values())
            lines = [f"{STATUS_WORDS.get(c.status, c.status)}: {c.path}" for c in changes[:LISTED_FILES]]
            if len(changes) > LISTED_FILES:
                lines.append(f"… and {len(changes) - LISTED_FILES} more")
            return ToolResult("\n".join(lines) or f"turn {turn} changed no files",
                              summary=f"turn {turn}: {counted(len(changes), 'file')}")
        lines = [f"turn {t.turn}: {_files(len(history.own({t.turn})))} changed"
                 + ("" if t.after else " so far") for t in turns]
        return ToolResult("\n".join(lines) or "no checkpoints yet", summary=counted(len(turns), "turn"))


class CheckpointDiffTool(_CheckpointTool):
    name = "checkpoint_diff"
    description = (
        "Show what you changed in a turn as a diff (file stat, then patch), shell commands' "
        "edits included, edits by others not. Default: the current turn so far."
    )
    args_name = "DiffArgs"
    turn_about = "The turn to show (default: the current one)."

    def read(self, cp: GitCheckpointer, turn: int | None) -> ToolResult:
        turns = _live(cp)
        if not turns:
            return ToolResult("no checkpoints yet", summary="no checkpoints")
        number = turn or turns[-1].turn
        _check_turn(turns, number)
        text = cp.own_diff(cp.history().own({number}))
        stat = text.split("\n\n", 1)[0].strip().splitlines()
        return ToolResult(text or f"turn {number} changed no files",
                          summary=stat[-1].strip() if text and stat else "no changes")


def _live(cp: GitCheckpointer) -> list[TurnCheckpoints]:
    return [t for t in cp.turns() if not t.rewound]


def _check_turn(turns: list[TurnCheckpoints], turn: int) -> None:
    if not any(t.turn == turn for t in turns):
        known = ", ".join(str(t.turn) for t in turns) or "none"
        raise ToolError(f"no checkpoint for turn {turn} (turns with checkpoints: {known})")


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


def checkpoint_tools(checkpointer: GitCheckpointer | None = None) -> list[Tool]:
    """Both checkpoint tools, reading `checkpointer`'s session."""
    return [CheckpointListTool(checkpointer), CheckpointDiffTool(checkpointer)]
