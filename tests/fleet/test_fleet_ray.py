"""`recursive fleet` on a real local Ray (`ray.init(num_cpus=2)` in this process: the package's
`local_ray`) with the scripted provider (issue 19): six tasks in run and goal mode, in folders and in
clones of a git URL at a ref; results, bundles and sessions complete; a task whose process is
SIGKILLed mid-run is retried and resumes its session; the fleet's --max-cost stops new tasks;
`fleet resume` runs again only what did not succeed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from clitools import host_pid, invoke, json_lines

from .fleettools import bare_repo, by_id, git, results, say, script, shell, tasks_file, tool_calls, transcript

# The Ray of tests/fleet/conftest.py, started once: under pytest-xdist every module that uses it
# sits on the one worker that starts it.
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.usefixtures("local_ray")]


def fleet(tmp_path: Path, *args: str) -> Any:
    return invoke("fleet", *args, cwd=tmp_path, env={"COLUMNS": "150"})


def folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


def test_six_tasks_in_folders_and_git_clones(tmp_path: Path, isolated_home: Path) -> None:
    url = bare_repo(tmp_path)
    scripts = tmp_path / "scripts"
    tasks = [
        {"id": "write", "prompt": "write a.txt", "workspace": "ws-write",
         "script": script(scripts, "write", [shell("echo a > a.txt"), say("wrote a.txt")])},
        {"id": "goal-1", "prompt": "make b.txt", "workspace": "ws-goal-1", "checks": ["test -f b.txt"],
         "script": script(scripts, "goal-1", [shell("echo b > b.txt"), say("made b.txt")])},
        {"id": "goal-2", "prompt": "make c.txt", "workspace": "ws-goal-2", "mode": "goal", "checks": ["test -f c.txt"],
         "script": script(scripts, "goal-2", [say("thinking"), shell("echo c > c.txt"), say("made c.txt")])},
        {"id": "tag", "prompt": "which version?", "workspace": url, "ref": "v1", "checks": ["grep -qx one version.txt"],
         "script": script(scripts, "tag", [shell("cat version.txt"), say("one")])},
        {"id": "branch", "prompt": "finish the feature", "workspace": url, "ref": "feature",
         "checks": ["test -f feature.txt", "test -f done.txt"],
         "script": script(scripts, "branch", [shell("echo ok > done.txt"), say("done")])},
        {"id": "hopeless", "prompt": "make fixed.txt", "workspace": "ws-hopeless", "checks": ["test -f fixed.txt"],
         "max_turns": 1, "script": script(scripts, "hopeless", [say("I cannot"), say("fixed now")])},
    ]
    for task in tasks:
        if not task["workspace"].startswith("file:"):
            folder(tmp_path, task["workspace"])
    tasks_file(tmp_path / "tasks.jsonl", tasks)
    proc = fleet(tmp_path, "run", "tasks.jsonl", "--provider", "scripted", "--results", "out", "-o", "stream-json")
    assert proc.returncode == 4, proc.stderr  # the worst outcome: a goal not met
    out = tmp_path / "out"

    lines = results(out)
    assert len(lines) == 6
    outcome = by_id(lines)
    assert {k: v["subtype"] for k, v in outcome.items()} == {
        "write": "success", "goal-1": "success", "goal-2": "success", "tag": "success", "branch": "success",
        "hopeless": "error_goal_not_met"}
    assert outcome["hopeless"]["exit_code"] == 4 and outcome["write"]["exit_code"] == 0
    assert outcome["write"]["mode"] == "run" and outcome["goal-1"]["mode"] == "goal"
    assert outcome["goal-2"]["turns"] == 2 and outcome["goal-2"]["steps"] == 3
    assert outcome["write"]["result"] == "wrote a.txt" and outcome["write"]["usage"]["input_tokens"] == 20
    for line in lines:
        assert line["attempts"] == 1 and line["duration_ms"] > 0 and line["errors"] == [] or line["id"] == "hopeless"
        session = line["session_id"]
        assert (isolated_home / "sessions" / session / "transcript.jsonl").is_file()
        bundle = Path(line["bundle"])
        assert bundle == out / "sessions" / f"{session}.bundle"
        with tarfile.open(bundle) as tar:
            manifest = json.load(tar.extractfile("recursive-session/manifest.json"))  # type: ignore[arg-type]
        assert manifest["session_id"] == session and "transcript.jsonl" in manifest["files"]
        assert manifest["checkpoints"] is not None  # the session's checkpoints travel with it
    assert (tmp_path / "ws-write" / "a.txt").read_text() == "a\n"
    assert (tmp_path / "ws-goal-2" / "c.txt").is_file()

    # the git tasks ran in their own fresh clones, at their refs; the bare repository is untouched
    tag_ws, branch_ws = Path(outcome["tag"]["workspace"]), Path(outcome["branch"]["workspace"])
    assert tag_ws != branch_ws and (tag_ws / ".git").is_dir()
    assert (tag_ws / "version.txt").read_text() == "one\n" and not (tag_ws / "feature.txt").exists()
    assert (branch_ws / "done.txt").is_file() and (branch_ws / "version.txt").read_text() == "one\n"
    assert "done.txt" in git("status", "--porcelain", cwd=branch_ws)
    assert git("--git-dir", url.removeprefix("file://"), "tag").split() == ["v1"]

    # stream-json: a line per task event, then the fleet's summary
    events = json_lines(proc.stdout)
    fleet_events = [e for e in events if e["type"] == "fleet"]
    assert sorted(e["task_id"] for e in fleet_events if e["subtype"] == "task_started") == sorted(outcome)
    finished = {e["task_id"]: e["outcome"] for e in fleet_events if e["subtype"] == "task_finished"}
    assert finished == outcome
    passed = [e for e in events if e["type"] != "fleet"]
    assert {e["task_id"] for e in passed if e["type"] == "result"} == set(outcome)
    assert all(e["session_id"] == outcome[e["task_id"]]["session_id"] for e in passed)
    assert events[-1]["subtype"] == "finished" and events[-1]["exit_code"] == 4
    assert (events[-1]["succeeded"], events[-1]["failed"]) == (5, 1)
    assert "error_goal_not_met" in proc.stderr and "5/6 succeeded" in proc.stderr  # the summary table

    status = json.loads(fleet(tmp_path, "status", "out", "--json").stdout)
    assert (status["succeeded"], status["failed"], status["pending"], status["exit_code"]) == (5, 1, 0, 4)

    # `fleet resume`: only the task that did not succeed runs again, continuing its session
    (tmp_path / "ws-hopeless" / "fixed.txt").write_text("by hand\n")
    before = {task_id: transcript(isolated_home, line["session_id"]) for task_id, line in outcome.items()}
    again = fleet(tmp_path, "resume", "out")
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"{out}\n"
    lines = results(out)
    assert len(lines) == 7 and lines[-1]["id"] == "hopeless" and lines[-1]["subtype"] == "success"
    assert lines[-1]["session_id"] == outcome["hopeless"]["session_id"] and lines[-1]["result"] == "fixed now"
    hopeless = transcript(isolated_home, outcome["hopeless"]["session_id"])
    assert hopeless[: len(before["hopeless"])] == before["hopeless"]
    for task_id, records in before.items():
        if task_id != "hopeless":
            assert transcript(isolated_home, outcome[task_id]["session_id"]) == records
    assert "nothing to run" in fleet(tmp_path, "resume", "out").stderr


def test_a_killed_task_is_retried_and_resumes_its_session(tmp_path: Path, isolated_home: Path) -> None:
    workspace = folder(tmp_path, "ws")
    pid_file = workspace / "sleep.pid"  # (the command may write only in its workspace)
    replies = [shell("echo 1 > one.txt"), shell(f"sleep 30 & echo $! > {pid_file}; wait"), say("finished after all")]
    tasks_file(tmp_path / "tasks.jsonl", [
        {"id": "victim", "prompt": "one, then a long wait", "workspace": str(workspace),
         "script": script(tmp_path / "scripts", "victim", replies)}])
    killed: list[int] = []

    def kill_the_agent() -> None:
        """Once the agent sits in its long shell command: SIGKILL the CLI (the lock's pid)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            locks = list((isolated_home / "sessions").glob("*/lock")) if (isolated_home / "sessions").is_dir() else []
            if locks and pid_file.is_file() and pid_file.read_text().strip():
                pid = json.loads(locks[0].read_text())["pid"]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                os.kill(host_pid(pid_file), signal.SIGKILL)  # the agent's own child, orphaned now
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_agent, daemon=True)
    killer.start()
    proc = fleet(tmp_path, "run", "tasks.jsonl", "--provider", "scripted", "--results", "out", "-o", "stream-json")
    killer.join(5)
    assert killed, "the agent was never seen in its shell command"
    assert proc.returncode == 0, proc.stderr
    line = results(tmp_path / "out")[-1]
    assert (line["subtype"], line["attempts"], line["result"]) == ("success", 2, "finished after all")
    events = json_lines(proc.stdout)
    retries = [e for e in events if e.get("subtype") == "task_retry"]
    assert len(retries) == 1 and "SIGKILL" in retries[0]["reason"] and retries[0]["attempt"] == 2
    started = [e for e in events if e.get("subtype") == "task_started"]
    assert [e["resumed"] for e in started] == [False, True]
    records = transcript(isolated_home, line["session_id"])
    assert tool_calls(records) == ["run_shell", "run_shell"]  # resumed: the first step was not run again
    assert any(r["type"] == "repair" for r in records)  # the call the kill cut short was answered
    assert (workspace / "one.txt").read_text() == "1\n"
    assert line["steps"] == 3
    log = (tmp_path / "out" / "logs" / "victim.log").read_text()
    assert "attempt 1" in log and "exit -9" in log and "attempt 2" in log


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the worker through /proc")
def test_a_task_whose_worker_dies_is_retried_and_resumes_its_session(tmp_path: Path, isolated_home: Path) -> None:
    """The Ray worker itself is SIGKILLed (as when its node goes): its agent gets SIGTERM and
    saves the session, and the retry resumes it."""
    workspace = folder(tmp_path, "ws")
    pid_file = workspace / "sleep.pid"  # (the command may write only in its workspace)
    replies = [shell("echo 1 > one.txt"), shell(f"sleep 30 & echo $! > {pid_file}; wait"), say("carried on")]
    tasks_file(tmp_path / "tasks.jsonl", [
        {"id": "orphan", "prompt": "one, then a long wait", "workspace": str(workspace),
         "script": script(tmp_path / "scripts", "orphan", replies)}])
    killed: list[int] = []

    def kill_the_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            locks = list((isolated_home / "sessions").glob("*/lock")) if (isolated_home / "sessions").is_dir() else []
            if locks and pid_file.is_file() and pid_file.read_text().strip():
                worker = parent_of(json.loads(locks[0].read_text())["pid"])
                os.kill(worker, signal.SIGKILL)  # the agent gets SIGTERM and stops its shell command itself
                killed.append(worker)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_worker, daemon=True)
    killer.start()
    try:
        proc = fleet(tmp_path, "run", "tasks.jsonl", "--provider", "scripted", "--results", "out", "-o", "stream-json")
    finally:
        killer.join(5)
        with contextlib.suppress(ProcessLookupError, ValueError, OSError):
            os.kill(host_pid(pid_file), signal.SIGKILL)
    assert killed, "the agent was never seen in its shell command"
    line = results(tmp_path / "out")[-1]
    assert proc.returncode == 0, (line, (tmp_path / "out" / "logs" / "orphan.log").read_text())
    assert (line["subtype"], line["attempts"], line["result"]) == ("success", 2, "carried on")
    retries = [e for e in json_lines(proc.stdout) if e.get("subtype") == "task_retry"]
    assert len(retries) == 1 and "WorkerCrashedError" in retries[0]["reason"], retries
    assert tool_calls(transcript(isolated_home, line["session_id"])) == ["run_shell", "run_shell"]


