"""`recursive resume` of a loop stopped during a wakeup or a job: the schedule and jobs carry on."""

from __future__ import annotations

import datetime
import signal
import time
from pathlib import Path

import pytest
from clitools import host_pid, invoke, wait_until
from fakeserver import FakeLLMServer

from .conftest import alive, call, loop_state, prompts, scripted, session_records, tools, wait_gone

KEY = {"RECURSIVE_API_KEY": "sk-test"}


def test_resume_sleeps_out_a_wakeup_interrupted_by_sigint(tmp_path: Path, workspace: Path,
                                                           isolated_home: Path, live) -> None:
    args = scripted(tmp_path, [
        tools(call("schedule_wakeup", delay_seconds=1.5, prompt="look again", reason="soon")),
        {"text": "sleeping"},
        {"text": "looked again"},
    ])
    cli = live("loop", "go", "-C", str(workspace), "--session-id", "nap", *args)
    cli.wait_for("loop_waiting")
    cli.signal(signal.SIGINT)
    assert cli.finish() == 130
    due = loop_state(isolated_home, "nap")["wakeup"]["due"]
    assert due > time.time()  # interrupted well before the wakeup

    proc = invoke("resume", "nap")
    assert proc.returncode == 0, proc.stderr
    assert time.time() >= due
    assert proc.stdout == "looked again\n"
    records = session_records(isolated_home, "nap")
    assert prompts(records) == ["go", "look again"]  # no "Continue." first
    wakeup_turn = [r for r in records if r["type"] == "turn_start"][1]
    assert datetime.datetime.fromisoformat(wakeup_turn["time"]).timestamp() >= due - 0.01
    assert loop_state(isolated_home, "nap")["wakeup"] is None


def test_resume_reports_a_job_interrupted_by_sigint_as_lost(tmp_path: Path, workspace: Path,
                                                            isolated_home: Path, live) -> None:
    args = scripted(tmp_path, [
        tools(call("run_background", command="echo partial-output; echo $$ > job.pid; exec sleep 60")),
        {"text": "waiting for it"},
        {"text": "I will run it again"},
    ])
    cli = live("loop", "go", "-C", str(workspace), "--session-id", "lost", *args)
    cli.wait_for("loop_waiting")
    wait_until(lambda: (workspace / "job.pid").exists())  # (the job has begun)
    cli.signal(signal.SIGINT)
    assert cli.finish() == 130
    assert wait_gone(host_pid(workspace / "job.pid"))  # killed with the loop
    assert loop_state(isolated_home, "lost")["jobs"][0]["status"] == "lost"

    proc = invoke("resume", "lost")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "I will run it again\n"
    report = prompts(session_records(isolated_home, "lost"))[1]
    assert "job-1" in report and "was lost" in report and "partial-output" in report
    assert loop_state(isolated_home, "lost")["jobs"][0]["reported"] is True


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_resume_after_kill_9_kills_the_orphaned_job_and_reports_it_lost(
        workspace: Path, isolated_home: Path, live, sandbox: str) -> None:
    replies = [
        tools(call("run_background", command="echo partial-output; echo $$ > job.pid; exec sleep 60")),
        {"text": "waiting for it"},
        {"text": "it was lost; noted"},
    ]
    with FakeLLMServer(replies) as server:
        cli = live("loop", "go", "-C", str(workspace), "--session-id", "k9", "--sandbox", sandbox,
                   "--api-base", server.openai_base_url, env=KEY)
        cli.wait_for("loop_waiting")
        wait_until(lambda: (workspace / "job.pid").exists())  # (the job has begun)
        orphan = host_pid(workspace / "job.pid")
        cli.signal(signal.SIGKILL)
        assert cli.finish() == -signal.SIGKILL
        if sandbox == "off":
            assert alive(orphan)  # unconfined, the job outlives its supervisor...
        else:
            assert wait_gone(orphan)  # in the sandbox it dies with it
        assert loop_state(isolated_home, "k9")["jobs"][0]["status"] == "running"

        proc = invoke("resume", "k9", env=KEY)
        assert proc.returncode == 0, proc.stderr
        assert wait_gone(orphan)  # ...until the resume recognises and kills it
        assert proc.stdout == "it was lost; noted\n"
        last = server.requests[-1].body["messages"]
    assert last[0]["role"] == "system"
    assert "was lost" in last[-1]["content"] and "partial-output" in last[-1]["content"]
    calls = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert calls == [m["tool_call_id"] for m in last if m["role"] == "tool"]
    finished = [r for r in session_records(isolated_home, "k9") if r["type"] == "background_job_finished"]
    assert [r["status"] for r in finished] == ["lost"]


def test_resume_with_a_prompt_runs_it_before_the_pending_wakeup(tmp_path: Path, workspace: Path,
                                                                isolated_home: Path, live) -> None:
    args = scripted(tmp_path, [
        tools(call("schedule_wakeup", delay_seconds=1.0, prompt="scheduled look")),
        {"text": "sleeping"},
        {"text": "answered the user"},
        {"text": "did the scheduled look"},
    ])
    cli = live("loop", "go", "-C", str(workspace), "--session-id", "pr", *args)
    cli.wait_for("loop_waiting")
    cli.signal(signal.SIGINT)
    assert cli.finish() == 130
    proc = invoke("resume", "pr", "a question from the user")
    assert proc.returncode == 0, proc.stderr
    assert prompts(session_records(isolated_home, "pr")) == [
        "go", "a question from the user", "scheduled look"]
