"""Typed conversation records: messages, tool calls and token usage (dataclasses: `values.py`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(slots=True, kw_only=True)
class Usage:
    """Token counts reported by a provider for one or more requests."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int | None = None
    """Of `output_tokens`, those spent reasoning (None when the provider does not say)."""

    def __add__(self, other: Usage) -> Usage:
        reasoning = (None if self.reasoning_tokens is None and other.reasoning_tokens is None
                     else (self.reasoning_tokens or 0) + (other.reasoning_tokens or 0))
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=reasoning,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool invocation requested by the model; `arguments` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON; raises ValueError when they are not valid JSON."""
        return json.loads(self.arguments or "{}")

    def arguments_or_empty(self) -> dict[str, Any]:
        """The arguments as an object; {} when they are not valid JSON or not an object."""
        try:
            value = self.parsed_arguments()
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Reasoning:
    """A model's reasoning, kept so it can be sent back as the API requires.

    `kind` says which: an Anthropic `thinking` block (`text` + `signature`), a
    `redacted_thinking` block (`signature` holds its `data`), or an OpenAI Responses
    `reasoning` item (`id`, the summary in `text`, `encrypted_content` in `signature`).
    Sent back unchanged, and only to the provider that made it.
    """

    kind: Literal["thinking", "redacted_thinking", "reasoning"]
    text: str = ""
    signature: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Image:
    """An image given to the model: base64 `data` of type `media_type` (image/png, ...)."""

    media_type: str
    data: str
    source: str | None = None
    """Where it came from (a file path), for display; not sent."""


class _WireSlot:
    """The slot of a message's wire forms, by provider key: set on first use, never a field,
    so never dumped or compared; a copy starts without it."""

    __slots__ = ("_wires",)


@dataclass(frozen=True, slots=True, kw_only=True)
class Message(_WireSlot):
    """One message of the conversation, in a provider-neutral shape.

    Messages are immutable once made, so each provider can cache its wire form on them
    (see `wire`), which keeps per-step request building proportional to new messages only.
    """
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    usage: Usage | None = None
    reasoning: tuple[Reasoning, ...] | None = None
    """An assistant message's reasoning, before its text and tool calls."""
    images: tuple[Image, ...] | None = None
    """Images of a user message or a tool result, after its text."""

    def wire(self, key: str, build: Any) -> Any:
        """Return this message's cached wire form for `key`, building it once with `build(self)`."""
        wires: dict[str, Any] | None = getattr(self, "_wires", None)
        if wires is None:  # the first wire form asked of this message
            wires = {}
            object.__setattr__(self, "_wires", wires)  # frozen fields; the cache is no field
        cached = wires.get(key)
        if cached is None:
            cached = wires[key] = build(self)
        return cached

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str, images: Sequence[Image] = ()) -> Message:
        return cls(role="user", content=text, images=tuple(images) or None)

    @classmethod
    def tool_result(cls, call: ToolCall, content: str, is_error: bool = False,
                    images: Sequence[Image] = ()) -> Message:
        return cls(
            role="tool",
            content=content,
            tool_call_id=call.id,
            tool_name=call.name,
            is_error=is_error,
            images=tuple(images) or None,
        )


CONTINUE = "Continue."
"""The prompt of a turn that carries a finished conversation on with no new instruction."""


def unfinished(transcript: Sequence[Message]) -> bool:
    """Whether the conversation stopped mid-turn: its last message waits for the model."""
    last = transcript[-1] if transcript else None
    return last is not None and (last.role in ("user", "tool") or bool(last.tool_calls))
