"""The session reader honours `rewind` records: rewound turns leave the conversation, numbering goes on."""

from __future__ import annotations

import json
from pathlib import Path

from recursive_cli.core.events import MessageAdded, TurnStarted
from recursive_cli.core.messages import Message, ToolCall
from recursive_cli.features.sessions.meta import SessionMeta
from recursive_cli.features.sessions.reader import load_session
from recursive_cli.features.sessions.writer import JsonlSessionWriter


def write_turns(folder: Path, turns: range, rewind_to: int | None = None) -> JsonlSessionWriter:
    writer = JsonlSessionWriter.create(folder, SessionMeta(id=folder.name, workspace="/ws"))
    for turn in turns:
        call = ToolCall(id=f"c{turn}", name="run_shell", arguments="{}")
        writer.emit(TurnStarted(turn=turn, prompt=f"task {turn}"))
        for message in (Message.user(f"task {turn}"),
                        Message(role="assistant", content="", tool_calls=(call,)),
                        Message.tool_result(call, "ok"),
                        Message(role="assistant", content=f"answer {turn}")):
            writer.emit(MessageAdded(message=message, turn=turn))
    return writer


def rewind(folder: Path, turn: int) -> None:
    with (folder / "transcript.jsonl").open("a") as handle:
        handle.write(json.dumps({"type": "rewind", "turn": turn, "undone": [turn]}) + "\n")


def test_rewound_turns_leave_the_conversation(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    write_turns(folder, range(1, 4)).close()
    rewind(folder, 2)
    loaded = load_session(folder)
    assert [m.content for m in loaded.messages if m.role == "user"] == ["task 1"]
    assert len(loaded.messages) == 4 and loaded.turns == 3  # the next turn is 4
    assert any(r.type == "rewind" for r in loaded.records)  # nothing is lost from the file


def test_turns_after_a_rewind_stay(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    writer = write_turns(folder, range(1, 3))
    rewind(folder, 1)
    writer.emit(TurnStarted(turn=3, prompt="task 3"))
    writer.emit(MessageAdded(message=Message.user("task 3"), turn=3))
    writer.close()
    rewind(folder, 4)  # a rewind to a turn that never ran drops nothing
    loaded = load_session(folder)
    assert [m.content for m in loaded.messages] == ["task 3"] and loaded.turns == 3


def test_a_rewind_without_a_turn_number_is_ignored(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    write_turns(folder, range(1, 2)).close()
    with (folder / "transcript.jsonl").open("a") as handle:
        handle.write('{"type": "rewind", "turn": "two"}\n')
    assert len(load_session(folder).messages) == 4


def test_a_rewind_after_a_message_keeps_the_conversation_up_to_it(tmp_path: Path) -> None:
    """(`--resume-session-at`: `after` names a message by uuid; what follows it leaves the
    conversation, even in the middle of a turn, and later records stay.)"""
    folder = tmp_path / "s"
    writer = write_turns(folder, range(1, 3))
    writer.close()
    records = load_session(folder).records
    uuids = [r.uuid for r in records if r.type == "message"]  # type: ignore[union-attr]
    assert all(uuids) and len(set(uuids)) == len(uuids) == 8
    with (folder / "transcript.jsonl").open("a") as handle:
        handle.write(json.dumps({"type": "rewind", "turn": 2, "after": uuids[2]}) + "\n")  # turn 1's tool result
    loaded = load_session(folder)
    assert [m.content for m in loaded.messages] == ["task 1", "", "ok"] and loaded.turns == 2
    with (folder / "transcript.jsonl").open("a") as handle:
        handle.write(json.dumps({"type": "rewind", "turn": 9, "after": "not-a-message"}) + "\n")
    assert len(load_session(folder).messages) == 3  # a uuid no kept message has drops nothing
