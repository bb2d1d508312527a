"""Fixtures for the session tests: a store in the test's RECURSIVE_HOME and a sample conversation."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursive_cli.core.events import MessageAdded, TurnStarted
from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.features.sessions.meta import SessionMeta
from recursive_cli.features.sessions.store import SessionStore
from recursive_cli.features.sessions.writer import JsonlSessionWriter


@pytest.fixture
def store(isolated_home: Path) -> SessionStore:
    return SessionStore(isolated_home)


def make_meta(session_id: str = "s1", workspace: str = "/ws", **fields: object) -> SessionMeta:
    return SessionMeta(id=session_id, workspace=workspace, model="gpt-test", provider="scripted",
                       **fields)


def conversation() -> list[Message]:
    """A two-step turn: prompt, assistant with two tool calls, their results, final answer."""
    calls = (ToolCall(id="call_1", name="read_file", arguments='{"path": "a.py"}'),
             ToolCall(id="call_2", name="run_shell", arguments='{"command": "pytest -q"}'))
    return [
        Message.user("fix the failing test\nin a.py"),
        Message(role="assistant", content="Let me look.", tool_calls=calls,
                usage=Usage(input_tokens=120, output_tokens=30, cache_read_tokens=7)),
        Message.tool_result(calls[0], "1\tdef f():\n2\t    return 1"),
        Message.tool_result(calls[1], "1 failed", is_error=True),
        Message(role="assistant", content="Fixed: f returns 2 now.",
                usage=Usage(input_tokens=200, output_tokens=12)),
    ]


def write_turn(writer: JsonlSessionWriter, messages: list[Message], turn: int = 1) -> None:
    """Emit a turn's start and its messages (no turn end: as if the run was killed)."""
    writer.emit(TurnStarted(turn=turn, prompt=messages[0].content))
    for message in messages:
        writer.emit(MessageAdded(message=message, turn=turn))


@pytest.fixture
def new_session(store: SessionStore):
    """Create a session in the store and return its writer (closed at teardown)."""
    writers: list[JsonlSessionWriter] = []

    def create(session_id: str = "s1", **fields: object) -> JsonlSessionWriter:
        writer = JsonlSessionWriter.create(store.folder(session_id), make_meta(session_id, **fields))
        writers.append(writer)
        return writer

    yield create
    for writer in writers:
        writer.close()
