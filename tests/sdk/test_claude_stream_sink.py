"""The schema_version 2 sink on its own: fed a run's events, it writes SPEC §4's lines."""

from __future__ import annotations

import io
import json

from recursive_cli.core.events import (
    MessageAdded,
    ModelRequest,
    PermissionDenied,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolStarted,
    TurnStarted,
)
from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.sinks.claude_stream import ClaudeStreamSink

from .shapes import check_line


def feed(sink: ClaudeStreamSink) -> None:
    call = ToolCall(id="call_1", name="run_shell", arguments='{"command": "ls"}')
    sink.emit(RunStarted(session_id="s1", cwd="/w", model="m", provider="openai", tools=["run_shell"],
                         permission_mode="auto"))
    sink.emit(TurnStarted(turn=1, prompt="go"))
    sink.emit(ModelRequest(step=1))
    sink.emit(TextDelta(text="let me look"))
    usage = Usage(input_tokens=100, output_tokens=7, cache_read_tokens=60)
    sink.emit(MessageAdded(message=Message(role="assistant", content="let me look", tool_calls=(call,),
                                           usage=usage), turn=1))
    sink.emit(ToolStarted(call=call, subject="ls"))
    sink.emit(PermissionDenied(tool="run_shell", subject="ls", reason="no", tool_use_id="call_1"))
    sink.emit(MessageAdded(message=Message.tool_result(call, "permission denied", True), turn=1))
    sink.emit(RunFinished(subtype="success", is_error=False, exit_code=0, result="ok", session_id="s1",
                          num_turns=1, num_steps=2, duration_ms=5, usage=usage, total_cost_usd=None,
                          finish_reason="completed", model_usage={"m": usage}))


def test_whole_run_lines() -> None:
    out = io.StringIO()
    feed(ClaudeStreamSink(out, "s1", model=lambda: "m", partial=True, whole_runs=True))

    records = [json.loads(line) for line in out.getvalue().splitlines()]
    for record in records:
        check_line(record)
    kinds = [r["type"] for r in records]
    assert kinds[0] == "system" and kinds[-1] == "result" and kinds.count("result") == 1
    assert "stream_event" in kinds and "user" in kinds
    result = records[-1]
    assert result["usage"] == {"input_tokens": 40, "cache_creation_input_tokens": 0,
                               "cache_read_input_tokens": 60, "output_tokens": 7}  # Claude's input_tokens: uncached
    assert result["permission_denials"] == [{"tool_name": "run_shell", "tool_use_id": "call_1",
                                             "tool_input": {"command": "ls"}}]
    assert result["num_turns"] == 2 and result["stop_reason"] == "tool_use"
    assert out.getvalue().count('"type":"result"') == 1  # compact: grep finds it


def test_json_mode_writes_only_the_result() -> None:
    out = io.StringIO()
    feed(ClaudeStreamSink(out, "s1", model=lambda: "m", stream=False, whole_runs=True))

    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["type"] == "result"
