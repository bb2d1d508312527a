"""meta.json written atomically, titles, and the transcript record formats."""

from __future__ import annotations

import json

import pytest

from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.features.sessions.meta import SessionBudgets, make_title, read_meta, write_meta
from recursive_cli.features.sessions.records import (
    ExtraRecord,
    MessageRecord,
    SessionReadError,
    TurnEndRecord,
    dump_record,
    parse_record,
)

from .conftest import make_meta


def test_meta_round_trips_and_leaves_no_temp_files(tmp_path):
    meta = make_meta("s1", budgets=SessionBudgets(max_cost=2.5, max_steps=50), allow=["run_shell(git *)"],
                     state={"loop": {"wakeup": None}}, usage=Usage(input_tokens=5))
    for _ in range(3):
        write_meta(tmp_path, meta)
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]
    assert read_meta(tmp_path) == meta
    assert json.loads((tmp_path / "meta.json").read_text())["schema_version"] == 1


def test_a_failed_meta_write_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    write_meta(tmp_path, make_meta("s1", title="old"))

    def crash(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("recursive_cli.features.sessions.meta.os.fsync", crash)
    with pytest.raises(OSError):
        write_meta(tmp_path, make_meta("s1", title="new"))
    monkeypatch.undo()
    assert read_meta(tmp_path).title == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def test_unreadable_meta_is_a_clear_error(tmp_path):
    (tmp_path / "meta.json").write_text("{")
    with pytest.raises(SessionReadError, match="is not valid session metadata"):
        read_meta(tmp_path)


@pytest.mark.parametrize(("prompt", "title"), [
    ("fix it\nplease", "fix it"), ("\n\n  spaced  \n", "spaced"), ("", ""),
    ("x" * 100, "x" * 79 + "…"),
])
def test_title_is_the_first_line_cut_to_80(prompt, title):
    assert make_title(prompt) == title
    assert len(make_title(prompt)) <= 80


def test_message_record_format_and_round_trip():
    message = Message(role="assistant", content="hi",
                      tool_calls=(ToolCall(id="c", name="glob", arguments='{"pattern": "*"}'),),
                      usage=Usage(input_tokens=1, output_tokens=2))
    line = dump_record(MessageRecord(turn=3, message=message, time="t"))
    data = json.loads(line)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert data["type"] == "message" and data["turn"] == 3 and data["time"] == "t"
    assert data["message"]["tool_calls"] == [{"id": "c", "name": "glob", "arguments": '{"pattern": "*"}'}]
    assert "tool_call_id" not in data["message"]  # None fields are left out
    assert parse_record(line).message == message


def test_lone_surrogates_in_tool_output_survive():
    message = Message(role="tool", content="bad \udcff byte", tool_call_id="c", tool_name="x")
    line = dump_record(MessageRecord(turn=1, message=message, time="t"))
    assert parse_record(line).message == message


def test_turn_end_with_unknown_cost():
    record = TurnEndRecord(turn=1, finish_reason="completed", steps=1, usage=Usage(), time="t")
    assert parse_record(dump_record(record)) == record


def test_other_record_types_are_kept_verbatim():
    line = b'{"type":"checkpoint","turn":2,"ref":"abc","files":["a"],"note":null}'
    record = parse_record(line)
    assert isinstance(record, ExtraRecord) and record.type == "checkpoint"
    assert json.loads(dump_record(record)) == json.loads(line)


@pytest.mark.parametrize("line", [b"", b"[1]", b'{"no_type": 1}', b'{"type": "message"}', b"\xff"])
def test_invalid_lines_raise_value_error(line):
    with pytest.raises(ValueError):
        parse_record(line)
