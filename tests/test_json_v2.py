"""`-o json` and `-o stream-json` of run / loop / goal / resume: SPEC §4, schema_version 2.

Every line a user's script reads is checked against the shape SPEC §4 gives its type (the
fields it requires, each of its JSON type), as the real CLI prints it with the scripted model:
compact lines (`"type":"result"` is greppable), a fresh `uuid` on each, `-o json` on one line,
and the fields Claude Code defines with Claude's meanings (`num_turns` counts model calls,
`usage.input_tokens` leaves the cached part out, `errors` is `[]` on success).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, write_script
from sdk.shapes import INIT, RESULT, USAGE, check_line, has

STR, INT, BOOL, LIST, DICT = str, int, bool, list, dict
NUMBER = (int, float)
NULLABLE_INT = (int, type(None))

# The `system` lines SPEC §4 lists beyond `init`, with the fields each carries.
SYSTEM_SHAPES: dict[str, dict[str, Any]] = {
    "api_retry": {"attempt": INT, "max_retries": INT, "retry_delay_ms": INT,
                  "error_status": NULLABLE_INT, "error": STR},
    "checkpoint": {"turn": INT, "phase": STR, "commit": STR},
    "compaction": {"turn": INT, "summary": STR, "replaced": INT, "kept": INT, "tokens_before": INT,
                   "tokens_after": INT},
    "wakeup_scheduled": {"delay_seconds": NUMBER, "due": STR, "prompt": STR, "reason": STR},
    "background_job_started": {"job_id": STR, "command": STR, "pid": INT, "output_file": STR},
    "background_job_finished": {"job_id": STR, "command": STR, "status": STR, "exit_code": NULLABLE_INT,
                                "duration_s": NUMBER, "output_file": STR},
    "goal_evaluation": {"turn": INT, "max_turns": INT, "achieved": BOOL, "checks": LIST, "reason": STR},
}
MODEL_USAGE = {"inputTokens": INT, "outputTokens": INT, "cacheReadInputTokens": INT,
               "cacheCreationInputTokens": INT, "webSearchRequests": INT, "costUSD": (float, int, type(None))}


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def scripted(tmp_path: Path, replies: list[dict[str, Any]]) -> list[str]:
    return ["--provider", "scripted", "--script", str(write_script(tmp_path / "script.json", replies))]


def checked(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line: one compact JSON object of its SPEC §4 shape, each with its own uuid."""
    records = []
    for line in stdout.splitlines():
        record = json.loads(line)
        assert line == json.dumps(record, ensure_ascii=False, separators=(",", ":")), line
        check_line(record)
        if record["type"] == "system" and record["subtype"] in SYSTEM_SHAPES:
            has(record, SYSTEM_SHAPES[record["subtype"]], record["subtype"])
        if record["type"] == "result":
            for usage in record["modelUsage"].values():
                has(usage, MODEL_USAGE, "modelUsage")
        records.append(record)
    uuids = [record["uuid"] for record in records]
    assert len(set(uuids)) == len(uuids), "a uuid used twice"
    return records


def subtypes(records: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(record["type"], record.get("subtype", "")) for record in records}


# -- the lines of a run ---------------------------------------------------------------------------


