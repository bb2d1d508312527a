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
        self.generation = 0  # counts the restarts: what is built from the wires starts over too

    def wires(self, messages: Sequence[Message]) -> list[W]:
        """Wire forms of `messages`, in order (the returned list is reused: do not modify it).

        Between two calls in the same `generation` the list only grew at its end, so whatever
        a caller built from its first items still holds.
        """
        known = len(self._messages)
        if messages is not self._source or known > len(messages) or (
                known and messages[known - 1] is not self._messages[-1]):
            self._source, self._messages, self._wires, known = messages, [], [], 0
            self.generation += 1
        for message in messages[known:]:
            self._messages.append(message)
            self._wires.append(message.wire(self._key, self._encode))
        return self._wires


class JoinedWires:
    """The wire forms of a growing conversation joined into one buffer, extended in place.

    A body spliced from it copies the conversation once per request, instead of joining
    every message again and then copying the result into the body.
    """

    def __init__(self, separator: bytes = b",") -> None:
        self._separator = separator
        self._generation = -1
        self._count = 0
        self.data = bytearray()

    def extend(self, prefix: WirePrefix[bytes], messages: Sequence[Message]) -> bytearray:
        """`prefix.wires(messages)` joined by the separator (the buffer is reused: do not modify it)."""
        wires = prefix.wires(messages)
        if prefix.generation != self._generation:
            self._generation, self._count, self.data = prefix.generation, 0, bytearray()
        for wire in wires[self._count:]:
            if self.data:
                self.data += self._separator
            self.data += wire
        self._count = len(wires)
        return self.data

