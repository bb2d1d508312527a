"""Wire forms of a growing conversation, kept between requests.

A conversation only grows between steps, so each request needs to encode only the messages
added since the last one; the rest is reused as it is. The runtime appends to its transcript
list in place and replaces the list object for any other change (a compaction, a rewind, a
new transcript — see `AgentRuntime.set_transcript`), so a different list, a shorter one or a
different last message makes the cache start over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ..core.messages import Message

W = TypeVar("W")


class WirePrefix(Generic[W]):
    """The wire forms of the messages seen last time, extended with the new ones."""

    def __init__(self, key: str, encode: Callable[[Message], W]) -> None:
        self._key = key
        self._encode = encode
        self._source: Sequence[Message] | None = None
        self._messages: list[Message] = []
        self._wires: list[W] = []

    def wires(self, messages: Sequence[Message]) -> list[W]:
        """Wire forms of `messages`, in order (the returned list is reused: do not modify it)."""
        known = len(self._messages)
        if messages is not self._source or known > len(messages) or (
                known and messages[known - 1] is not self._messages[-1]):
            self._source, self._messages, self._wires, known = messages, [], [], 0
        for message in messages[known:]:
            self._messages.append(message)
            self._wires.append(message.wire(self._key, self._encode))
        return self._wires
