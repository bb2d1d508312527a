"""Detached sessions through the CLI with real processes: `--bg`, `agents`, `logs -f`, `queue`,
`stop`, and `resume` after a `kill -9` (issue 31)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clitools import require, run_cli, wait_until, write_script
from fakeserver import FakeLLMServer


@pytest.fixture(autouse=True)
def no_session_left_running(isolated_home: Path) -> Iterator[None]:
    """A failed test must not leave a detached session behind: each one still running is killed."""
    yield
    for lock in (isolated_home / "sessions").glob("*/lock"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(json.loads(lock.read_text())["pid"]), signal.SIGKILL)


UNTIL_GO = "touch waiting; while [ ! -e go ]; do sleep 0.05; done"  # a step that ends when the test says


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_shell", "arguments": {"command": command}}]}


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def start_bg(tmp_path: Path, workspace: Path, mode: str, replies: list[dict[str, Any]],
             *extra: str) -> str:
    """Start a detached session on the scripted provider; its id."""
    script = write_script(tmp_path / f"script-{time.monotonic_ns()}.json", replies)
    began = time.monotonic()
    proc = run_cli(mode, "--bg", "--provider", "scripted", "--script", str(script), "-C", str(workspace),
                   "--sandbox", "off", *extra, "the task")
    took = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    session_id = proc.stdout.strip()
    assert proc.stdout == session_id + "\n" and session_id
    assert took < 8, took  # (it did not wait for the session; the machine may be loaded)
    return session_id


def folder(home: Path, session_id: str) -> Path:
    return home / "sessions" / session_id


def meta(home: Path, session_id: str) -> dict[str, Any]:
    return json.loads((folder(home, session_id) / "meta.json").read_text())


def records(home: Path, session_id: str) -> list[dict[str, Any]]:
    lines = (folder(home, session_id) / "transcript.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def user_texts(home: Path, session_id: str) -> list[str]:
    return [r["message"]["content"] for r in records(home, session_id)
            if r["type"] == "message" and r["message"]["role"] == "user"]


def owner_pid(home: Path, session_id: str) -> int:
    return int(json.loads((folder(home, session_id) / "lock").read_text())["pid"])


def running(home: Path, session_id: str) -> bool:
    return (folder(home, session_id) / "lock").exists()


def test_bg_returns_at_once_the_session_finishes_alone_and_logs_follows_it(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "run", [shell(f"{UNTIL_GO}; echo hi > out.txt"),
                                                      {"text": "all done"}])
    assert not (workspace / "out.txt").exists()  # returned while the session works
    listed = run_cli("agents", "--json", "-C", str(workspace))
    assert listed.returncode == 0, listed.stderr
    [agent] = json.loads(listed.stdout)
    assert agent["id"] == session_id and agent["mode"] == "run"
    assert agent["pid"] == owner_pid(isolated_home, session_id) != os.getpid()
    table = run_cli("agents", "-C", str(workspace))
    assert session_id in table.stdout and "pid" in table.stdout.splitlines()[0]

    (workspace / "go").touch()
    followed = run_cli("logs", session_id, "-f")
    assert followed.returncode == 0, followed.stderr
    assert "run_shell" in followed.stdout and followed.stdout.endswith("all done\n")
    assert (workspace / "out.txt").read_text() == "hi\n"
    assert meta(isolated_home, session_id)["status"] == "completed"
    assert json.loads(run_cli("agents", "--json", "-C", str(workspace)).stdout) == []

    stream = run_cli("logs", session_id, "-o", "stream-json")
    lines = [json.loads(line) for line in stream.stdout.splitlines()]
    assert lines[0]["subtype"] == "init" and lines[-1]["type"] == "result"
    assert lines[-1]["result"] == "all done" and lines[-1]["session_id"] == session_id


def test_logs_f_ends_with_the_sessions_exit_code(tmp_path: Path, workspace: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "run",
                          [shell("sleep 1"), {"error": {"status": 400, "message": "bad request"}}])
    followed = run_cli("logs", session_id, "-f")
    assert followed.returncode == 1
    assert "bad request" in followed.stdout


def test_queue_into_a_waiting_loop_reaches_the_models_next_request(
        workspace: Path, isolated_home: Path) -> None:
    replies = [tool("schedule_wakeup", delay_seconds=600, prompt="much later"), {"text": "waiting"},
               tool("stop_loop", reason="done"), {"text": "got your message"}]
    with FakeLLMServer(replies) as server:
        proc = run_cli("loop", "--bg", "--api-base", server.openai_base_url, "-m", "fake-model",
                       "-C", str(workspace), "--sandbox", "off", "watch it",
                       env={"RECURSIVE_API_KEY": "sk-test"})
        assert proc.returncode == 0, proc.stderr
        session_id = proc.stdout.strip()
        wait_until(lambda: any(r["type"] == "wakeup_scheduled" for r in records(isolated_home, session_id))
                   and len(server.requests) == 2)
        time.sleep(0.3)  # (the loop is waiting for its wakeup, 10 minutes away)
        queued = run_cli("queue", session_id, "please look at the docs too")
        assert queued.returncode == 0, queued.stderr
        assert "next turn" in queued.stderr
        followed = run_cli("logs", session_id, "-f", timeout=30)
        assert followed.returncode == 0, followed.stderr
        assert followed.stdout.endswith("got your message\n")
        body = server.requests[2].body
    assert body["messages"][-1] == {"role": "user", "content": "please look at the docs too"}
    assert user_texts(isolated_home, session_id).count("please look at the docs too") == 1
    assert list((folder(isolated_home, session_id) / "queue").iterdir()) == []


def test_kill_9_then_queue_then_resume_delivers_exactly_once(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "run", [shell("sleep 30"), {"text": "answer to the queued one"},
                                                      {"text": "later answer"}])
    wait_until(lambda: any(r["type"] == "message" and r["message"].get("tool_calls")
                           for r in records(isolated_home, session_id)))
    os.kill(owner_pid(isolated_home, session_id), signal.SIGKILL)
    wait_until(lambda: run_cli("agents", "--json", "-C", str(workspace)).stdout.strip() == "[]")
    queued = run_cli("queue", session_id, input="please also X\n")
    assert queued.returncode == 0, queued.stderr
    assert f"recursive resume {session_id}" in queued.stderr  # not running: resume delivers it

    resumed = run_cli("resume", session_id, "--no-stdin")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "answer to the queued one\n"
    again = run_cli("resume", session_id, "go on", "--no-stdin")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "later answer\n"
    assert user_texts(isolated_home, session_id).count("please also X\n") == 1
    delivered = [r for r in records(isolated_home, session_id) if r["type"] == "queue_delivered"]
    assert [r["message"] for r in delivered] == ["please also X\n"]


def test_a_message_claimed_by_a_killed_process_is_delivered_once(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "run", [{"text": "first"}, {"text": "second"},
                                                      {"text": "third"}])
    assert run_cli("logs", session_id, "-f").returncode == 0
    queue = folder(isolated_home, session_id) / "queue"
    message_id = run_cli("queue", session_id, "claimed then killed").stdout.strip()
    (queue / f"{message_id}.msg").rename(queue / f"{message_id}.claimed")  # killed right after its claim
    first = run_cli("resume", session_id, "--no-stdin")
    assert first.returncode == 0 and first.stdout == "second\n"
    # killed after the delivery and its user message were recorded, before the file was deleted
    (queue / f"{message_id}.claimed").write_text("claimed then killed")
    second = run_cli("resume", session_id, "--no-stdin")
    assert second.returncode == 0 and second.stdout == "third\n"
    assert user_texts(isolated_home, session_id).count("claimed then killed") == 1
    assert list(queue.iterdir()) == []


def test_stop_ends_at_the_next_step_interrupted_and_resume_continues(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "run",
                          [shell(f"{UNTIL_GO}; echo one > first.txt"), shell("echo two > second.txt"),
                           {"text": "finished"}])
    wait_until(lambda: (workspace / "waiting").exists())
    stopping = subprocess.Popen([sys.executable, "-m", "recursive_cli", "stop", session_id],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = folder(isolated_home, session_id) / "stderr.log"
    wait_until(lambda: "stopping at the next step boundary" in log.read_text(), proc=stopping)
    (workspace / "go").touch()  # the step in flight ends now
    _, stderr = stopping.communicate(timeout=30)
    assert stopping.returncode == 0, stderr
    assert not running(isolated_home, session_id)
    saved = meta(isolated_home, session_id)
    assert (saved["status"], saved["exit_code"]) == ("interrupted", 143)
    assert (workspace / "first.txt").read_text() == "one\n"  # the running step finished...
    assert not (workspace / "second.txt").exists()  # ...and no other began
    assert run_cli("logs", session_id, "-f").returncode == 143
    assert run_cli("stop", session_id).returncode == 1  # not running any more

    resumed = run_cli("resume", session_id, "--no-stdin")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "finished\n"
    assert (workspace / "second.txt").read_text() == "two\n"


def test_stop_now_kills_the_running_tool(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "run", [shell("sleep 60"), {"text": "never"}])
    wait_until(lambda: any(r["type"] == "message" and r["message"].get("tool_calls")
                           for r in records(isolated_home, session_id)))
    began = time.monotonic()
    assert run_cli("stop", session_id, "--now").returncode == 0
    assert time.monotonic() - began < 20
    assert meta(isolated_home, session_id)["exit_code"] == 143
    results = [r["message"]["content"] for r in records(isolated_home, session_id)
               if r["type"] == "message" and r["message"]["role"] == "tool"]
    assert results and "interrupted" in results[-1]


WAITING_LOOP = [tool("schedule_wakeup", delay_seconds=600, prompt="much later"), {"text": "waiting"},
                {"text": "got it"}]


def test_attach_queues_what_is_typed_and_slash_stop_stops(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "loop", WAITING_LOOP)
    wait_until(lambda: any(r["type"] == "wakeup_scheduled" for r in records(isolated_home, session_id)))
    attached = subprocess.Popen([sys.executable, "-m", "recursive_cli", "attach", session_id],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert attached.stdin is not None
    attached.stdin.write("a word from outside\n")
    attached.stdin.flush()
    wait_until(lambda: "a word from outside" in user_texts(isolated_home, session_id), proc=attached)
    attached.stdin.write("/stop\n")
    attached.stdin.flush()
    stdout, stderr = attached.communicate(timeout=30)
    assert attached.returncode == 143, stderr
    assert "Ctrl-C to detach" in stderr and "got it" in stdout
    assert meta(isolated_home, session_id)["status"] == "interrupted"


def test_ctrl_c_detaches_and_says_so(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    pexpect = require("pexpect")
    session_id = start_bg(tmp_path, workspace, "loop", WAITING_LOOP)
    child = pexpect.spawn(sys.executable, ["-m", "recursive_cli", "attach", session_id], encoding="utf-8",
                          timeout=20, env=dict(os.environ))
    child.expect("Ctrl-C to detach")
    child.expect("waiting")
    child.sendintr()
    child.expect("detached from session")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert running(isolated_home, session_id)  # the session goes on


def test_bg_refused_in_the_foreground_leaves_no_session(tmp_path: Path, workspace: Path,
                                                        isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "never"}])
    common = ("--provider", "scripted", "--script", str(script), "-C", str(workspace))
    unpriced = run_cli("run", "--bg", *common, "--max-cost", "1", "hi")
    assert (unpriced.returncode, unpriced.stdout) == (2, "")
    assert unpriced.stderr.startswith("error: --max-cost 1 cannot be enforced")
    nowhere = run_cli("run", "--bg", "--no-session", *common, "hi")
    assert (nowhere.returncode, nowhere.stdout) == (2, "")
    assert "--no-session" in nowhere.stderr
    assert not list((isolated_home / "sessions").glob("*"))


def test_queue_into_a_run_mid_turn_is_taken_when_the_turn_ends(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "run", [shell(UNTIL_GO), {"text": "first answer"},
                                                      {"text": "answer to the queued one"}])
    wait_until(lambda: (workspace / "waiting").exists())
    assert run_cli("queue", session_id, "and then this").returncode == 0
    (workspace / "go").touch()
    followed = run_cli("logs", session_id, "-f")
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.endswith("answer to the queued one\n")
    assert user_texts(isolated_home, session_id) == ["the task", "and then this"]
    elsewhere = run_cli("agents", "--all-workspaces", "--json", "-C", str(tmp_path))
    assert json.loads(elsewhere.stdout) == []


def test_goal_bg_then_resume_bg_hands_the_lock_to_the_detached_process(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    session_id = start_bg(tmp_path, workspace, "goal", [tool("write_file", path="g.txt", content="x"),
                                                       {"text": "made it"}, shell(UNTIL_GO),
                                                       {"text": "resumed fine"}],
                          "--check", "test -e g.txt")
    assert run_cli("logs", session_id, "-f").returncode == 0
    again = run_cli("resume", "--bg", session_id, "more", "--no-stdin")
    assert (again.returncode, again.stdout) == (0, session_id + "\n"), again.stderr
    wait_until(lambda: (workspace / "waiting").exists())
    [agent] = json.loads(run_cli("agents", "--json", "-C", str(workspace)).stdout)
    assert (agent["id"], agent["mode"]) == (session_id, "goal")
    assert agent["pid"] == owner_pid(isolated_home, session_id)
    assert os.getsid(agent["pid"]) == agent["pid"]  # a process session of its own
    (workspace / "go").touch()
    followed = run_cli("logs", session_id, "-f")
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.endswith("made it\nresumed fine\n")


def test_print_mode_bg(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [shell("echo hi"), {"text": "headless done"}])
    proc = run_cli("-p", "--bg", "--provider", "scripted", "--script", str(script), "-C", str(workspace),
                   "--output-format", "stream-json", "hello")
    assert proc.returncode == 0, proc.stderr
    session_id = proc.stdout.strip()
    followed = run_cli("logs", session_id, "-f", "-o", "stream-json")
    assert followed.returncode == 0, followed.stderr
    assert json.loads(followed.stdout.splitlines()[-1])["result"] == "headless done"
    refused = run_cli("-p", "--bg", "--no-session", "--provider", "scripted", "--script", str(script), "hi")
    assert refused.returncode == 2 and "--no-session" in refused.stderr
