"""`sessions export --format atif`: the session as an ATIF trajectory that Harbor's own models
and validator accept (tests/harbortools.py runs them under Python 3.12), with what a reader of
the trajectory looks for: steps, tool calls and their results, tokens, cost, the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import invoke, write_script
from harbortools import assert_valid_atif

from recursive_cli import __version__
from recursive_cli.core.events import FinishReason, MessageAdded, TurnFinished
from recursive_cli.core.messages import Image, Message, ToolCall, Usage
from recursive_cli.core.values import as_json
from recursive_cli.features.sessions.atif import build_trajectory
from recursive_cli.features.sessions.reader import load_session
from recursive_cli.features.sessions.records import ExtraRecord, RepairRecord

from .conftest import write_turn

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _goal_session(tmp_path: Path, workspace: Path) -> None:
    """A goal run: two tool calls (one fails), an answer, a passing check and the judge's yes."""
    script = write_script(tmp_path / "s.json", [
        {"text": "Let me write it.", "tool_calls": [
            {"name": "run_shell", "arguments": {"command": "echo hi > f.txt; echo written"}},
            {"name": "read_file", "arguments": {"path": "missing.txt"}}]},
        {"text": "f.txt is written."},
        {"text": '{"achieved": true, "reason": "f.txt holds hi"}'}])
    done = invoke("goal", "make f.txt", "--until", "f.txt exists", "--check", "test -f f.txt",
                  "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "--session-id", "goal-1")
    assert done.returncode == 0, done.stderr


def test_a_goal_run_exports_as_a_trajectory_harbor_accepts(tmp_path: Path, workspace: Path) -> None:
    _goal_session(tmp_path, workspace)
    out = tmp_path / "trajectory.json"
    done = invoke("sessions", "export", "goal-1", "--format", "atif", "-o", str(out))
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert_valid_atif(out)
    document = json.loads(out.read_text())
    assert document["schema_version"] == "ATIF-v1.7" and document["session_id"] == "goal-1"
    assert document["agent"]["name"] == "recursive" and document["agent"]["model_name"] == "scripted"
    assert document["agent"]["version"] == __version__
    steps = document["steps"]
    assert [step["source"] for step in steps] == ["user", "agent", "agent", "system"]
    assert [step["step_id"] for step in steps] == [1, 2, 3, 4]
    assert steps[0]["message"] == "make f.txt"
    calls = steps[1]["tool_calls"]
    assert [(c["function_name"], c["arguments"]) for c in calls] == [
        ("run_shell", {"command": "echo hi > f.txt; echo written"}), ("read_file", {"path": "missing.txt"})]
    results = steps[1]["observation"]["results"]
    assert [r["source_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
    assert results[0]["content"].startswith("written") and "is_error" not in results[0]["extra"]
    assert results[1]["extra"]["is_error"] is True and "missing.txt" in results[1]["content"]
    assert steps[1]["metrics"]["prompt_tokens"] > 0 and steps[1]["llm_call_count"] == 1
    assert all(step["timestamp"] for step in steps)
    goal = steps[3]
    assert goal["message"].startswith("goal met after turn 1/10")
    check, judge = goal["observation"]["results"]
    assert check["extra"] == {"check": "test -f f.txt", "exit_code": 0, "passed": True,
                              "timed_out": False, "duration_s": check["extra"]["duration_s"]}
    assert judge["content"] == "f.txt holds hi" and judge["extra"]["goal_judge"] is True
    final = document["final_metrics"]
    agent_prompt = sum(step["metrics"]["prompt_tokens"] for step in steps[:3] if "metrics" in step)
    # The judge's request is in the total, and on its evaluation's step (no price: no cost).
    judged = goal["extra"]["judge_metrics"]  # (ATIF has `metrics` on agent steps only)
    assert judged["prompt_tokens"] == final["total_prompt_tokens"] - agent_prompt > 0
    assert goal["llm_call_count"] == 1 and "cost_usd" not in judged
    assert final["total_steps"] == 4 and final["extra"]["judge_requests"] == 1
    assert document["extra"]["final_answer"] == "f.txt is written."
    assert document["extra"]["finish_reason"] == "completed"


def test_the_judges_priced_usage_is_on_its_evaluation_step(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    """Two evaluations: the judge says no, then (asked twice: its first answer is no JSON) yes.
    Each one's step has that evaluation's tokens, requests and cost; a record from before the
    judge's usage was kept (no `usage`) still exports, without metrics."""
    usage = {"input_tokens": 1000, "output_tokens": 10}
    script = write_script(tmp_path / "s.json", [
        {"text": "first try", "usage": {"input_tokens": 5, "output_tokens": 1}},
        {"text": '{"achieved": false, "reason": "no f.txt"}', "usage": usage},
        {"text": "second try", "tool_calls": [{"name": "run_shell", "arguments": {"command": "touch f.txt"}}]},
        {"text": "done"},
        {"text": "it is there, I think", "usage": usage},
        {"text": '{"achieved": true, "reason": "f.txt exists"}', "usage": {"input_tokens": 2000, "output_tokens": 20}}])
    done = invoke("goal", "make f.txt", "--until", "f.txt exists", "-C", str(workspace), "-m", "gpt-4o",
                  "--provider", "scripted", "--script", str(script), "--session-id", "goal-p")
    assert done.returncode == 0, done.stderr
    transcript = isolated_home / "sessions" / "goal-p" / "transcript.jsonl"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    judged = [r["judge"] for r in records if r["type"] == "goal_evaluation"]
    assert [(j["requests"], j["usage"]["input_tokens"], j["usage"]["output_tokens"]) for j in judged] == [
        (1, 1000, 10), (2, 3000, 30)]
    assert judged[0]["cost_usd"] == pytest.approx(1000 * 2.5e-6 + 10 * 10e-6)  # gpt-4o's price

    out = tmp_path / "t.json"
    assert invoke("sessions", "export", "goal-p", "-f", "atif", "-o", str(out)).returncode == 0
    assert_valid_atif(out)
    steps = [step for step in json.loads(out.read_text())["steps"] if step["extra"].get("goal_evaluation")]
    metrics = [step["extra"]["judge_metrics"] for step in steps]
    assert [(m["prompt_tokens"], m["completion_tokens"], s["llm_call_count"]) for m, s in zip(metrics, steps)] == [
        (1000, 10, 1), (3000, 30, 2)]
    assert [m["cost_usd"] for m in metrics] == pytest.approx([j["cost_usd"] for j in judged])

    for record in records:  # as a session recorded before: the judge's verdict alone
        if record["type"] == "goal_evaluation":
            for key in ("usage", "cost_usd", "requests"):
                del record["judge"][key]
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert invoke("sessions", "export", "goal-p", "-f", "atif", "-o", str(out)).returncode == 0
    assert_valid_atif(out)
    old = [step for step in json.loads(out.read_text())["steps"] if step["extra"].get("goal_evaluation")]
    assert len(old) == 2 and not [s for s in old if "judge_metrics" in s["extra"] or "llm_call_count" in s]


def test_stdout_is_the_default_and_output_cannot_go_with_a_bundle(tmp_path: Path, workspace: Path) -> None:
    _goal_session(tmp_path, workspace)
    printed = invoke("sessions", "export", "goal-1", "-f", "atif")
    assert printed.returncode == 0
    assert json.loads(printed.stdout)["session_id"] == "goal-1"
    both = invoke("sessions", "export", "goal-1", "--bundle", str(tmp_path / "b"), "-o", str(tmp_path / "x"))
    assert both.returncode == 2 and "--bundle and --output cannot be used together" in both.stderr
    folder = invoke("sessions", "export", "goal-1", "-f", "atif", "-o", str(tmp_path))
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    md = tmp_path / "s.md"
    assert invoke("sessions", "export", "goal-1", "-f", "md", "-o", str(md)).returncode == 0
    assert md.read_text().startswith("# make f.txt")


def test_priced_usage_images_and_a_repaired_call(new_session, tmp_path: Path) -> None:
    """Cost per step from the price table, cached tokens, reasoning, a user image from a file,
    and a call that never got a result (killed) answered by its repair record."""
    picture = tmp_path / "shot.png"
    picture.write_bytes(b"png")
    writer = new_session("s-img")
    calls = (ToolCall(id="call_9", name="run_shell", arguments='{"command": "sleep 100"}'),)
    write_turn(writer, [
        Message.user("what is in the picture?", images=[Image(media_type="image/png", data=PNG,
                                                              source=str(picture))]),
        Message(role="assistant", content="", tool_calls=calls,
                usage=Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=400)),
    ])
    writer.write_record(RepairRecord(turn=1, tool_call_id="call_9", content="interrupted before completion"))
    writer.update_meta(model="gpt-4o", cost_usd=0.002)
    loaded = load_session(writer.folder)
    trajectory = build_trajectory(loaded)
    out = tmp_path / "t.json"
    out.write_text(trajectory.model_dump_json(exclude_none=True))
    assert_valid_atif(out)  # (the validator also checks that the image's file exists)
    user, agent = json.loads(out.read_text())["steps"]
    assert user["message"] == [{"type": "text", "text": "what is in the picture?"},
                               {"type": "image", "source": {"media_type": "image/png", "path": str(picture)}}]
    metrics = agent["metrics"]
    assert (metrics["prompt_tokens"], metrics["completion_tokens"], metrics["cached_tokens"]) == (1000, 100, 400)
    assert metrics["cost_usd"] == pytest.approx((600 * 2.5 + 400 * 1.25 + 100 * 10) / 1e6)
    [result] = agent["observation"]["results"]
    assert result["source_call_id"] == "call_9" and result["extra"]["repaired"] is True


def test_a_sub_conversation_is_an_embedded_subagent_trajectory(new_session, tmp_path: Path) -> None:
    """The records a subagent leaves (features/subagents: `task_started`, a `subagent_message` per
    message linked to the task call by `parent_tool_use_id`, `task_notification`) become a
    trajectory of its own in `subagent_trajectories`, referenced from that call's result."""
    writer = new_session("s-sub")
    task = ToolCall(id="toolu_task", name="task",
                    arguments='{"description": "count", "prompt": "count files", "subagent_type": "counter"}')
    write_turn(writer, [Message.user("how many files?"),
                        Message(role="assistant", content="", tool_calls=(task,),
                                usage=Usage(input_tokens=50, output_tokens=10))])
    link = {"parent_tool_use_id": "toolu_task", "agent_id": "a1", "subagent_type": "counter",
            "model": "claude-haiku-4-5"}
    writer.write_record(ExtraRecord(type="task_started", task_id="a1", tool_use_id="toolu_task",
                                    description="count", subagent_type="counter", prompt="count files",
                                    model="claude-haiku-4-5", time="2026-01-01T00:00:00+00:00"))
    ls = ToolCall(id="call_ls", name="list_dir", arguments="{}")
    for message in [Message.user("count files"),
                    Message(role="assistant", tool_calls=(ls,), usage=Usage(input_tokens=20, output_tokens=4)),
                    Message.tool_result(ls, "a.py\nb.py"),
                    Message(role="assistant", content="2 files", usage=Usage(input_tokens=30, output_tokens=3))]:
        writer.write_record(ExtraRecord(type="subagent_message", **link, message=as_json(message),
                                        time="2026-01-01T00:00:01+00:00"))
    writer.write_record(ExtraRecord(type="task_notification", task_id="a1", tool_use_id="toolu_task",
                                    status="completed", summary="2 files", finish_reason="completed",
                                    usage={"total_tokens": 57, "tool_uses": 1, "duration_ms": 5},
                                    time="2026-01-01T00:00:02+00:00"))
    for message in [Message.tool_result(task, "2 files"),
                    Message(role="assistant", content="There are 2 files.",
                            usage=Usage(input_tokens=70, output_tokens=6))]:
        writer.emit(MessageAdded(message=message, turn=1))
    writer.emit(TurnFinished(turn=1, finish_reason=FinishReason.COMPLETED, steps=4,
                             usage=Usage(input_tokens=170, output_tokens=23), cost_usd=None))
    out = tmp_path / "sub.json"
    out.write_text(build_trajectory(load_session(writer.folder)).model_dump_json(exclude_none=True))
    assert_valid_atif(out)
    document = json.loads(out.read_text())
    assert [step["source"] for step in document["steps"]] == ["user", "agent", "agent"]
    [result] = document["steps"][1]["observation"]["results"]
    assert result["content"] == "2 files"
    [ref] = result["subagent_trajectory_ref"]
    [sub] = document["subagent_trajectories"]
    assert ref["trajectory_id"] == sub["trajectory_id"] == "s-sub/toolu_task"
    assert sub["agent"]["model_name"] == "claude-haiku-4-5"
    assert sub["agent"]["extra"] == {"subagent_type": "counter", "description": "count", "agent_id": "a1"}
    assert [step["source"] for step in sub["steps"]] == ["user", "agent", "agent"]
    assert [step["extra"]["turn"] for step in sub["steps"]] == [1, 1, 1]  # the task call's turn
    assert sub["steps"][1]["observation"]["results"][0]["content"] == "a.py\nb.py"
    assert sub["steps"][1]["metrics"]["cost_usd"] == pytest.approx((20 * 1 + 4 * 5) / 1e6)  # haiku's price
    assert sub["final_metrics"]["total_prompt_tokens"] == 50
    assert sub["extra"]["status"] == "completed" and sub["extra"]["final_answer"] == "2 files"
    assert document["final_metrics"]["total_prompt_tokens"] == 170  # the subagent's included


def test_a_compaction_is_a_system_step_and_rewound_turns_are_marked(new_session, tmp_path: Path) -> None:
    writer = new_session("s-long")
    write_turn(writer, [Message.user("first"), Message(role="assistant", content="one")])
    writer.write_record(ExtraRecord(type="compaction", turn=2, summary="the user asked twice",
                                    replaced=2, kept=0, tokens_before=900, tokens_after=40,
                                    time="2026-01-01T00:00:00+00:00"))
    write_turn(writer, [Message.user("second"), Message(role="assistant", content="two")], turn=2)
    writer.write_record(ExtraRecord(type="rewind", turn=2, time="2026-01-01T00:00:05+00:00"))
    out = tmp_path / "long.json"
    out.write_text(build_trajectory(load_session(writer.folder)).model_dump_json(exclude_none=True))
    assert_valid_atif(out)
    steps = json.loads(out.read_text())["steps"]
    assert [step["source"] for step in steps] == ["user", "agent", "system", "user", "agent"]
    compaction = steps[2]
    assert compaction["message"].endswith(":\nthe user asked twice")
    assert compaction["extra"] == {"turn": 2, "compaction": True, "replaced": 2, "kept": 0,
                                   "tokens_before": 900, "tokens_after": 40, "rewound": True}
    assert [step["extra"].get("rewound", False) for step in steps] == [False, False, True, True, True]


def test_a_session_with_no_message_yet_is_still_a_valid_trajectory(new_session, tmp_path: Path) -> None:
    writer = new_session("s-empty")
    out = tmp_path / "empty.json"
    out.write_text(build_trajectory(load_session(writer.folder)).model_dump_json(exclude_none=True))
    assert_valid_atif(out)
    [step] = json.loads(out.read_text())["steps"]
    assert step["source"] == "system" and "no messages" in step["message"]


def test_a_real_subagent_run_exports_its_sub_conversation(tmp_path: Path, workspace: Path) -> None:
    """The same, from a `recursive run --agents` whose model calls the task tool: the records
    features/subagents writes are the ones the export reads."""
    (workspace / "app.py").write_text("print(1/0)\n", encoding="utf-8")
    agents = json.dumps({"reviewer": {"description": "Reviews code", "prompt": "You review code.",
                                      "tools": ["Read"]}})
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "task", "id": "call_t", "arguments": {
            "description": "review app", "prompt": "Review app.py.", "subagent_type": "reviewer"}}]},
        {"tool_calls": [{"name": "read_file", "id": "call_r", "arguments": {"path": "app.py"}}]},
        {"text": "app.py divides by zero."},
        {"text": "The reviewer found a division by zero."}])
    done = invoke("run", "review app.py", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "--agents", agents, "--session-id", "s-real-sub")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "real-sub.json"
    exported = invoke("sessions", "export", "s-real-sub", "--format", "atif", "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    assert_valid_atif(out)
    document = json.loads(out.read_text())
    assert document["extra"]["final_answer"] == "The reviewer found a division by zero."
    [sub] = document["subagent_trajectories"]
    assert sub["agent"]["extra"]["subagent_type"] == "reviewer"
    assert [step["source"] for step in sub["steps"]] == ["user", "agent", "agent"]
    assert sub["steps"][0]["message"] == "Review app.py."
    [read] = sub["steps"][1]["tool_calls"]
    assert (read["function_name"], read["arguments"]) == ("read_file", {"path": "app.py"})
    assert "1/0" in sub["steps"][1]["observation"]["results"][0]["content"]
    assert sub["extra"]["final_answer"] == "app.py divides by zero."
    [result] = [r for step in document["steps"] for r in (step.get("observation") or {}).get("results", [])]
    assert result["subagent_trajectory_ref"][0]["trajectory_id"] == sub["trajectory_id"]
