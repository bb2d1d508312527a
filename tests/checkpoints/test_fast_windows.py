"""Tool calls that change nothing run no git at all (issue 16, goal 2), and keep every guarantee.

A call that changes nothing opens the last such call's `open` commit again; that the session's
head is on it meanwhile is noted beside the head (pending.py) and git is sent nothing; every
other move of the head goes through the session's running `git update-ref --stdin` (pipes.py). What is asserted is what real git
reads from the shadow repository, and what a restore does after a kill -9.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clitools import host_pid, write_script

from recursive_cli.core import tool as tool_base
from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer
from recursive_cli.features.checkpoints.pending import read_pending
from recursive_cli.features.checkpoints.repo import head_ref, shadow_folder

from .conftest import Agent, git_commands, shell
from .test_attribution import start_run, wait_for

_run = subprocess.run  # (the tests' own git calls are not counted)


@pytest.fixture
def cp(watched_cp: GitCheckpointer) -> GitCheckpointer:
    return watched_cp


def real_git(cp: GitCheckpointer, *args: str) -> str:
    """stdout of the real git on the shadow repository, as another program would run it, once
    the session's git has done the ref moves it was sent (pipes.py)."""
    cp.settle()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return _run(["git", "--git-dir", str(cp.git.git_dir), *args], capture_output=True,
                          text=True, check=True, env=env).stdout


def head_on_disk(cp: GitCheckpointer) -> str:
    return real_git(cp, "for-each-ref", "--format=%(objectname)", head_ref("s1")).strip()


