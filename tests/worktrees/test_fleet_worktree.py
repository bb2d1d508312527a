"""Fleet's `"worktree": true`: each task's attempt (the Ray task's body, run here as plain
Python) works in a worktree of its own of the task's repository, and a retry resumes there."""

from __future__ import annotations

import socket
from pathlib import Path

from clitools import write_script

from recursive_cli.surfaces.fleet.tasks import cli_flags, read_tasks
from recursive_cli.surfaces.fleet.worker import AttemptDone, AttemptJob, AttemptLine, AttemptStarted, run_attempt

from .conftest import git


def attempt(home: Path, repo: Path, task_id: str, flags: list[str], **fields: object) -> list[object]:
    job = AttemptJob.model_validate({
        "fleet_id": "f1", "task_id": task_id, "session_id": f"f1-{task_id}", "attempt": 1, "mode": "run",
        "prompt": "write same.txt", "workspace": str(repo), "flags": flags, "home": str(home),
        "driver_host": socket.gethostname(), "bundle_every": 0.2} | fields)
    return list(run_attempt(job))


def test_worktree_tasks_on_one_repository_keep_apart(tmp_path: Path, repo: Path, isolated_home: Path) -> None:
    tasks = tmp_path / "TASKS.jsonl"
    tasks.write_text('{"id": "a", "prompt": "x", "worktree": true}\n{"id": "b", "prompt": "y"}\n')
    a, b = read_tasks(tasks)
    assert "--worktree=" in cli_flags(a, None) and "--worktree=" not in cli_flags(b, None)
    for task_id in ("a", "b"):
        script = write_script(tmp_path / f"{task_id}.json", [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "same.txt", "content": task_id}}]},
            {"text": "done"}])
        done = attempt(isolated_home, repo, task_id, ["--provider", "scripted", "--script", str(script),
                                                      *cli_flags(a, None)])[-1]
        assert isinstance(done, AttemptDone) and done.returncode == 0, done
        tree = repo / ".recursive" / "worktrees" / f"f1-{task_id}"
        assert done.result is not None and done.result["worktree"]["branch"] == f"recursive/f1-{task_id}"
        assert (tree / "same.txt").read_text() == task_id
    assert not (repo / "same.txt").exists() and git(repo, "status", "--porcelain") == ""

    # (the scripted provider skips the replies the conversation already holds: the first two)
    again = write_script(tmp_path / "again.json", [{"text": "-"}, {"text": "-"}, {"text": "resumed"}])
    items = attempt(isolated_home, repo, "a", [], attempt=2, resume=True,
                    resume_flags=["--script", str(again)])
    started = next(item for item in items if isinstance(item, AttemptStarted))
    done = items[-1]
    assert started.resumed and isinstance(done, AttemptDone) and done.returncode == 0, done.result
    assert done.result is not None and done.result["result"] == "resumed"
    [init] = [item.event for item in items if isinstance(item, AttemptLine) and item.event.get("subtype") == "init"]
    assert init["cwd"] == str(repo / ".recursive/worktrees/f1-a")  # back in its worktree, not -C the repository
    assert done.result is not None and done.result["worktree"]["path"] == str(repo / ".recursive/worktrees/f1-a")
