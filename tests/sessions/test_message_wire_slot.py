"""The providers' wire cache on a message is no part of the message: not saved, not compared, not copied."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from recursive_cli.core.messages import Message
from recursive_cli.core.values import as_json
from recursive_cli.features.sessions.reader import load_session
from recursive_cli.features.sessions.records import MessageRecord, dump_record


def content(message: Message) -> str:
    return message.content


def test_a_copy_gets_its_own_wire_forms() -> None:
    message = Message.user("first")
    assert message.wire("k", content) == "first"
    changed = replace(message, content="second")
    assert changed.wire("k", content) == "second"
    assert message.wire("k", content) == "first"


def test_the_wire_cache_is_neither_saved_nor_compared() -> None:
    message = Message.user("hello")
    line = dump_record(MessageRecord(turn=1, message=message, time="t"))
    message.wire("k", content)
    assert dump_record(MessageRecord(turn=1, message=message, time="t")) == line
    assert message == Message.user("hello") and hash(message) == hash(Message.user("hello"))
    assert as_json(message) == as_json(Message.user("hello"))


def test_loaded_messages_build_their_wire_forms_on_first_use(tmp_path: Path) -> None:
    from recursive_cli.features.sessions.meta import SessionMeta, write_meta

    folder = tmp_path / "s1"
    folder.mkdir()
    lines = [b'{"type":"session","schema_version":1,"id":"s1","created":"c","workspace":"/w"}\n',
             dump_record(MessageRecord(turn=1, message=Message.user("hi"), time="t"))]
    (folder / "transcript.jsonl").write_bytes(b"".join(lines))
    write_meta(folder, SessionMeta(id="s1", workspace="/w", created="c", messages=1))
    loaded = load_session(folder)
    calls: list[Message] = []
    built = [m.wire("k", lambda m: calls.append(m) or m.content) for m in loaded.messages * 2]
    assert built == ["hi", "hi"] and len(calls) == 1
