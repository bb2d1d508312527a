"""Exports (jsonl, json, md; atif in test_atif.py) and the plain-text view of `sessions show`."""

from __future__ import annotations

import json

import pytest

from recursive_cli.core.events import FinishReason, TurnFinished
from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.core.values import parse
from recursive_cli.features.sessions.export import export_session, render_conversation
from recursive_cli.features.sessions.reader import load_session, repair_orphans, repair_record
from recursive_cli.features.sessions.writer import TRANSCRIPT_FILE

from .conftest import conversation, write_turn


@pytest.fixture
def loaded(new_session):
    writer = new_session("s1")
    write_turn(writer, conversation())
    writer.emit(TurnFinished(turn=1, finish_reason=FinishReason.COMPLETED, steps=2,
                             usage=Usage(input_tokens=320, output_tokens=42), cost_usd=0.0123))
    return load_session(writer.folder)


def test_jsonl_is_the_transcript_verbatim(loaded):
    assert export_session(loaded, "jsonl") == (loaded.folder / TRANSCRIPT_FILE).read_text()


def test_json_is_one_object_with_meta_and_messages(loaded):
    document = json.loads(export_session(loaded, "json"))
    assert document["meta"]["id"] == "s1" and document["meta"]["cost_usd"] == 0.0123
    assert [parse(Message, m) for m in document["messages"]] == conversation()


def test_markdown_has_the_prompt_tool_calls_results_and_answer(loaded):
    text = export_session(loaded, "md")
    assert text.startswith("# fix the failing test\n")
    assert "| model | gpt-test (scripted) |" in text and "| cost | $0.0123 |" in text
    assert "## Turn 1" in text and "fix the failing test\nin a.py" in text
    assert "**Tool call** `run_shell`" in text and '```json\n{\n  "command": "pytest -q"\n}\n```' in text
    assert "**Tool error** `run_shell`\n\n```\n1 failed\n```" in text
    assert text.rstrip().endswith("Fixed: f returns 2 now.")


def test_markdown_truncates_long_results_and_survives_backticks(new_session):
    writer = new_session("s2")
    call = ToolCall(id="c", name="read_file", arguments="{}")
    write_turn(writer, [Message.user("read"), Message(role="assistant", tool_calls=(call,)),
                        Message.tool_result(call, "```\n" + "y" * 5000)])
    text = export_session(load_session(writer.folder), "md")
    assert "````\n```\n" in text and "more characters)" in text and "y" * 5000 not in text


def test_exports_show_repairs_as_error_results(new_session):
    writer = new_session("s3")
    call = ToolCall(id="c", name="run_shell", arguments='{"command": "sleep 99"}')
    write_turn(writer, [Message.user("wait"), Message(role="assistant", tool_calls=(call,))])
    _, added = repair_orphans(load_session(writer.folder).messages)
    writer.write_record(repair_record(added[0], turn=1))
    loaded = load_session(writer.folder)
    assert "interrupted before completion; effects unknown" in export_session(loaded, "md")
    assert "← run_shell (error):" in render_conversation(loaded)


def test_unknown_format_is_refused(loaded):
    with pytest.raises(ValueError, match="unknown export format 'xml'"):
        export_session(loaded, "xml")


def test_render_conversation_is_readable_text(loaded):
    text = render_conversation(loaded)
    assert text.splitlines()[0].startswith("session s1 · run · gpt-test · running · 1 turn")
    assert "user: fix the failing test" in text and "assistant: Let me look." in text
    assert '  → run_shell {"command": "pytest -q"}' in text
    assert "  ← run_shell (error):\n    1 failed" in text
    assert "assistant: Fixed: f returns 2 now." in text