def test_a_multi_step_run_prints_every_line_in_its_shape(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello\n")
    replies = [{"text": "looking", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}],
                "usage": {"input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 60}},
               {"error": {"status": 503, "message": "busy"}},
               call("run_shell", command="echo hi"),
               {"text": "It says hello.", "usage": {"input_tokens": 50, "output_tokens": 3}}]
    proc = invoke("run", "what does a.txt say?", "-C", str(workspace), "-o", "stream-json",
                  "--session-id", "v2-run", *scripted(tmp_path, replies))
    assert proc.returncode == 0, proc.stderr
    records = checked(proc.stdout)
    assert {("system", "init"), ("system", "checkpoint"), ("system", "api_retry"), ("assistant", ""),
            ("user", ""), ("result", "success")} <= subtypes(records)
    init, result = records[0], records[-1]
    assert (init["type"], init["subtype"], init["schema_version"]) == ("system", "init", 2)
    has(init, INIT, "init")
    assert init["session_id"] == "v2-run" and init["cwd"] == str(workspace.resolve())
    assert init["permissionMode"] == "auto" and init["apiKeySource"] == "none" and "read_file" in init["tools"]
    assistant = next(r for r in records if r["type"] == "assistant")
    assert assistant["message"]["model"] == "scripted" and assistant["message"]["stop_reason"] == "tool_use"
    assert assistant["message"]["content"][1] == {"type": "tool_use", "id": "c1", "name": "read_file",
                                                  "input": {"path": "a.txt"}}
    assert assistant["message"]["usage"] == {"input_tokens": 40, "cache_creation_input_tokens": 0,
                                             "cache_read_input_tokens": 60, "output_tokens": 7}
    tool_result = next(r for r in records if r["type"] == "user")["message"]["content"][0]
    assert tool_result["tool_use_id"] == "c1" and "hello" in tool_result["content"]
    # The result: this command's three model calls (the failed attempt was retried, not counted).
    has(result, RESULT, "result")
    assert result["num_turns"] == 3 and result["errors"] == [] and result["is_error"] is False
    assert result["result"] == "It says hello." and result["stop_reason"] == "end_turn"
    assert result["usage"] == {"input_tokens": 40 + 10 + 50, "cache_creation_input_tokens": 0,
                               "cache_read_input_tokens": 60, "output_tokens": 7 + 5 + 3}
    assert result["modelUsage"]["scripted"]["inputTokens"] == 100
    assert result["modelUsage"]["scripted"]["outputTokens"] == 15
    assert result["permission_denials"] == [] and result["finish_reason"] == "completed"
    assert isinstance(result["duration_api_ms"], int) and 0 <= result["duration_api_ms"] <= result["duration_ms"]
    assert "num_steps" not in result and "error" not in result


def test_lines_are_compact_so_grep_finds_the_result(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("run", "x", "-C", str(workspace), "-o", "stream-json", "--no-session",
                  *scripted(tmp_path, [call("list_dir"), {"text": "done"}]))
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stdout.splitlines() if '"type":"result"' in line] == \
        [proc.stdout.splitlines()[-1]]
    assert '"type":"system","subtype":"init"' in proc.stdout.splitlines()[0]
    assert '": ' not in proc.stdout and '", "' not in proc.stdout  # no space after a separator


def test_json_is_the_result_line_alone_on_one_line(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("run", "x", "-C", str(workspace), "-o", "json",
                  *scripted(tmp_path, [call("list_dir"), {"text": "42"}]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1 and proc.stdout.endswith("}\n")
    (result,) = checked(proc.stdout)
    assert result["type"] == "result" and result["result"] == "42" and result["num_turns"] == 2
    assert result["schema_version"] == 2 and result["errors"] == []


# -- failures and their subtypes ------------------------------------------------------------------


def test_a_failure_lists_its_errors(tmp_path: Path, workspace: Path) -> None:
    replies = [call("read_file", path="missing.txt")] * 4 + [{"text": "never"}]
    proc = invoke("run", "x", "-C", str(workspace), "-o", "json", *scripted(tmp_path, replies))
    assert proc.returncode == 5
    (result,) = checked(proc.stdout)
    assert result["subtype"] == "error_stuck" and result["is_error"] is True
    (error,) = result["errors"]
    assert "repeated 3 times" in error


def test_a_denied_call_is_in_permission_denials(tmp_path: Path, workspace: Path) -> None:
    replies = [{"tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
               {"text": "I could not write the file."}]
    proc = invoke("run", "x", "-C", str(workspace), "--permission-mode", "read-only", "-o", "stream-json",
                  *scripted(tmp_path, replies))
    assert proc.returncode == 6, proc.stderr
    records = checked(proc.stdout)
    result = records[-1]
    assert result["permission_denials"] == [{"tool_name": "write_file", "tool_use_id": "w1",
                                             "tool_input": {"path": "a.txt", "content": "x"}}]
    assert result["subtype"] == "error_permission" and result["errors"]
    assert result["result"] == "I could not write the file."
    denied = next(r for r in records if r["type"] == "user")["message"]["content"][0]
    assert denied["tool_use_id"] == "w1" and denied["is_error"] is True and "permission denied" in denied["content"]
    assert not (workspace / "a.txt").exists()


def _budget_result(tmp_path: Path, workspace: Path, command: str, replies: list[dict[str, Any]],
                   *flags: str) -> dict[str, Any]:
    proc = invoke(command, "x", "-C", str(workspace), "-o", "json", *flags, *scripted(tmp_path, replies))
    assert proc.returncode == 3, proc.stderr
    (result,) = checked(proc.stdout)
    assert result["is_error"] is True and len(result["errors"]) == 1
    return result


def test_max_steps_is_error_max_turns(tmp_path: Path, workspace: Path) -> None:
    result = _budget_result(tmp_path, workspace, "run", [call("list_dir")] * 5, "--max-steps", "2")
    assert (result["subtype"], result["finish_reason"], result["num_turns"]) == ("error_max_turns", "max_steps", 2)
    assert "--max-steps" in result["errors"][0]


def test_max_cost_is_error_max_budget_usd(tmp_path: Path, workspace: Path) -> None:
    big = {"input_tokens": 1_000_000, "output_tokens": 0}  # $2.50 at gpt-4o's price
    result = _budget_result(tmp_path, workspace, "run", [{**call("list_dir"), "usage": big}, {"text": "never"}],
                            "-m", "gpt-4o", "--max-cost", "0.5")
    assert (result["subtype"], result["finish_reason"]) == ("error_max_budget_usd", "max_cost")
    assert result["total_cost_usd"] == pytest.approx(2.5)
    assert result["modelUsage"]["gpt-4o"]["costUSD"] == pytest.approx(2.5)
    assert "--max-cost" in result["errors"][0]


def test_max_duration_is_error_max_budget(tmp_path: Path, workspace: Path) -> None:
    replies = [call("run_shell", command="sleep 0.5"), {"text": "late"}]
    result = _budget_result(tmp_path, workspace, "run", replies, "--max-duration", "0.3s")
    assert (result["subtype"], result["finish_reason"]) == ("error_max_budget", "max_duration")


def test_max_iterations_is_error_max_budget(tmp_path: Path, workspace: Path) -> None:
    again = call("schedule_wakeup", delay_seconds=0.05, prompt="again")
    replies = [again, {"text": "one"}, again, {"text": "two"}, again, {"text": "three"}]
    result = _budget_result(tmp_path, workspace, "loop", replies, "--max-iterations", "2")
    assert (result["subtype"], result["finish_reason"]) == ("error_max_budget", "max_iterations")
    assert result["num_turns"] == 4  # two model calls in each of the two turns


def test_a_cut_off_answer_stops_for_max_tokens(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("run", "x", "-C", str(workspace), "-o", "json",
                  *scripted(tmp_path, [{"text": "The answer is", "stop": "length"}]))
    assert proc.returncode == 1
    (result,) = checked(proc.stdout)
    assert result["subtype"] == "error_during_execution" and result["stop_reason"] == "max_tokens"


# -- loop, goal and resume ------------------------------------------------------------------------


def test_loop_lines(tmp_path: Path, workspace: Path) -> None:
    replies = [{"tool_calls": [{"name": "run_background", "arguments": {"command": "exit 3"}},
                               {"name": "schedule_wakeup", "arguments": {"delay_seconds": 0.05, "prompt": "look",
                                                                         "reason": "check"}}]},
               {"text": "started"}, {"text": "the job failed"}, {"text": "woke up"}]
    proc = invoke("loop", "go", "-C", str(workspace), "-o", "stream-json", *scripted(tmp_path, replies))
    assert proc.returncode == 0, proc.stderr
    records = checked(proc.stdout)
    assert {("system", "wakeup_scheduled"), ("system", "background_job_started"),
            ("system", "background_job_finished"), ("system", "loop_iteration")} <= subtypes(records)
    assert [r["type"] for r in records].count("result") == 1 and records[-1]["type"] == "result"
    assert records[-1]["num_turns"] == 4 and {"run_background", "stop_loop"} <= set(records[0]["tools"])


def test_goal_lines_count_the_agents_calls_and_all_the_tokens(tmp_path: Path, workspace: Path) -> None:
    replies = [call("write_file", path="a", content="x"), {"text": "wrote a"},
               {"text": '{"achieved": true, "reason": "a exists"}', "usage": {"input_tokens": 1000, "output_tokens": 9}}]
    proc = invoke("goal", "make a", "--until", "a exists", "--check", "test -f a", "-C", str(workspace),
                  "-o", "stream-json", *scripted(tmp_path, replies))
    assert proc.returncode == 0, proc.stderr
    records = checked(proc.stdout)
    (evaluation,) = [r for r in records if r.get("subtype") == "goal_evaluation"]
    assert evaluation["achieved"] is True and evaluation["judge"]["reason"] == "a exists"
    result = records[-1]
    assert result["num_turns"] == 2  # the agent's model calls; the judge's is not a turn
    assert result["usage"]["input_tokens"] == 10 + 10 + 1000  # the judge's tokens are spent all the same
    assert result["modelUsage"]["scripted"]["inputTokens"] == 1020
    assert result["goal"]["status"] == "met" and result["goal"]["turns"] == 1


def test_compaction_line(tmp_path: Path, workspace: Path) -> None:
    def wake(n: int) -> dict[str, Any]:
        return call("schedule_wakeup", delay_seconds=0.05, prompt=f"turn {n}")

    replies = [wake(2), {"text": "t1"}, wake(3), {"text": "t2"},
               wake(4), {"text": "t3", "usage": {"input_tokens": 3_500, "output_tokens": 5}},
               {"text": "THE SUMMARY"}, {"text": "t4"}]
    proc = invoke("loop", "turn 1", "-C", str(workspace), "--max-context-tokens", "4000", "-o", "stream-json",
                  *scripted(tmp_path, replies))
    assert proc.returncode == 0, proc.stderr
    records = checked(proc.stdout)
    (compaction,) = [r for r in records if r.get("subtype") == "compaction"]
    assert compaction["summary"] == "THE SUMMARY"
    result = records[-1]
    assert result["num_turns"] == 7  # the summary call is not one of the agent's
    assert result["usage"]["input_tokens"] == 7 * 10 + 3_500  # but its tokens count


def test_resume_reports_this_command(tmp_path: Path, workspace: Path) -> None:
    usage = {"input_tokens": 100_000, "output_tokens": 0}  # $0.25 each at gpt-4o prices
    replies = [{**call("list_dir"), "usage": usage}, {"text": "a", "usage": usage}, {"text": "b", "usage": usage}]
    first = invoke("run", "x", "-C", str(workspace), "-m", "gpt-4o", "--session-id", "v2-res", "-o", "json",
                   *scripted(tmp_path, replies))
    assert first.returncode == 0, first.stderr
    proc = invoke("resume", "v2-res", "more", "-C", str(workspace), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    (result,) = checked(proc.stdout)
    assert result["session_id"] == "v2-res" and result["result"] == "b"
    assert result["num_turns"] == 1 and result["usage"]["input_tokens"] == 100_000  # this command's
    assert result["modelUsage"]["gpt-4o"]["costUSD"] == pytest.approx(0.25)
    assert result["total_cost_usd"] == pytest.approx(0.75)  # the session's, which --max-cost is checked against


def test_the_result_usage_has_claudes_four_counts(tmp_path: Path, workspace: Path) -> None:
    replies = [{"text": "ok", "usage": {"input_tokens": 500, "output_tokens": 2, "cache_read_tokens": 300,
                                        "cache_write_tokens": 150}}]
    proc = invoke("run", "x", "-C", str(workspace), "-o", "json", *scripted(tmp_path, replies))
    (result,) = checked(proc.stdout)
    has(result["usage"], USAGE, "usage")
    assert result["usage"] == {"input_tokens": 50, "cache_creation_input_tokens": 150,
                               "cache_read_input_tokens": 300, "output_tokens": 2}
