"""Loading sessions: torn and corrupt lines, newer schemas, and orphan tool-call repair."""

from __future__ import annotations

import json

import pytest

from recursive_cli.core.events import FinishReason, MessageAdded, RunFinished, TurnFinished, TurnStarted
from recursive_cli.core.kernel import INTERRUPTED_RESULT
from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.core.pricing import cost_usd
from recursive_cli.features.sessions.meta import write_meta
from recursive_cli.features.sessions.reader import load_session, repair_orphans, repair_record
from recursive_cli.features.sessions.records import SessionReadError, SessionSchemaError
from recursive_cli.features.sessions.writer import TRANSCRIPT_FILE, JsonlSessionWriter

from .conftest import conversation, make_meta, write_turn


def test_a_torn_last_line_is_ignored_with_a_warning(new_session):
    writer = new_session("s1")
    write_turn(writer, conversation()[:3])
    with (writer.folder / TRANSCRIPT_FILE).open("ab") as handle:
        handle.write(b'{"type":"message","turn":1,"message":{"role":"tool","cont')
    loaded = load_session(writer.folder)
    assert loaded.messages == conversation()[:3]
    assert len(loaded.warnings) == 1 and "torn last line" in loaded.warnings[0]


def test_a_corrupt_middle_line_is_reported_and_skipped(new_session):
    writer = new_session("s1")
    write_turn(writer, conversation()[:1])
    with (writer.folder / TRANSCRIPT_FILE).open("ab") as handle:
        handle.write(b"\x00\x00garbage\n")
        handle.write(b'{"type":"message","turn":1,"message":{"role":"nobody"}}\n')
    writer.emit(MessageAdded(message=conversation()[1], turn=1))
    loaded = load_session(writer.folder)
    assert loaded.messages == conversation()[:2]
    assert len(loaded.warnings) == 2
    assert loaded.warnings[0].startswith("line 4 of transcript.jsonl is corrupt")
    assert loaded.warnings[1].startswith("line 5 of transcript.jsonl is corrupt")
    assert loaded.turns == 1


def test_unknown_record_types_are_kept_and_ignored_for_the_conversation(new_session):
    writer = new_session("s1")
    with (writer.folder / TRANSCRIPT_FILE).open("ab") as handle:
        handle.write(b'{"type":"goal_evaluation","achieved":false,"reason":"tests fail"}\n')
    write_turn(writer, conversation())
    loaded = load_session(writer.folder)
    assert loaded.messages == conversation() and loaded.warnings == []
    extra = loaded.records[1]
    assert extra.type == "goal_evaluation" and extra.fields() == {"achieved": False,
                                                                  "reason": "tests fail"}


def test_a_newer_schema_is_refused_with_a_clear_message(store):
    folder = store.folder("s9")
    folder.mkdir(parents=True)
    header = {"type": "session", "schema_version": 2, "id": "s9", "created": "x", "workspace": "/"}
    (folder / TRANSCRIPT_FILE).write_text(json.dumps(header) + "\n")
    write_meta(folder, make_meta("s9"))
    with pytest.raises(SessionSchemaError) as caught:
        load_session(folder)
    assert str(caught.value) == ("session s9 was written by a newer version of recursive "
                                 "(schema 2); upgrade to resume it")