def test_the_fleet_budget_stops_new_tasks(tmp_path: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('[prices."priced"]\ninput = 1000\noutput = 0\n')  # $0.01 a step
    replies = script(tmp_path / "scripts", "two-steps", [shell("echo x > x.txt"), say("done")])
    tasks = [{"id": f"t{n}", "prompt": "two steps", "workspace": str(folder(tmp_path, f"ws{n}"))} for n in range(4)]
    tasks_file(tmp_path / "tasks.jsonl", tasks)
    proc = fleet(tmp_path, "run", "tasks.jsonl", "--provider", "scripted", "--script", replies, "-m", "priced",
                 "--max-cost", "0.03", "--concurrency", "1", "--results", "out", "-o", "json")
    assert proc.returncode == 3, proc.stderr
    outcome = by_id(results(tmp_path / "out"))
    assert outcome["t0"]["subtype"] == "success" and outcome["t0"]["total_cost_usd"] == pytest.approx(0.02)
    assert outcome["t1"]["subtype"] == "error_max_budget_usd"  # capped at the $0.01 left
    assert outcome["t1"]["total_cost_usd"] == pytest.approx(0.01)
    for task_id in ("t2", "t3"):
        line = outcome[task_id]
        assert (line["subtype"], line["attempts"], line["exit_code"], line["session_id"]) == (
            "error_fleet_budget", 0, None, None)
        assert "not started" in line["errors"][0]
        assert not (tmp_path / f"ws{task_id[1]}" / "x.txt").exists()
    sessions = sorted(p.name for p in (isolated_home / "sessions").iterdir())
    assert len(sessions) == 2  # the tasks not started left no session
    summary = json.loads(proc.stdout)
    assert summary["total_cost_usd"] == pytest.approx(0.03) and summary["exit_code"] == 3
    assert summary["results_dir"] == str(tmp_path / "out")


def test_a_tasks_commands_run_in_the_sandbox_unless_its_line_says_off(tmp_path: Path, isolated_home: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    scripts = tmp_path / "scripts"
    tasks = [{"id": name, "prompt": "write outside", "workspace": f"ws-{name}", **extra,
              "script": script(scripts, name, [shell(f"echo x > {outside}/{name}.txt; echo x > in.txt"), say("tried")])}
             for name, extra in (("contained", {}), ("unconfined", {"sandbox": "off"}))]
    for task in tasks:
        folder(tmp_path, str(task["workspace"]))
    tasks_file(tmp_path / "tasks.jsonl", tasks)
    proc = fleet(tmp_path, "run", "tasks.jsonl", "--provider", "scripted", "--results", "out")
    assert proc.returncode == 0, proc.stderr
    assert sorted(path.name for path in outside.iterdir()) == ["unconfined.txt"]
    assert (tmp_path / "ws-contained" / "in.txt").exists() and (tmp_path / "ws-unconfined" / "in.txt").exists()
    line = by_id(results(tmp_path / "out"))["contained"]
    calls = [r["message"] for r in transcript(isolated_home, line["session_id"])
             if r.get("type") == "message" and r["message"].get("role") == "tool"]
    assert "blocked by the sandbox" in calls[0]["content"]
