"""Driver and feature events: one serialisation for the stream-json line and the session record."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from recursive_cli.core.event_models import CheckResult, Evaluation, GoalSummary
from recursive_cli.core.events import CheckpointFailed, CheckpointTaken, LoopWaiting, RunFinished, SkippedPath, Usage
from recursive_cli.features.sessions.meta import SessionMeta
from recursive_cli.features.sessions.writer import JsonlSessionWriter
from recursive_cli.sinks.claude_stream import ClaudeStreamSink


def _stream(*events: object) -> list[str]:
    """The stream-json lines of `events`, each with its `uuid` (checked, unique) taken out."""
    out = io.StringIO()
    sink = ClaudeStreamSink(out, "s1", whole_runs=True)
    for event in events:
        sink.emit(event)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    records = [json.loads(line) for line in lines]
    assert lines == [json.dumps(record, ensure_ascii=False, separators=(",", ":")) for record in records]
    uuids = [record.pop("uuid") for record in records]
    assert len(set(uuids)) == len(uuids) and all(isinstance(u, str) and u for u in uuids)
    return [json.dumps(record, ensure_ascii=False, separators=(",", ":")) for record in records]


def test_a_checkpoint_leaves_out_what_it_does_not_have() -> None:
    plain = CheckpointTaken(turn=1, phase="before", commit="abc")
    skipped = CheckpointTaken(turn=2, phase="after", commit="def", files_changed=3,
                              skipped=[SkippedPath(path="big.bin", reason="too large")],
                              skipped_count=7, shown="checkpoint: …")
    failed = CheckpointFailed(enabled=False, error="git not found", shown="warning: no git")
    assert _stream(plain, skipped, failed) == [
        ('{"type":"system","subtype":"checkpoint","turn":1,"phase":"before","commit":"abc",'
         '"session_id":"s1"}'),
        ('{"type":"system","subtype":"checkpoint","turn":2,"phase":"after","commit":"def",'
         '"files_changed":3,"skipped":[{"path":"big.bin","reason":"too large"}],'
         '"skipped_count":7,"session_id":"s1"}'),
        ('{"type":"system","subtype":"checkpoint","enabled":false,"error":"git not found",'
         '"session_id":"s1"}'),
    ]
    assert failed.text() == "warning: no git"


def test_the_session_records_the_same_fields_and_not_a_loop_wait(tmp_path: Path) -> None:
    meta = SessionMeta(id="s1", created="t", updated="t", workspace=str(tmp_path))
    with JsonlSessionWriter.create(tmp_path / "s1", meta) as writer:
        writer.emit(CheckpointTaken(turn=1, phase="before", commit="abc", shown="not recorded"))
        writer.emit(LoopWaiting(wakeup_due=None, running_jobs=["job-1"], countdown_to=None))
    lines = (tmp_path / "s1" / "transcript.jsonl").read_text().splitlines()
    record = json.loads(lines[-1])
    assert len(lines) == 2 and record.pop("time")
    assert record == {"type": "checkpoint", "turn": 1, "phase": "before", "commit": "abc"}


def test_the_result_line_carries_a_goal_summary_without_output_tails() -> None:
    check = CheckResult(command="pytest", exit_code=1, duration_s=0.5, output_tail="1 failed")
    goal = GoalSummary(status="not_met", until=None, checks=["pytest"], turns=1, max_turns=3,
                       reason="check `pytest` exit 1",
                       verdicts=[Evaluation(turn=1, achieved=False, checks=[check])])
    result = RunFinished(subtype="error_goal_not_met", is_error=True, exit_code=4, result="",
                         session_id="s1", num_turns=1, num_steps=2, duration_ms=10, usage=Usage(),
                         total_cost_usd=None, finish_reason="goal_not_met", error="not met",
                         goal=goal)
    (line,) = _stream(result)
    record = json.loads(line)
    assert list(record)[-1] == "goal" and record["errors"] == ["not met"]
    assert record["goal"]["verdicts"] == [{"turn": 1, "achieved": False, "judge": None, "checks": [
        {"command": "pytest", "exit_code": 1, "timed_out": False, "duration_s": 0.5, "passed": False}]}]
    plain = replace(result, goal=None)
    assert "goal" not in json.loads(_stream(plain)[0])
