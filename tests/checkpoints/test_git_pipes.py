"""git writes the refs and commits through processes kept for the session (pipes.py): a quiet
window sends git nothing (its open is noted beside the head: pending.py), git's own ref lock is
honoured both ways, and no git process outlives a run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from clitools import invoke, write_script

from recursive_cli.features.checkpoints import GitCommandError
from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer
from recursive_cli.features.checkpoints.pending import pending_path, read_pending
from recursive_cli.features.checkpoints.repo import head_ref, shadow_folder

from .conftest import git_commands
from .test_fast_windows import head_on_disk, real_git


def git_children() -> list[str]:  # (the checkpointers other tests left are still running)
    """The git processes (zombies included) whose parent is this process: `pid state`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, _, rest = stat.partition(" (")[2].rpartition(") ")
        state, ppid = rest.split()[:2]
        if name == "git" and int(ppid) == os.getpid():
            found.append(f"{entry.name} {state}")
    return found


@pytest.fixture
def cp(watched_cp: GitCheckpointer) -> GitCheckpointer:
    watched_cp.close_window(watched_cp.open_window(1, "run_shell"))  # its open commit exists now
    return watched_cp


def test_quiet_windows_note_their_open_beside_the_head_and_send_git_nothing(
        cp: GitCheckpointer, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = cp.pipes.refs.proc
    assert proc is not None and proc.poll() is None
    seen = git_commands(monkeypatch)
    before = head_on_disk(cp)
    noted = pending_path(cp.git, "s1")
    for _ in range(3):
        window = cp.open_quietly(1, "run_shell")
        assert window is not None and cp.head() == (window.commit, window.tree)
        assert head_on_disk(cp) == before and cp.pipes.refs.pending == []  # git was sent nothing …
        assert read_pending(noted) == (window.commit, before, window.tree,  # … the open is noted beside it
                                       {"event": "open", "turn": 1, "tool": "run_shell", "by": cp.process})
        assert cp.close_quietly(window) and head_on_disk(cp) == before and cp.head()[0] == before
        assert noted.read_bytes() == b"" and cp.pipes.refs.pending == []
    assert seen == [] and cp.pipes.refs.proc is proc  # no git started
    real_git(cp, "fsck", "--no-dangling")
    mine = {p.pid for p in (cp.pipes.refs.proc, cp.pipes.objects.proc, cp.pipes.reads.proc) if p is not None}
    assert len(mine) == 3 and mine <= {int(child.split()[0]) for child in git_children()}
    cp.close()
    assert proc.returncode == 0 and not mine & {int(child.split()[0]) for child in git_children()}


def test_a_commit_during_a_quiet_window_follows_its_open(cp: GitCheckpointer) -> None:
    """Another call's snapshot while a quiet one runs (calls run side by side) builds on the
    quiet call's open commit, as when git's head had moved there: the chain holds both windows."""
    before = head_on_disk(cp)
    quiet = cp.open_quietly(1, "run_shell")
    assert quiet is not None and head_on_disk(cp) == before
    other = cp.open_window(1, "write_file")  # (a second call, side by side)
    assert head_on_disk(cp) == other.commit and other.previous == (quiet.commit, quiet.tree)
    assert real_git(cp, "rev-parse", f"{other.commit}^").strip() == quiet.commit
    assert pending_path(cp.git, "s1").read_bytes() == b""  # (git has the move: nothing is left noted)
    (cp.workspace / "written.txt").write_text("by the second call\n")
    cp.close_window(other, ["written.txt"])
    assert not cp.close_quietly(quiet)  # the head moved on: the thread path closes it
    cp.close_window(quiet)
    windows = cp.history(since=before).windows
    assert [(w.tool, w.post is not None) for w in windows] == [("run_shell", True), ("write_file", True)]
    assert set(cp.history(since=before).own({1})) == {"written.txt"}
    cp.close()


def test_a_ref_lock_held_by_another_git_is_honoured(cp: GitCheckpointer) -> None:
    lock = cp.git.git_dir / (head_ref("s1") + ".lock")
    before = head_on_disk(cp)
    lock.write_text("")  # another git moving the head right now
    with pytest.raises(GitCommandError, match="update-ref failed.*lock"):
        cp.update_refs({head_ref("s1"): before})
    window = cp.open_quietly(1, "run_shell")  # noted beside the head: git is not asked …
    assert window is not None and cp.close_quietly(window) and head_on_disk(cp) == before
    with pytest.raises(GitCommandError, match="update-ref failed.*lock"):
        cp.open_window(2, "run_shell")  # … but a commit moves the head, and git refuses
    assert cp.head() == (before, window.tree) and lock.exists()  # (the head is asked of git again)
    lock.unlink()
    window = cp.open_window(1, "run_shell")  # a new update-ref, started on this call
    assert head_on_disk(cp) == window.commit
    cp.close_window(window)
    assert head_on_disk(cp) == before
    cp.close()


def test_a_transaction_is_all_or_nothing(cp: GitCheckpointer) -> None:
    before = head_on_disk(cp)
    with pytest.raises(GitCommandError, match="nonexistent object"):
        cp.update_refs({"refs/recursive/s1/turns/9/before": before, head_ref("s1"): "1" * 40})
    assert head_on_disk(cp) == before
    assert real_git(cp, "for-each-ref", "refs/recursive/s1/turns/9") == ""
    cp.close()


def test_no_git_process_outlives_a_run(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo a > a.txt"}}]},
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "true"}}]},
        {"text": "done"}])
    before = set(git_children())
    proc = invoke("run", "hi", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "a.txt").read_text() == "a\n"
    assert set(git_children()) <= before  # every one was ended and reaped when the run closed
    commits = real_git_dir(isolated_home, workspace, "log", "--format=%s", "--all")
    assert "turn 1 run_shell ended" in commits


