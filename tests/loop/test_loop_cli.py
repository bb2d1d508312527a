"""`recursive loop` end to end: scripted model, real background processes, real signals."""

from __future__ import annotations

import datetime
import signal
import time
from pathlib import Path

from clitools import host_pid, invoke, json_lines, wait_until

from .conftest import alive, call, loop_state, prompts, scripted, session_records, tools, wait_gone


def stamp(record: dict) -> float:
    return datetime.datetime.fromisoformat(record["time"]).timestamp()


def test_a_background_job_output_reaches_the_next_turn(tmp_path: Path, workspace: Path,
                                                        isolated_home: Path) -> None:
    args = scripted(tmp_path, [
        tools(call("run_background", command="echo hello-from-job; echo oops >&2; exit 3")),
        {"text": "started it"},
        {"text": "the job failed with 3"},
    ])
    proc = invoke("loop", "run the job", "-C", str(workspace), "--session-id", "j1",
                  "-o", "stream-json", *args)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    subtypes = [line.get("subtype") for line in lines if line["type"] == "system"]
    assert subtypes.index("background_job_started") < subtypes.index("background_job_finished")
    finished = next(line for line in lines if line.get("subtype") == "background_job_finished")
    assert finished["job_id"] == "job-1" and finished["exit_code"] == 3 and finished["status"] == "exited"
    iterations = [line for line in lines if line.get("subtype") == "loop_iteration"]
    assert [(i["iteration"], i["trigger"]) for i in iterations] == [(1, "start"), (2, "job")]
    assert lines[-1]["result"] == "the job failed with 3" and lines[-1]["num_turns"] == 3  # model calls
    report = prompts(session_records(isolated_home, "j1"))[1]
    assert "job-1" in report and "exit code 3" in report
    assert "hello-from-job" in report and "oops" in report  # stdout and stderr, in one file
    output = isolated_home / "sessions" / "j1" / "jobs" / "job-1.log"
    assert output.read_text() == "hello-from-job\noops\n"


def test_a_wakeup_runs_its_prompt_after_the_delay(tmp_path: Path, workspace: Path,
                                                  isolated_home: Path) -> None:
    args = scripted(tmp_path, [
        tools(call("schedule_wakeup", delay_seconds=0.3, prompt="check the build again",
                   reason="build in progress")),
        {"text": "sleeping"},
        {"text": "the build is green"},
    ])
    proc = invoke("loop", "watch the build", "-C", str(workspace), "--session-id", "w1",
                  "-o", "stream-json", *args)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    scheduled = next(line for line in lines if line.get("subtype") == "wakeup_scheduled")
    assert scheduled["delay_seconds"] == 0.3 and scheduled["reason"] == "build in progress"
    assert lines[-1]["result"] == "the build is green"
    records = session_records(isolated_home, "w1")
    assert prompts(records) == ["watch the build", "check the build again"]
    wakeup = next(r for r in records if r["type"] == "wakeup_scheduled")
    second = [r for r in records if r["type"] == "turn_start"][1]
    assert stamp(second) - stamp(wakeup) >= 0.25
    assert loop_state(isolated_home, "w1")["wakeup"] is None


def test_stop_loop_ends_at_once_and_kills_running_jobs(tmp_path: Path, workspace: Path,
                                                       isolated_home: Path) -> None:
    args = scripted(tmp_path, [
        tools(call("run_background", command="echo $$ > job.pid; exec sleep 60"),
              call("schedule_wakeup", delay_seconds=600, prompt="never", reason="later")),
        tools(call("run_shell", command="until [ -s job.pid ]; do sleep 0.01; done")),  # it has begun
        tools(call("stop_loop", reason="nothing left to do")),
        {"text": "done here"},
    ])
    started = time.monotonic()
    proc = invoke("loop", "go", "-C", str(workspace), "--session-id", "st", "-o", "json", *args)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 15
    (result,) = json_lines(proc.stdout)
    assert result["subtype"] == "success" and result["result"] == "done here"
    assert result["num_turns"] == 4  # model calls, all in the one turn
    assert prompts(session_records(isolated_home, "st")) == ["go"]
    assert wait_gone(host_pid(workspace / "job.pid"))
    state = loop_state(isolated_home, "st")
    assert state["wakeup"] is None and state["jobs"][0]["status"] == "stopped"


