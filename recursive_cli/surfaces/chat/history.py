"""A resumed conversation shown again: the user's messages, the tool calls as one line each,
the answers as Markdown; only the most recent part of a long one."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.messages import Message
from .render import ChatSink

SHOWN_MESSAGES = 40


def show_history(sink: ChatSink, transcript: Sequence[Message]) -> None:
    """The conversation so far (system prompt left out), its end if it is long."""
    messages = [m for m in transcript if m.role != "system"]
    if not messages:
        return
    hidden = max(0, len(messages) - SHOWN_MESSAGES)
    if hidden:
        sink.line(f"… {hidden} earlier message{'s' if hidden > 1 else ''} not shown "
                  "(recursive sessions show ID has them all)", "dim")
    for message in messages[hidden:]:
        _show(sink, message)
    sink.line("─" * 20, "dim")


def _show(sink: ChatSink, message: Message) -> None:
    if message.role == "user":
        sink.line("› " + message.content.strip().replace("\n", "\n  "), "bold")
    elif message.role == "assistant":
        for call in message.tool_calls:
            sink.line(f"· {call.name} {_short(call.arguments)}", "dim")
        if message.content.strip() and not message.tool_calls:
            sink.markdown(message.content)
        elif message.content.strip():
            sink.line(message.content.strip(), "dim")


def _short(arguments: str, width: int = 60) -> str:
    flat = " ".join(arguments.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def last_context_tokens(transcript: Sequence[Message]) -> int:
    """The prompt and answer tokens of the last reply that reported them (how full the context is)."""
    for message in reversed(transcript):
        if message.role == "assistant" and message.usage is not None:
            return message.usage.input_tokens + message.usage.output_tokens
    return 0
