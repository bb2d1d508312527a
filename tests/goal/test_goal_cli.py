"""`recursive goal` end to end with the scripted provider: checks, judge, stops and exit codes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from clitools import host_pid, invoke, wait_gone

from recursive_cli.core.messages import Usage
from recursive_cli.core.pricing import cost_usd

from .goaltools import evaluations, goal, meta, records, result_of, say, user_prompts, verdict, write


def test_check_fails_then_passes(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    replies = [write("notes.txt"), say("wrote notes"), write("done.txt"), say("all done")]
    proc = goal(tmp_path, workspace, replies, "make done.txt", "--check",
                "echo looking for done.txt; test -f done.txt", "-o", "stream-json", "--session-id", "g-1")
    assert proc.returncode == 0, proc.stderr
    first, second = evaluations(proc.stdout)
    assert first["turn"] == 1 and first["achieved"] is False and first["judge"] is None
    (check,) = first["checks"]
    assert check["exit_code"] == 1 and check["passed"] is False and check["timed_out"] is False
    assert check["output_tail"] == "looking for done.txt"
    assert second["turn"] == 2 and second["achieved"] is True and second["checks"][0]["passed"]
    result = result_of(proc.stdout)
    assert result["subtype"] == "success" and result["result"] == "all done"
    assert result["goal"]["turns"] == 2 and result["finish_reason"] == "completed"
    assert result["num_turns"] == 4  # model calls: two per turn
    # The second turn's prompt carries the failing check's command, exit code and output.
    task, feedback = user_prompts(isolated_home, "g-1")
    assert task == "make done.txt"
    assert "`echo looking for done.txt; test -f done.txt` failed: exit 1" in feedback
    assert "looking for done.txt\n" in feedback and "turn 1 of 10" in feedback
    kept = [r for r in records(isolated_home, "g-1") if r["type"] == "goal_evaluation"]
    assert [r["achieved"] for r in kept] == [False, True]
    state = meta(isolated_home, "g-1")["state"]["goal"]
    assert state["status"] == "met" and state["turns"] == 2


def test_judge_says_no_then_yes(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    replies = [write("a.py", "x = 1\n"), say("first try"), verdict(False, "a.py has no docstring"),
               write("a.py", '"""Doc."""\nx = 1\n'), say("added the docstring"),
               verdict(True, "a.py starts with a docstring")]
    proc = goal(tmp_path, workspace, replies, "document a.py", "--until",
                "a.py has a module docstring", "--session-id", "g-2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "added the docstring\n"
    assert "✗ goal not met after turn 1/10: judge: a.py has no docstring" in proc.stderr
    assert "✓ goal met after turn 2/10: judge: a.py starts with a docstring" in proc.stderr
    feedback = user_prompts(isolated_home, "g-2")[1]
    assert "a.py has a module docstring" in feedback and "a.py has no docstring" in feedback


def test_judge_is_asked_only_when_every_check_passes(tmp_path: Path, workspace: Path) -> None:
    replies = [say("nothing yet"), write("ok"), say("made ok"), verdict(True, "ok exists")]
    proc = goal(tmp_path, workspace, replies, "make ok", "--until", "ok exists", "--check",
                "test -f ok", "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    first, second = evaluations(proc.stdout)
    assert first["judge"] is None and first["checks"][0]["passed"] is False
    assert second["judge"]["achieved"] is True and second["judge"]["reason"] == "ok exists"


def test_judge_answering_prose_counts_as_no(tmp_path: Path, workspace: Path) -> None:
    replies = [write("a"), say("done"), say("Yes, that looks achieved to me!"), say("I'd say so.")]
    proc = goal(tmp_path, workspace, replies, "make a", "--until", "a exists", "--max-turns", "1",
                "-o", "stream-json")
    assert proc.returncode == 4, proc.stderr
    (evaluation,) = evaluations(proc.stdout)
    judge = evaluation["judge"]
    assert judge["achieved"] is False and judge["valid"] is False
    assert "no JSON verdict in its answer" in judge["reason"] and "I'd say so." in judge["reason"]
    result = result_of(proc.stdout)
    assert result["usage"]["input_tokens"] == 40  # two turn steps, then the judge twice (one retry)


def test_max_turns_exits_4(tmp_path: Path, workspace: Path) -> None:
    replies = [write("a"), say("one"), write("b"), say("two"), write("c"), say("never")]
    proc = goal(tmp_path, workspace, replies, "impossible", "--check", "false", "--max-turns", "2",
                "-o", "json")
    assert proc.returncode == 4, proc.stderr
    result = result_of(proc.stdout)
    assert result["subtype"] == "error_goal_not_met" and result["is_error"] is True
    assert result["finish_reason"] == "goal_not_met" and result["goal"]["turns"] == 2
    assert result["num_turns"] == 4  # model calls: two per turn
    (error,) = result["errors"]
    assert "goal not met after 2 turns (--max-turns 2)" in error
    assert "check `false` exit 1" in error
    assert result["goal"]["status"] == "not_met" and len(result["goal"]["verdicts"]) == 2
    assert "error: goal not met after 2 turns" in proc.stderr


def test_stall_exits_4(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    replies = [say("thinking"), say("still thinking"), say("hmm"), write("late")]
    proc = goal(tmp_path, workspace, replies, "make x", "--check", "test -f x", "-o", "json",
                "--session-id", "g-stall")
    assert proc.returncode == 4, proc.stderr
    result = result_of(proc.stdout)
    assert result["subtype"] == "error_goal_not_met" and result["goal"]["turns"] == 3
    assert result["num_turns"] == 3  # one model call per turn
    assert result["errors"][0].startswith("stalled: 3 turns in a row made no tool call and changed no file")
    prompts = user_prompts(isolated_home, "g-stall")
    assert "Your last 2 turn(s) made no tool call" in prompts[2]


def test_tool_calls_reset_the_stall_count(tmp_path: Path, workspace: Path) -> None:
    replies = [say("a"), say("b"), call_ls(), say("c"), say("d"), say("e"), say("f")]
    proc = goal(tmp_path, workspace, replies, "make x", "--check", "test -f x", "-o", "json")
    assert proc.returncode == 4
    result = result_of(proc.stdout)
    assert result["goal"]["turns"] == 6 and result["errors"][0].startswith("stalled")
    assert result["num_turns"] == 7  # model calls: the turn with the tool call made two


def call_ls() -> dict:
    return {"tool_calls": [{"name": "list_dir", "arguments": {}}]}


def test_hanging_check_is_killed_by_its_timeout(tmp_path: Path, workspace: Path) -> None:
    check = "sleep 300 & echo $! > child.pid; echo started; wait"
    started = time.monotonic()
    proc = goal(tmp_path, workspace, [say("nothing to do")], "wait", "--check", check,
                "--check-timeout", "0.5s", "--max-turns", "1", "-o", "stream-json")
    assert proc.returncode == 4, proc.stderr
    assert time.monotonic() - started < 20
    (evaluation,) = evaluations(proc.stdout)
    (result,) = evaluation["checks"]
    assert result["timed_out"] is True and result["passed"] is False and result["exit_code"] is None
    assert result["output_tail"] == "started"
    assert "timed out after" in evaluation["reason"]
    child = host_pid(workspace / "child.pid")
    assert wait_gone(child, 3.0), "the check's background child survived its timeout"


def test_json_result_carries_the_verdicts(tmp_path: Path, workspace: Path) -> None:
    replies = [write("a"), say("one"), write("b"), say("two"), verdict(True, "both files exist")]
    proc = goal(tmp_path, workspace, replies, "make a and b", "--check", "test -f b", "--until",
                "a and b exist", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc.stdout)
    assert result["type"] == "result" and result["subtype"] == "success" and result["result"] == "two"
    summary = result["goal"]
    assert summary["status"] == "met" and summary["turns"] == 2 and summary["max_turns"] == 10
    assert summary["until"] == "a and b exist" and summary["checks"] == ["test -f b"]
    first, second = summary["verdicts"]
    assert first["turn"] == 1 and first["achieved"] is False and first["judge"] is None
    assert first["checks"] == [{"command": "test -f b", "exit_code": 1, "timed_out": False,
                                "duration_s": first["checks"][0]["duration_s"], "passed": False}]
    assert second["achieved"] is True
    assert second["judge"] == {"achieved": True, "reason": "both files exist", "model": "scripted",
                               "valid": True}


def test_judge_calls_count_toward_tokens_and_cost(tmp_path: Path, workspace: Path) -> None:
    turn_usage = {"input_tokens": 100, "output_tokens": 10}
    judge_usage = {"input_tokens": 5000, "output_tokens": 20}
    replies = [{"text": "done", "usage": turn_usage},
               {"text": '{"achieved": true, "reason": "ok"}', "usage": judge_usage}]
    proc = goal(tmp_path, workspace, replies, "x", "--until", "x", "-m", "gpt-4.1-mini", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc.stdout)
    assert result["usage"] == {"input_tokens": 5100, "output_tokens": 30, "cache_read_input_tokens": 0,
                               "cache_creation_input_tokens": 0}
    expected = cost_usd("gpt-4.1-mini", Usage(**turn_usage)) + cost_usd("gpt-4.1-mini", Usage(**judge_usage))
    assert result["total_cost_usd"] == pytest.approx(expected)
    # the stderr line counts what the JSON counts: the judge's tokens too, and no "session total"
    # on a session this command started
    text = goal(tmp_path, workspace, replies, "x", "--until", "x", "-m", "gpt-4.1-mini", script_name="again.json")
    assert text.returncode == 0, text.stderr
    assert text.stderr.splitlines()[-1].startswith(f"1 step · 5,100 in / 30 out tokens · ${expected:.4f} · ")


def test_judge_spending_ends_the_run_at_max_cost(tmp_path: Path, workspace: Path) -> None:
    replies = [{"text": "done", "usage": {"input_tokens": 10, "output_tokens": 1}},
               {"text": '{"achieved": false, "reason": "no"}',
                "usage": {"input_tokens": 1_000_000, "output_tokens": 0}},
               say("never asked")]
    proc = goal(tmp_path, workspace, replies, "x", "--until", "x", "-m", "gpt-4.1-mini",
                "--max-cost", "0.1", "-o", "json")
    assert proc.returncode == 3, proc.stderr
    result = result_of(proc.stdout)
    assert result["subtype"] == "error_max_budget_usd" and result["goal"]["turns"] == 2
    assert result["num_turns"] == 1  # model calls: the first turn's; the judge's are not counted
    assert result["total_cost_usd"] > 0.1


def test_usage_errors_exit_2(tmp_path: Path, workspace: Path) -> None:
    cases = [
        (["goal", "x"], "--until CONDITION, --check CMD"),
        (["goal", "--check", "true"], "empty prompt"),
        (["goal", "x", "--check", ""], "--check needs a command"),
        (["goal", "x", "--check", "true", "--check-timeout", "soon"], "--check-timeout"),
        (["goal", "x", "--check", "true", "--max-turns", "0"], "--max-turns"),
    ]
    for args, message in cases:
        proc = invoke(*args, "-C", str(workspace))
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)


def test_goal_help_lists_the_goal_options() -> None:
    proc = invoke("goal", "--help")
    assert proc.returncode == 0, proc.stderr
    for option in ("--until", "--check", "--judge-model", "--max-turns", "--check-timeout"):
        assert option in proc.stdout