def test_quiet_calls_run_no_git_and_git_reads_every_head_move(cp: GitCheckpointer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    before = head_on_disk(cp)
    chain = real_git(cp, "log", "--format=%H %s", before)
    cp.close_window(cp.open_window(1, "run_shell"))  # the first call commits its open snapshot
    seen = git_commands(monkeypatch)
    for _ in range(5):
        window = cp.open_window(1, "run_shell")
        assert head_on_disk(cp) == window.commit  # sent to git before the call runs: a kill -9 of ours finds it done
        assert real_git(cp, "log", "-1", "--format=%s", window.commit).strip() == "s1: turn 1 run_shell starts"
        cp.close_window(window)
        assert head_on_disk(cp) == before
        assert cp.open_quietly(1, "run_shell") is not None  # … and on the event loop, no thread
        assert cp.close_quietly(window)
    assert seen == []  # not one git process for ten quiet calls
    assert real_git(cp, "log", "--format=%H %s", head_on_disk(cp)) == chain
    real_git(cp, "fsck", "--no-dangling")  # nothing git would call broken


def test_a_packed_head_is_moved_by_writing_its_loose_file(cp: GitCheckpointer,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    before = head_on_disk(cp)
    cp.close_window(cp.open_window(1, "run_shell"))
    real_git(cp, "pack-refs", "--all", "--prune")  # as `git gc` (sessions gc) leaves it
    loose = cp.git.git_dir / head_ref("s1")
    assert not loose.exists()
    seen = git_commands(monkeypatch)
    window = cp.open_window(1, "run_shell")
    assert loose.read_text() == window.commit + "\n"  # git reads the loose file before packed-refs
    assert head_on_disk(cp) == window.commit
    cp.close_window(window)
    assert head_on_disk(cp) == before
    assert seen == []


def test_a_change_in_a_quiet_looking_call_is_committed_and_the_sessions(
        cp: GitCheckpointer, workspace: Path) -> None:
    cp.close_window(cp.open_window(1, "run_shell"))
    window = cp.open_window(1, "run_shell")
    (workspace / "made.txt").write_text("by the call")
    assert not cp.close_quietly(window)  # the watch heard it: the thread path commits it
    cp.close_window(window)
    assert real_git(cp, "log", "-1", "--format=%s", head_on_disk(cp)).strip() == "s1: turn 1 run_shell ended"
    (workspace / "theirs.txt").write_text("between calls")
    assert cp.open_quietly(1, "run_shell") is None  # changed since: not quiet
    cp.close_window(cp.open_window(1, "run_shell"))
    assert sorted(cp.history().own({1})) == ["made.txt"]


def test_a_held_ref_lock_is_left_to_git_and_a_stale_one_is_taken_over(cp: GitCheckpointer) -> None:
    cp.close_window(cp.open_window(1, "run_shell"))
    lock = cp.git.git_dir / (head_ref("s1") + ".lock")
    lock.write_text("")  # another git is updating the ref right now
    with pytest.raises(Exception, match="lock"):
        cp.open_window(1, "run_shell")  # git's own answer: the ref is locked
    assert lock.exists()  # someone else's lock is never removed
    old = time.time() - 120
    os.utime(lock, (old, old))  # … but one left by a killed process is
    window = cp.open_window(1, "run_shell")
    assert head_on_disk(cp) == window.commit and not lock.exists()
    cp.close_window(window)


def test_a_call_killed_after_quiet_calls_owns_what_it_did(tmp_path: Path, workspace: Path,
                                                          isolated_home: Path) -> None:
    (workspace / "keep.txt").write_text("keep\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    script = write_script(tmp_path / "killed.json", [
        shell("true"), shell("true"), shell(f"touch {outside}/quiet-done"),
        {**shell("echo half > half.txt; echo $$ > shell.pid; sleep 30"), "delay": 1.5}])
    agent = start_run(workspace, script, "--add-dir", str(outside))  # (the sandbox lets it write there)
    try:
        # The third call has ended once its result is in the transcript (a call's window
        # closes before its result is recorded); the model then "thinks" for 1.5 s.
        wait_for(lambda: recorded_results(isolated_home / "sessions" / "s1") == 3, agent)
        assert (outside / "quiet-done").exists()
        (workspace / "theirs.txt").write_text("made while the model thought\n")
        wait_for(lambda: (workspace / "shell.pid").read_text().strip() != "", agent)
    finally:
        agent.kill()  # kill -9, in the middle of the fourth run_shell
        agent.wait()
    with contextlib.suppress(ProcessLookupError):  # (in the sandbox it died with the run)
        os.killpg(host_pid(workspace / "shell.pid"), signal.SIGKILL)
    resumed = Agent(tmp_path, workspace, isolated_home)
    resumed.turns = 1
    resumed.turn("carry on")  # a new process: its first snapshot ends the killed call's window
    restore = resumed.checkpoints("restore", "--turn", "1")
    assert restore.returncode == 1  # half.txt is a shell command's: another process may have written it
    assert "  half.txt  (during run_shell in turn 1)" in restore.stdout
    restore = resumed.checkpoints("restore", "--turn", "1", "--force")
    assert restore.returncode == 0, restore.stderr
    assert {p.name: p.read_text() for p in workspace.iterdir()} == {
        "keep.txt": "keep\n", "theirs.txt": "made while the model thought\n"}


def test_a_quiet_call_killed_with_its_open_only_noted_owns_what_it_did(tmp_path: Path, workspace: Path,
                                                                         isolated_home: Path) -> None:
    """The fourth call opens quietly (nothing changed since the third): its open is noted
    beside the head (pending.py), not in git. Killed -9 in the middle of it, its change is
    still its own: the resumed run's first snapshot follows the noted open."""
    (workspace / "keep.txt").write_text("keep\n")
    script = write_script(tmp_path / "killed.json", [
        shell("true"), shell("true"), shell("true"), shell("echo half > half.txt; echo $$ > shell.pid; sleep 30")])
    agent = start_run(workspace, script)
    noted = shadow_folder(isolated_home, workspace) / "open-s1"
    try:
        wait_for(lambda: (workspace / "shell.pid").exists() and (workspace / "shell.pid").read_text().strip() != "",
                 agent)
        pending = read_pending(noted)
        assert pending is not None and pending.event["turn"] == 1 and pending.event["tool"] == "run_shell"
    finally:
        agent.kill()  # kill -9, in the middle of the fourth run_shell
        agent.wait()
    with contextlib.suppress(ProcessLookupError):  # (in the sandbox it died with the run)
        os.killpg(host_pid(workspace / "shell.pid"), signal.SIGKILL)
    assert _run(["git", "--git-dir", str(shadow_folder(isolated_home, workspace) / "repo"), "rev-parse",
                 head_ref("s1")], capture_output=True, text=True).stdout.strip() == pending.parent
    resumed = Agent(tmp_path, workspace, isolated_home)
    resumed.turns = 1
    # its quiet calls note their own opens over the killed one's: the chain must hold that one by then
    resumed.turn("carry on", shell("true"), shell("true"), shell("true"))
    assert read_pending(noted) is None
    restore = resumed.checkpoints("restore", "--turn", "1")
    assert restore.returncode == 1  # a shell command's: another process may have written it
    assert "  half.txt  (during run_shell in turn 1)" in restore.stdout
    assert resumed.checkpoints("restore", "--turn", "1", "--force").returncode == 0
    assert {p.name: p.read_text() for p in workspace.iterdir()} == {"keep.txt": "keep\n"}


def recorded_results(session: Path) -> int:
    """How many tool results the session's transcript holds (a torn last line aside)."""
    count = 0
    for line in (session / "transcript.jsonl").read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        count += record.get("type") == "message" and record["message"].get("role") == "tool"
    return count


def test_a_quick_shell_reads_no_older_process_environment(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    older = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.05)
        read: list[str] = []
        real_open, real_builtin_open = os.open, open

        def recording(path: Any, *args: Any, **kwargs: Any) -> int:
            read.append(str(path))
            return real_open(path, *args, **kwargs)

        def recording_builtin(path: Any, *args: Any, **kwargs: Any) -> Any:
            read.append(str(path))
            return real_builtin_open(path, *args, **kwargs)

        import asyncio

        from recursive_cli.core.tool import ToolContext
        from recursive_cli.tools.sandbox import WorkspaceSandbox
        from recursive_cli.tools.shell import HeadTailBuffer, run_command

        ctx = ToolContext(sandbox=WorkspaceSandbox(tmp_path), home=tmp_path)
        monkeypatch.setattr(tool_base.os, "open", recording)
        monkeypatch.setattr("builtins.open", recording_builtin)
        run = asyncio.run(run_command("true", ctx, HeadTailBuffer(1000), 10))
        assert run.returncode == 0
        assert f"/proc/{older.pid}/environ" not in read  # it started before the command
        asyncio.run(run_command("true", ctx, HeadTailBuffer(1000), 10))
        assert read.count(f"/proc/{older.pid}/stat") <= 1  # known from the first scan on
    finally:
        older.kill()
        older.wait()
