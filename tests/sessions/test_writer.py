"""The session writer: records on disk the moment they exist, meta.json totals, IO errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from recursive_cli.core.events import FinishReason, MessageAdded, RunFinished, TurnFinished, TurnStarted
from recursive_cli.core.messages import Message, Usage
from recursive_cli.core.values import as_json
from recursive_cli.features.sessions.meta import read_meta
from recursive_cli.features.sessions.reader import load_session
from recursive_cli.features.sessions.records import ExtraRecord, RepairRecord, SessionExistsError, SessionWriteError
from recursive_cli.features.sessions.writer import TRANSCRIPT_FILE, JsonlSessionWriter

from .conftest import conversation, make_meta, write_turn


def lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / TRANSCRIPT_FILE).read_text().splitlines()]


def turn_finished(turn: int = 1, cost: float | None = 0.25, reason=FinishReason.COMPLETED) -> TurnFinished:
    return TurnFinished(turn=turn, finish_reason=reason, steps=2,
                        usage=Usage(input_tokens=320, output_tokens=42), cost_usd=cost)


def run_finished(exit_code: int) -> RunFinished:
    return RunFinished(subtype="x", is_error=exit_code != 0, exit_code=exit_code, result="",
                       session_id="s1", num_turns=1, num_steps=2, duration_ms=5, usage=Usage(),
                       total_cost_usd=None, finish_reason="completed")


def test_create_writes_header_and_meta(new_session, store):
    writer = new_session("s1")
    header, = lines(writer.folder)
    assert header["type"] == "session" and header["schema_version"] == 1 and header["id"] == "s1"
    assert header["workspace"] == "/ws"
    assert read_meta(writer.folder).status == "running"


def test_round_trip_rebuilds_the_exact_messages(new_session):
    writer = new_session("s1")
    messages = conversation()
    write_turn(writer, messages)
    writer.emit(turn_finished())
    loaded = load_session(writer.folder)
    assert loaded.messages == messages
    assert [as_json(m) for m in loaded.messages] == [as_json(m) for m in messages]
    assert loaded.turns == 1 and loaded.warnings == []


def test_each_message_is_on_disk_right_after_its_emit(new_session):
    writer = new_session("s1")
    writer.emit(TurnStarted(turn=1, prompt="hi"))
    for count, message in enumerate(conversation(), start=1):
        writer.emit(MessageAdded(message=message, turn=1))
        # read through a separate descriptor, before any turn end or close
        on_disk = load_session(writer.folder).messages
        assert len(on_disk) == count and on_disk[-1] == message


def test_turn_end_updates_meta_totals(new_session):
    writer = new_session("s1")
    write_turn(writer, conversation())
    before = read_meta(writer.folder)
    assert before.title == "fix the failing test" and before.turns == 1
    writer.emit(turn_finished(cost=0.25))
    meta = read_meta(writer.folder)
    assert (meta.turns, meta.messages, meta.steps) == (1, 5, 2)
    assert meta.usage == Usage(input_tokens=320, output_tokens=42)
    assert meta.cost_usd == 0.25 and meta.status == "running" and meta.finish_reason == "completed"
    assert meta.updated >= before.updated
    assert lines(writer.folder)[-1]["type"] == "turn_end"


@pytest.mark.parametrize(("code", "status"), [(0, "completed"), (130, "interrupted"),
                                              (143, "interrupted"), (1, "failed"), (3, "failed")])
def test_run_finished_sets_status(new_session, code, status):
    writer = new_session("s1")
    writer.emit(run_finished(code))
    assert read_meta(writer.folder).status == status


def test_create_refuses_an_existing_session(new_session, store):
    new_session("s1")
    with pytest.raises(SessionExistsError, match="session s1 already exists"):
        JsonlSessionWriter.create(store.folder("s1"), make_meta("s1"))


def test_create_in_an_unwritable_place_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("")
    with pytest.raises(SessionWriteError) as caught:
        JsonlSessionWriter.create(blocker / "sessions" / "s1", make_meta("s1"))
    assert str(blocker) in str(caught.value) and "\n" not in str(caught.value)


def test_reopen_appends_and_continues_counts(new_session, store):
    writer = new_session("s1")
    write_turn(writer, conversation())
    writer.emit(turn_finished())
    writer.emit(run_finished(0))
    writer.close()
    meta = read_meta(store.folder("s1"))
    again = JsonlSessionWriter.reopen(store.folder("s1"), meta)
    assert read_meta(store.folder("s1")).status == "running"
    followup = [Message.user("now add tests"), Message(role="assistant", content="Done.")]
    write_turn(again, followup, turn=2)
    again.emit(turn_finished(turn=2, cost=0.5))
    again.close()
    loaded = load_session(store.folder("s1"))
    assert loaded.messages == conversation() + followup and loaded.turns == 2
    assert (loaded.meta.turns, loaded.meta.messages, loaded.meta.steps) == (2, 7, 4)
    assert loaded.meta.cost_usd == 0.5


def test_reopen_after_a_torn_line_keeps_new_records_readable(new_session, store):
    writer = new_session("s1")
    write_turn(writer, conversation()[:2])
    writer.close()
    with (store.folder("s1") / TRANSCRIPT_FILE).open("ab") as handle:
        handle.write(b'{"type":"message","turn":1,"mess')
    again = JsonlSessionWriter.reopen(store.folder("s1"), read_meta(store.folder("s1")))
    again.emit(MessageAdded(message=Message.user("next"), turn=2))
    again.close()
    loaded = load_session(store.folder("s1"))
    assert loaded.messages[-1] == Message.user("next")
    assert len(loaded.warnings) == 1 and "corrupt" in loaded.warnings[0]


def test_reopen_without_transcript_is_an_error(store):
    with pytest.raises(SessionWriteError, match="cannot reopen"):
        JsonlSessionWriter.reopen(store.folder("nope"), make_meta("nope"))


def test_write_record_appends_other_kinds(new_session):
    writer = new_session("s1")
    writer.write_record(RepairRecord(turn=1, tool_call_id="c", content="x"))
    writer.write_record(ExtraRecord(type="wakeup", delay_seconds=60, prompt="check CI", job=None))
    assert lines(writer.folder)[1:] == [
        {"type": "repair", "turn": 1, "tool_call_id": "c", "content": "x", "time": ""},
        {"type": "wakeup", "delay_seconds": 60, "prompt": "check CI", "job": None},
    ]


def test_update_meta_rewrites_state(new_session):
    writer = new_session("s1")
    writer.update_meta(state={"goal": {"turns_left": 3}})
    assert read_meta(writer.folder).state == {"goal": {"turns_left": 3}}


def test_a_failing_append_stops_before_the_next_action_and_never_warns_twice(store):
    warnings: list[str] = []
    writer = JsonlSessionWriter.create(store.folder("s1"), make_meta("s1"), warn=warnings.append)
    os.close(writer._fd)  # the disk went away under the run
    with pytest.raises(SessionWriteError, match="cannot write session s1"):
        writer.emit(TurnStarted(turn=1, prompt="go"))
    with pytest.raises(SessionWriteError):  # every later action is refused too
        writer.emit(MessageAdded(message=Message.user("go"), turn=1))
    writer.emit(turn_finished())  # end-of-turn and end-of-run events never raise
    writer.emit(run_finished(1))
    writer.close()
    assert writer.error is not None and str(store.folder("s1")) in str(writer.error)
    assert warnings == []  # the error is the run's result (cli/launch.py), not a warning
    meta = read_meta(store.folder("s1"))
    assert (meta.status, meta.turns, meta.messages) == ("failed", 0, 0)  # counts what is on disk


def test_a_failing_meta_write_stops_the_run_and_keeps_the_last_good_meta(store, monkeypatch):
    writer = JsonlSessionWriter.create(store.folder("s1"), make_meta("s1"))

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("recursive_cli.features.sessions.meta.tempfile.mkstemp", full_disk)
    with pytest.raises(SessionWriteError, match="No space left on device"):
        write_turn(writer, conversation())
    writer.emit(turn_finished())
    writer.emit(run_finished(1))
    writer.close()
    monkeypatch.undo()
    assert read_meta(store.folder("s1")).status == "running"  # the last good meta.json
    loaded = load_session(store.folder("s1"))
    assert loaded.messages == [Message.user(conversation()[0].content)] and loaded.turns == 1
