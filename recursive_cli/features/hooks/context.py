"""Where a hook's `additionalContext` (PreToolUse, PostToolUse) reaches the model: after the
call's result, each as Claude Code words it (`<system-reminder>` holding
`PostToolUse:Bash hook additional context: …`), so a model tuned on Claude Code reads it alike."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.tool import ToolResult


def context_note(event: str, tool: str, text: str) -> str:
    """One hook's context, as the model reads it; `tool` is Claude's name for the tool."""
    return f"<system-reminder>\n{event}:{tool} hook additional context: {text}\n</system-reminder>"


def with_notes(result: ToolResult, notes: Sequence[str]) -> ToolResult:
    """`result` with `notes` after its content (unchanged when there are none)."""
    kept = [note for note in notes if note]
    if not kept:
        return result
    return result._replace(content="\n\n".join([result.content, *kept]))
