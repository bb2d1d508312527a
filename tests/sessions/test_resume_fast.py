"""Resume's one-pass conversation rebuild: the same conversation, repairs and warnings as the
two-pass rebuild it replaced, and `repair_orphans` answering a loaded session without pairing
it again."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest

from recursive_cli.core.kernel import INTERRUPTED_RESULT
from recursive_cli.core.messages import Message, ToolCall
from recursive_cli.core.values import dumps
from recursive_cli.features.compaction import apply_record
from recursive_cli.features.sessions import reader
from recursive_cli.features.sessions.reader import load_session, repair_orphans
from recursive_cli.features.sessions.records import (
    ExtraRecord,
    MessageRecord,
    RepairRecord,
    TranscriptRecord,
    TurnStartRecord,
    dump_record,
)
from recursive_cli.features.sessions.writer import TRANSCRIPT_FILE
from tests.clitools import invoke

from .conftest import make_meta

T = "2026-12-01T00:00:00.000+00:00"


# The rebuild as it was before (two passes: gather, then pair; repair_orphans pairs again),
# kept here as the oracle.
def _old_pair(messages: list[Message], fill: Callable[[ToolCall], Message | None]):
    out: list[Message] = []
    added: list[Message] = []
    dropped: list[Message] = []
    pending: dict[str, ToolCall] = {}

    def close() -> None:
        for call in pending.values():
            result = fill(call)
            if result is not None:
                out.append(result)
                added.append(result)
        pending.clear()

    for message in messages:
        if message.role == "tool":
            if pending.pop(message.tool_call_id or "", None) is None:
                dropped.append(message)
            else:
                out.append(message)
            continue
        if pending:
            close()
        out.append(message)
        if message.role == "assistant" and message.tool_calls:
            pending = {call.id: call for call in message.tool_calls}
    close()
    return out, added, dropped


def _old_conversation(records: list[TranscriptRecord], warnings: list[str]):
    messages: list[Message] = []
    repairs: dict[str, str] = {}
    turns = max((r.turn for r in records if isinstance(r, TurnStartRecord)), default=0)
    unsaved = None

    def recorded(call: ToolCall) -> Message | None:
        content = repairs.pop(call.id, None)
        return None if content is None else Message.tool_result(call, content, is_error=True)

    def lost(start: TurnStartRecord) -> Message:
        warnings.append(f"restored the prompt of turn {start.turn} from its turn_start record")
        return Message.user(start.prompt)

    for record in reader._not_rewound(records):
        if isinstance(record, MessageRecord) and record.message.role != "system":
            if unsaved is not None and record.message.role != "user":
                messages.append(lost(unsaved))
            unsaved = None
            messages.append(record.message)
        elif isinstance(record, TurnStartRecord):
            if unsaved is not None:
                messages.append(lost(unsaved))
            unsaved = record if record.prompt else None
        elif isinstance(record, RepairRecord):
            repairs[record.tool_call_id] = record.content
        elif isinstance(record, ExtraRecord) and record.type == "compaction":
            paired, _, _ = _old_pair(messages, recorded)
            try:
                messages = apply_record(paired, record.fields())
            except ValueError as exc:
                warnings.append(f"ignored a compaction record: {exc}")
                messages = paired
    if unsaved is not None:
        messages.append(lost(unsaved))
    paired, _, dropped = _old_pair(messages, recorded)
    warnings.extend(f"dropped a tool result for unknown tool call {m.tool_call_id!r}" for m in dropped)
    return paired, turns


def _random_records(rng: random.Random) -> list[TranscriptRecord]:
    """A transcript's records with crashes, orphans, stray results, repairs, compactions, rewinds."""
    records: list[TranscriptRecord] = []
    ids = [f"c{n}" for n in range(8)]  # few ids: duplicates, late and early repairs all happen
    turn = 0
    for _ in range(rng.randint(0, 40)):
        pick = rng.random()
        if pick < 0.12:
            turn += 1
            records.append(TurnStartRecord(turn=turn, prompt=rng.choice(["", "go", "fix it"]), time=T))
        elif pick < 0.2:
            records.append(MessageRecord(turn=turn, message=Message.user("prompt"), time=T))
        elif pick < 0.45:
            calls = tuple(ToolCall(id=rng.choice(ids), name="read_file", arguments="{}")
                          for _ in range(rng.choice([0, 1, 1, 2, 3])))
            records.append(MessageRecord(turn=turn, message=Message(role="assistant", content="a",
                                                                    tool_calls=calls), time=T))
        elif pick < 0.75:
            call = ToolCall(id=rng.choice(ids), name="read_file", arguments="{}")
            records.append(MessageRecord(turn=turn, message=Message.tool_result(call, "r"), time=T))
        elif pick < 0.8:
            records.append(MessageRecord(turn=turn, message=Message.system("sys"), time=T))
        elif pick < 0.9:
            records.append(RepairRecord(turn=turn, tool_call_id=rng.choice(ids), content="gone", time=T))
        elif pick < 0.96:
            records.append(ExtraRecord(type="compaction", turn=turn, summary="s",
                                       replaced=rng.randint(0, 6)))
        else:
            records.append(ExtraRecord(type="rewind", turn=rng.randint(1, max(turn, 1))))
    return records


