"""The start-up path's values (core/values.py): their JSON form, their reading back, and the
schemas written out so that a run needs no msgspec."""

from __future__ import annotations

import json

import pytest

from recursive_cli.core.events import CheckpointTaken, MessageAdded, notice_fields
from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.core.tool import args_schema
from recursive_cli.core.values import as_json, dumps, load, parse
from recursive_cli.features.checkpoints import tool_args
from recursive_cli.features.checkpoints.tools import checkpoint_tools
from recursive_cli.features.sessions.records import MessageRecord, dump_record, parse_record


def test_a_value_dumps_its_fields_in_order_without_its_hidden_ones() -> None:
    event = CheckpointTaken(turn=2, phase="after", commit="abc", files_changed=1, shown="the terminal's")
    assert dumps(event) == '{"type":"checkpoint","turn":2,"phase":"after","commit":"abc","files_changed":1,' \
                           '"skipped":null,"skipped_count":null}'
    assert notice_fields(event) == {"turn": 2, "phase": "after", "commit": "abc", "files_changed": 1}


def test_exclude_none_reaches_every_value_inside() -> None:
    message = Message(role="assistant", content="ünï", tool_calls=(ToolCall(id="c1", name="read_file"),),
                      usage=Usage(input_tokens=3))
    line = dump_record(MessageRecord(turn=1, message=message, time="t"))
    assert line == ('{"type":"message","turn":1,"message":{"role":"assistant","content":"ünï","tool_calls":'
                    '[{"id":"c1","name":"read_file","arguments":"{}"}],"is_error":false,"usage":{"input_tokens":3,'
                    '"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0}},"time":"t"}\n').encode()
    assert parse_record(line) == MessageRecord(turn=1, message=message, time="t")
    assert as_json(MessageAdded(message=message, turn=1))["message"]["tool_call_id"] is None


def test_reading_back_validates_with_pydantic_and_fails_as_a_value_error() -> None:
    assert parse(Usage, {"input_tokens": 2}) == Usage(input_tokens=2)
    assert load(ToolCall, json.dumps({"id": "1", "name": "x"})) == ToolCall(id="1", name="x")
    with pytest.raises(ValueError, match="input_tokens"):
        parse(Usage, {"input_tokens": "many"})


def test_the_checkpoint_tools_schemas_are_their_argument_classes() -> None:
    list_tool, diff_tool = checkpoint_tools()
    assert list_tool.spec().parameters == args_schema(tool_args.ListArgs)
    assert diff_tool.spec().parameters == args_schema(tool_args.DiffArgs)