def real_git_dir(home: Path, workspace: Path, *args: str) -> str:
    """stdout of the real git on the workspace's shadow repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    repo = shadow_folder(home, workspace) / "repo"
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env).stdout


# Run by the test below as its own process: it adopts the orphans of the run it starts
# (PR_SET_CHILD_SUBREAPER), so a git process the run leaves behind becomes its child.
_REAPER = r"""
import ctypes, json, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
marker, how, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
run = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 60
while not os.path.exists(marker) and run.poll() is None and time.monotonic() < deadline:
    time.sleep(0.01)
run.send_signal(signal.SIGINT if how == "int" else signal.SIGKILL)
code = run.wait()
def gits():
    found = {}
    for entry in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        name, _, rest = stat.partition(" (")[2].rpartition(") ")
        if entry.isdigit() and name == "git" and int(rest.split()[1]) == os.getpid():
            found[int(entry)] = rest.split()[0]
    return found
adopted = gits()
until = time.monotonic() + 5
while any(state != "Z" for state in gits().values()) and time.monotonic() < until:
    time.sleep(0.02)
alive = [pid for pid, state in gits().items() if state != "Z"]
for pid in alive:
    os.kill(pid, signal.SIGKILL)
while True:
    try:
        if os.waitpid(-1, 0)[0] <= 0:
            break
    except ChildProcessError:
        break
print(json.dumps({"code": code, "adopted": len(adopted), "alive": len(alive)}))
"""


@pytest.mark.parametrize("how", ["int", "kill"])
def test_an_interrupted_or_killed_run_leaves_no_git_running(tmp_path: Path, workspace: Path,
                                                          isolated_home: Path, how: str) -> None:
    import json
    import sys

    marker = tmp_path / "started"
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo a > a.txt"}}]},
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": f"touch {marker}; sleep 30"}}]},
        {"text": "done"}])
    agent = [sys.executable, "-m", "recursive_cli", "run", "go", "-C", str(workspace), "--provider",
             "scripted", "--script", str(script), "--add-dir", str(tmp_path)]
    reaper = subprocess.run([sys.executable, "-c", _REAPER, str(marker), how, *agent], capture_output=True,
                            text=True, timeout=120, env={**os.environ, "RECURSIVE_HOME": str(isolated_home)})
    result = json.loads(reaper.stdout)
    assert marker.exists() and result["alive"] == 0  # none outlives the run for long (EOF ends each)
    if how == "int":
        assert result["code"] == 130 and result["adopted"] == 0  # the run ended and reaped every one