@pytest.mark.parametrize("seed", range(400))
def test_one_pass_rebuild_matches_the_two_pass_one(seed: int) -> None:
    records = _random_records(random.Random(seed))
    warnings: list[str] = []
    messages, turns = reader._conversation(records, warnings)
    old_warnings: list[str] = []
    old_messages, old_turns = _old_conversation(records, old_warnings)
    assert (list(messages), turns, warnings) == (old_messages, old_turns, old_warnings)
    old_synthetic = _old_pair(old_messages, lambda call: Message.tool_result(
        call, INTERRUPTED_RESULT, is_error=True))
    repaired, added = repair_orphans(messages)
    assert (repaired, added) == old_synthetic[:2]
    assert type(repaired) is list and repaired is not messages
    assert repair_orphans(list(messages)) == old_synthetic[:2]  # (a plain list: paired in full)
    assert list(messages) == old_messages  # repairing leaves the loaded conversation as it was


def _write(folder, records: list[TranscriptRecord]) -> None:
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(dumps(make_meta(folder.name, messages=0)))
    header = {"type": "session", "schema_version": 1, "id": folder.name, "created": T, "workspace": "/ws"}
    lines = [json.dumps(header).encode() + b"\n"] + [dump_record(r) for r in records]
    (folder / TRANSCRIPT_FILE).write_bytes(b"".join(lines))


def test_repair_of_a_loaded_session_needs_no_second_pass(store, monkeypatch) -> None:
    calls = (ToolCall(id="a", name="read_file", arguments="{}"),
             ToolCall(id="b", name="run_shell", arguments="{}"))
    records: list[TranscriptRecord] = [
        TurnStartRecord(turn=1, prompt="go", time=T),
        MessageRecord(turn=1, message=Message.user("go"), time=T),
        MessageRecord(turn=1, message=Message(role="assistant", content="", tool_calls=calls), time=T),
        MessageRecord(turn=1, message=Message.tool_result(calls[1], "ok"), time=T),
    ]
    _write(store.folder("s1"), records)
    loaded = load_session(store.folder("s1"))
    monkeypatch.setattr(reader, "pair_tool_results", _refuse)
    repaired, added = repair_orphans(loaded.messages)
    interrupted = Message.tool_result(calls[0], INTERRUPTED_RESULT, is_error=True)
    assert added == [interrupted]
    assert repaired == [Message.user("go"), records[2].message, records[3].message, interrupted]


def test_a_loaded_conversation_changed_since_is_paired_again(store) -> None:
    call = ToolCall(id="a", name="read_file", arguments="{}")
    _write(store.folder("s1"), [MessageRecord(turn=1, message=Message.user("go"), time=T)])
    loaded = load_session(store.folder("s1"))
    loaded.messages.append(Message(role="assistant", content="", tool_calls=(call,)))
    repaired, added = repair_orphans(loaded.messages)
    assert added == [Message.tool_result(call, INTERRUPTED_RESULT, is_error=True)]
    assert repaired == [*loaded.messages, *added]