def test_a_newer_meta_schema_is_refused(new_session):
    writer = new_session("s1")
    meta = json.loads((writer.folder / "meta.json").read_text())
    meta.update(schema_version=3, status="paused-in-the-future")
    (writer.folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(SessionSchemaError, match=r"schema 3\); upgrade to resume it"):
        load_session(writer.folder)


def test_a_missing_transcript_is_a_clear_error(store):
    with pytest.raises(SessionReadError, match="session gone has no transcript"):
        load_session(store.folder("gone"))


def test_system_messages_are_not_part_of_the_loaded_conversation(new_session):
    writer = new_session("s1")
    write_turn(writer, [Message.system("you are an agent"), *conversation()])
    assert load_session(writer.folder).messages == conversation()


CALLS = [ToolCall(id=f"c{i}", name="run_shell", arguments="{}") for i in range(3)]


def assistant(*calls: ToolCall) -> Message:
    return Message(role="assistant", content="", tool_calls=calls)


def synthetic(call: ToolCall) -> Message:
    return Message.tool_result(call, INTERRUPTED_RESULT, is_error=True)


def test_repair_answers_a_single_orphan_call():
    messages = [Message.user("go"), assistant(CALLS[0])]
    repaired, added = repair_orphans(messages)
    assert added == [synthetic(CALLS[0])]
    assert repaired == messages + added
    assert added[0].content == "interrupted before completion; effects unknown" and added[0].is_error


def test_repair_answers_every_call_of_a_message_in_order():
    messages = [Message.user("go"), assistant(*CALLS)]
    repaired, added = repair_orphans(messages)
    assert added == [synthetic(call) for call in CALLS]
    assert repaired == messages + added


def test_repair_places_results_after_the_existing_ones_of_a_partly_answered_message():
    done = Message.tool_result(CALLS[1], "ok")
    messages = [Message.user("go"), assistant(*CALLS), done]
    repaired, added = repair_orphans(messages)
    assert added == [synthetic(CALLS[0]), synthetic(CALLS[2])]
    assert repaired == [messages[0], messages[1], done, *added]


def test_repair_of_an_orphan_followed_by_a_new_prompt():
    messages = [Message.user("go"), assistant(CALLS[0]), Message.user("again")]
    repaired, added = repair_orphans(messages)
    assert repaired == [messages[0], messages[1], synthetic(CALLS[0]), messages[2]]


def test_a_complete_conversation_needs_no_repair():
    repaired, added = repair_orphans(conversation())
    assert repaired == conversation() and added == []


def test_results_for_unknown_calls_are_dropped():
    stray = Message.tool_result(ToolCall(id="zz", name="x"), "?")
    repaired, added = repair_orphans([Message.user("go"), stray, Message.user("more")])
    assert repaired == [Message.user("go"), Message.user("more")] and added == []


def test_load_warns_about_results_for_unknown_calls(new_session):
    writer = new_session("s1")
    stray = Message.tool_result(ToolCall(id="zz", name="x"), "?")
    write_turn(writer, [Message.user("go"), stray])
    loaded = load_session(writer.folder)
    assert loaded.messages == [Message.user("go")]
    assert loaded.warnings == ["dropped a tool result for unknown tool call 'zz'"]


def test_recorded_repairs_are_replayed_in_place_on_the_next_load(new_session):
    writer = new_session("s1")
    done = Message.tool_result(CALLS[1], "ok")
    write_turn(writer, [Message.user("go"), assistant(*CALLS), done])  # killed mid-turn
    loaded = load_session(writer.folder)
    repaired, added = repair_orphans(loaded.messages)
    for message in added:
        writer.write_record(repair_record(message, turn=loaded.turns))
    write_turn(writer, [Message.user("continue"), Message(role="assistant", content="ok")], turn=2)
    again = load_session(writer.folder)
    assert again.messages == repaired + [Message.user("continue"),
                                         Message(role="assistant", content="ok")]
    assert repair_orphans(again.messages)[1] == [] and again.warnings == []


def test_load_is_linear_enough_for_a_big_session(new_session):
    """Not a timing assertion: a session of 4k messages loads and pairs (bench/ has the figures)."""
    writer = new_session("s1")
    messages = [Message.user("go")]
    for i in range(2_000):
        call = ToolCall(id=f"c{i}", name="read_file", arguments='{"path": "a"}')
        messages += [assistant(call), Message.tool_result(call, "x" * 50)]
    write_turn(writer, messages)
    loaded = load_session(writer.folder)
    assert loaded.messages == messages and repair_orphans(loaded.messages)[1] == []


def test_a_run_killed_mid_turn_still_counts_its_steps_and_cost(store):
    meta = make_meta("k1")
    meta.model = "gpt-5"
    writer = JsonlSessionWriter.create(store.folder("k1"), meta)
    write_turn(writer, conversation())
    writer.emit(TurnFinished(turn=1, finish_reason=FinishReason.COMPLETED, steps=2,
                             usage=Usage(input_tokens=320, output_tokens=42), cost_usd=0.01))
    step = Usage(input_tokens=1000, output_tokens=100)
    call = ToolCall(id="k", name="run_shell", arguments="{}")
    write_turn(writer, [Message.user("more"),
                        Message(role="assistant", tool_calls=(call,), usage=step)], turn=2)
    # kill -9 here: no turn end, no run end, meta.json still says what turn 1 left
    loaded = load_session(store.folder("k1"))
    assert (loaded.meta.turns, loaded.meta.messages, loaded.meta.steps) == (2, 7, 3)
    assert loaded.meta.usage == Usage(input_tokens=1320, output_tokens=142)
    assert loaded.meta.cost_usd == pytest.approx(0.01 + cost_usd("gpt-5", step))
    writer.close()


def test_a_finished_sessions_meta_is_taken_as_written(new_session):
    writer = new_session("s1")
    write_turn(writer, conversation())
    writer.emit(RunFinished(subtype="interrupted", is_error=True, exit_code=130, result="",
                            session_id="s1", num_turns=1, num_steps=2, duration_ms=1, usage=Usage(),
                            total_cost_usd=None, finish_reason="interrupted"))
    meta = load_session(writer.folder).meta
    assert meta.status == "interrupted" and meta.steps == 0 and meta.messages == 5


def test_a_prompt_cut_off_after_its_turn_start_is_restored(new_session):
    writer = new_session("s1")
    write_turn(writer, conversation())
    writer.emit(TurnStarted(turn=2, prompt="and the docs"))  # killed before the prompt's record
    loaded = load_session(writer.folder)
    assert loaded.messages == conversation() + [Message.user("and the docs")]
    assert loaded.turns == 2
    assert loaded.warnings == ["restored the prompt of turn 2 from its turn_start record"]
