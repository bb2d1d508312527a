"""The per-request wire cache only encodes new messages and starts over when history changes."""

from __future__ import annotations

from recursive_cli.core.messages import Message
from recursive_cli.providers.wire_cache import WirePrefix


def make_prefix(calls: list[str]) -> WirePrefix[bytes]:
    def encode(message: Message) -> bytes:
        calls.append(message.content)
        return message.content.encode()

    return WirePrefix("test", encode)


def test_appends_encode_only_the_new_messages() -> None:
    calls: list[str] = []
    prefix = make_prefix(calls)
    convo = [Message.system("s"), Message.user("a")]
    assert prefix.wires(convo) == [b"s", b"a"]
    convo.append(Message.user("b"))
    assert prefix.wires(convo) == [b"s", b"a", b"b"]
    assert calls == ["s", "a", "b"]


def test_a_replaced_list_is_read_again() -> None:
    calls: list[str] = []
    prefix = make_prefix(calls)
    system, old, last = Message.system("s"), Message.user("old"), Message.user("last")
    assert prefix.wires([system, old, last]) == [b"s", b"old", b"last"]
    compacted = [system, Message.user("summary"), last]  # same length, same ends, new middle
    assert prefix.wires(compacted) == [b"s", b"summary", b"last"]
    assert prefix.wires([system, Message.user("c")]) == [b"s", b"c"]
    assert calls == ["s", "old", "last", "summary", "c"]  # each message still encoded only once