def test_a_job_writing_10_mb_reaches_the_agent_as_a_tail(tmp_path: Path, workspace: Path,
                                                         isolated_home: Path) -> None:
    command = "head -c 10000000 /dev/zero | tr '\\0' x; echo; echo LAST-LINE"
    args = scripted(tmp_path, [tools(call("run_background", command=command)),
                               {"text": "waiting"}, {"text": "saw it"}])
    proc = invoke("loop", "big output", "-C", str(workspace), "--session-id", "big", *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "saw it\n"
    output = isolated_home / "sessions" / "big" / "jobs" / "job-1.log"
    assert output.stat().st_size == 10_000_000 + len("\nLAST-LINE\n")
    report = prompts(session_records(isolated_home, "big"))[1]
    assert "exit code 0" in report and "LAST-LINE" in report
    assert "10,000,011 bytes" in report and len(report) < 6_000


def test_sigint_during_a_ten_minute_wakeup_exits_130_within_a_second(
        tmp_path: Path, workspace: Path, isolated_home: Path, live) -> None:
    args = scripted(tmp_path, [
        tools(call("schedule_wakeup", delay_seconds=600, prompt="look again", reason="ten minutes")),
        {"text": "see you in ten minutes"},
    ])
    cli = live("loop", "wait a while", "-C", str(workspace), "--session-id", "nap", *args)
    waiting = cli.wait_for("loop_waiting")
    assert waiting["running_jobs"] == [] and waiting["wakeup_due"]
    sent = cli.signal(signal.SIGINT)
    code = cli.finish()
    assert time.monotonic() - sent < 1.0
    assert code == 130
    result = cli.lines[-1]
    assert result["subtype"] == "interrupted" and result["finish_reason"] == "interrupted"
    meta_state = loop_state(isolated_home, "nap")
    assert meta_state["wakeup"]["prompt"] == "look again"  # kept for `resume`


def test_sigterm_during_a_job_wait_exits_143_and_kills_the_job(
        tmp_path: Path, workspace: Path, live) -> None:
    args = scripted(tmp_path, [
        tools(call("run_background", command="sleep 300 & echo $! > child.pid; wait")),
        {"text": "waiting for the job"},
    ])
    cli = live("loop", "go", "-C", str(workspace), *args)
    cli.wait_for("loop_waiting")
    wait_until(lambda: (workspace / "child.pid").exists())  # (the job has begun)
    sent = cli.signal(signal.SIGTERM)
    assert cli.finish() == 143
    assert time.monotonic() - sent < 1.0
    assert wait_gone(host_pid(workspace / "child.pid"))  # the job's own children too


def test_max_iterations_exits_3_and_kills_jobs(tmp_path: Path, workspace: Path) -> None:
    again = tools(call("schedule_wakeup", delay_seconds=0.1, prompt="again"))
    args = scripted(tmp_path, [
        tools(call("run_background", command="echo $$ > job.pid; exec sleep 60")),
        again, {"text": "one"}, again, {"text": "two"}, again, {"text": "three"},
    ])
    proc = invoke("loop", "go", "-C", str(workspace), "--max-iterations", "2", "-o", "json", *args)
    assert proc.returncode == 3, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["subtype"] == "error_max_budget" and result["finish_reason"] == "max_iterations"
    assert result["num_turns"] == 5 and "--max-iterations 2" in result["errors"][0]  # 3 + 2 calls: two turns
    assert wait_gone(host_pid(workspace / "job.pid"))


def test_max_duration_cuts_a_long_wakeup_short(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [tools(call("schedule_wakeup", delay_seconds=600, prompt="later")),
                               {"text": "sleeping"}])
    started = time.monotonic()
    proc = invoke("loop", "go", "-C", str(workspace), "--max-duration", "0.5s", "-o", "json", *args)
    assert proc.returncode == 3, proc.stderr
    assert time.monotonic() - started < 15
    (result,) = json_lines("".join(proc.stdout.split("\n")))
    assert result["finish_reason"] == "max_duration"


def test_nothing_pending_ends_the_loop_after_one_turn(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "all done already"}])
    proc = invoke("loop", "go", "-C", str(workspace), *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "all done already\n"
    assert "↻ loop iteration 1: start" in proc.stderr


def test_a_job_timeout_kills_it_and_says_so(tmp_path: Path, workspace: Path,
                                            isolated_home: Path) -> None:
    args = scripted(tmp_path, [
        tools(call("run_background", command="echo started; sleep 60", timeout_seconds=0.5)),
        {"text": "waiting"}, {"text": "it hung"},
    ])
    proc = invoke("loop", "go", "-C", str(workspace), "--session-id", "to", *args)
    assert proc.returncode == 0, proc.stderr
    report = prompts(session_records(isolated_home, "to"))[1]
    assert "timed out after 0.5 s" in report and "started" in report


def test_job_status_and_job_stop(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = scripted(tmp_path, [
        tools(call("run_background", command="echo working; echo $$ > job.pid; exec sleep 60")),
        tools(call("run_shell", command="until [ -s job.pid ]; do sleep 0.01; done")),  # it has begun
        tools(call("job_status", job_id="job-1")),
        tools(call("job_stop", job_id="job-1")),
        tools(call("job_status", job_id="job-9")),
        {"text": "stopped it"},
    ])
    proc = invoke("loop", "go", "-C", str(workspace), "--session-id", "js", *args)
    assert proc.returncode == 0, proc.stderr
    results = [r["message"] for r in session_records(isolated_home, "js")
               if r["type"] == "message" and r["message"]["role"] == "tool"]
    status, stopped, unknown = results[2], results[3], results[4]
    assert "job-1: running" in status["content"] and "working" in status["content"]
    assert "job-1: stopped" in stopped["content"]
    assert unknown["is_error"] and "known jobs: job-1" in unknown["content"]
    assert not alive(host_pid(workspace / "job.pid"))
    assert prompts(session_records(isolated_home, "js")) == ["go"]  # stopped: no report turn


def test_the_loop_tools_are_listed_and_obey_permissions(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [tools(call("run_background", command="touch made-it")),
                               {"text": "could not"}])
    proc = invoke("loop", "go", "-C", str(workspace), "--permission-mode", "accept-edits",
                  "-o", "stream-json", *args)
    lines = json_lines(proc.stdout)
    assert {"schedule_wakeup", "run_background", "job_status", "job_stop",
            "stop_loop"} <= set(lines[0]["tools"])
    assert [denial["tool_name"] for denial in lines[-1]["permission_denials"]] == ["run_background"]
    assert not (workspace / "made-it").exists()
