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


def test_the_generation_counts_restarts_only() -> None:
    prefix = make_prefix([])
    convo = [Message.system("s")]
    prefix.wires(convo)
    first = prefix.generation
    convo.append(Message.user("a"))
    prefix.wires(convo)
    assert prefix.generation == first  # grown at the end: what was built from it holds
    prefix.wires(list(convo))
    assert prefix.generation == first + 1  # another list: start over


def test_joined_wires_grow_in_place_and_start_over_with_the_prefix() -> None:
    from recursive_cli.providers.wire_cache import JoinedWires

    prefix, joined = make_prefix([]), JoinedWires()
    convo = [Message.system("s"), Message.user("a")]
    assert bytes(joined.extend(prefix, convo)) == b"s,a"
    convo.append(Message.user("b"))
    assert bytes(joined.extend(prefix, convo)) == b"s,a,b"
    assert bytes(joined.extend(prefix, [convo[0], Message.user("summary")])) == b"s,summary"
    assert bytes(joined.extend(prefix, [])) == b""