def _refuse(*args: object) -> None:
    raise AssertionError("the loaded conversation was paired a second time")


def test_resume_of_a_killed_session_sends_the_repaired_conversation(workspace, isolated_home) -> None:
    """End to end: a session killed mid-call, with a repair recorded by an earlier resume for
    one call and none for the other, resumes with both answered, in the model's order."""
    calls = (ToolCall(id="a", name="read_file", arguments='{"path": "x"}'),
             ToolCall(id="b", name="read_file", arguments='{"path": "y"}'))
    folder = isolated_home / "sessions" / "s1"
    records: list[TranscriptRecord] = [
        TurnStartRecord(turn=1, prompt="go", time=T),
        MessageRecord(turn=1, message=Message.user("go"), time=T),
        MessageRecord(turn=1, message=Message(role="assistant", content="", tool_calls=calls), time=T),
        RepairRecord(turn=1, tool_call_id="b", content="lost b", time=T),
    ]
    _write(folder, records)
    meta = make_meta("s1", workspace=str(workspace), messages=2, turns=1, status="running")
    script = isolated_home / "script.json"
    script.write_text(json.dumps([{"text": "used before"}, {"text": "done"}]))  # one reply per assistant message already said
    (folder / "meta.json").write_text(dumps(meta))
    result = invoke("resume", "s1", "--script", str(script), "--no-checkpoints", "--output-format",
                    "json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    lines = (folder / TRANSCRIPT_FILE).read_text().splitlines()
    repairs = [json.loads(line) for line in lines if json.loads(line)["type"] == "repair"]
    assert [(r["tool_call_id"], r["content"]) for r in repairs] == [("b", "lost b"), ("a", INTERRUPTED_RESULT)]
    loaded = load_session(folder)
    tools = [(m.tool_call_id, m.content) for m in loaded.messages if m.role == "tool"]
    assert tools == [("a", INTERRUPTED_RESULT), ("b", "lost b")]


def test_a_killed_turn_s_steps_are_added_to_meta_in_one_sum(store) -> None:
    from recursive_cli.core.messages import Usage
    from recursive_cli.features.sessions.records import TurnEndRecord

    usages = [Usage(input_tokens=100 + n, output_tokens=n, cache_read_tokens=2 * n,
                    cache_write_tokens=n % 3) for n in range(40)]
    records: list[TranscriptRecord] = [
        TurnStartRecord(turn=1, prompt="go", time=T),
        MessageRecord(turn=1, message=Message.user("go"), time=T),
        MessageRecord(turn=1, message=Message(role="assistant", content="a", usage=Usage(input_tokens=7)),
                      time=T),
        TurnEndRecord(turn=1, finish_reason="stop", steps=1, usage=Usage(input_tokens=7), cost_usd=0.5,
                      time=T),
        TurnStartRecord(turn=2, prompt="more", time=T),
        MessageRecord(turn=2, message=Message.user("more"), time=T),
    ]
    for n, usage in enumerate(usages):  # killed mid-turn: no turn_end; one step without usage
        records.append(MessageRecord(turn=2, message=Message(role="assistant", content=f"s{n}",
                                                             usage=None if n == 5 else usage), time=T))
    folder = store.folder("s1")
    _write(folder, records)
    meta = make_meta("s1", messages=3, turns=1, steps=1, usage=Usage(input_tokens=7), cost_usd=0.5,
                     status="running")
    (folder / "meta.json").write_text(dumps(meta))
    loaded = load_session(folder)
    tail = [u for n, u in enumerate(usages) if n != 5]
    assert (loaded.meta.steps, loaded.meta.turns, loaded.meta.messages) == (41, 2, 43)
    assert loaded.meta.usage == Usage(
        input_tokens=7 + sum(u.input_tokens for u in tail), output_tokens=sum(u.output_tokens for u in tail),
        cache_read_tokens=sum(u.cache_read_tokens for u in tail),
        cache_write_tokens=sum(u.cache_write_tokens for u in tail))
