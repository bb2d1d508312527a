"""Checkpoints undo only what the session did (issue 12), through the real CLI.

The session's own changes are what its tool calls and background jobs changed; what anyone
else changes meanwhile — between the session's tool calls, or while a file tool writes
another path — is left alone by a restore, and a file someone changed after the session
wrote it is a conflict. "Someone else" is played by code that runs while the scripted model
is "thinking" (`meanwhile`), or while a file tool runs (`during_write_file`). What a shell
command or a job changed may have been written by someone else while it ran: a restore
lists it as a conflict and needs --force for it (test_restore_conflicts.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clitools import host_pid, write_script

from recursive_cli.features.sessions.reader import load_session
from recursive_cli.tools.files import WriteFileTool

from .conftest import Agent, shell, state, stream

Action = Callable[[], None]


def call(name: str, **arguments: object) -> dict[str, Any]:
    """A scripted reply with one tool call."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def fast(tmp_path: Path, workspace: Path, isolated_home: Path) -> Agent:
    """An agent whose commands run in this process (so `meanwhile` can act inside a turn)."""
    return Agent(tmp_path, workspace, isolated_home, in_process=True)


def write(path: Path, text: str) -> Action:
    """Someone else writing `path`."""
    def act() -> None:
        path.write_text(text)
    return act


def rows(agent: Agent) -> list[list[str]]:
    listing = agent.checkpoints("list")
    assert listing.returncode == 0, listing.stderr
    return [line.split("\t") for line in listing.stdout.splitlines()]


def test_restore_undoes_only_the_sessions_own_changes(fast: Agent, workspace: Path,
                                                      meanwhile: dict[int, Action]) -> None:
    (workspace / "mine.txt").write_text("v0\n")
    (workspace / "theirs.txt").write_text("t0\n")
    (workspace / "old.py").write_text("old\n")
    patch = "*** Begin Patch\n*** Add File: new.py\n+new\n*** Delete File: old.py\n*** End Patch\n"
    meanwhile[1] = write(workspace / "theirs.txt", "edited by the user\n")  # between two calls
    meanwhile[2] = write(workspace / "user-new.txt", "the user's new file\n")
    proc = fast.turn("work", call("edit_file", path="mine.txt", old_string="v0", new_string="v1"),
                     call("apply_patch", patch=patch), shell("echo made > made.txt"))
    assert "checkpoint: turn 1 changed 4 files (undo: recursive checkpoints restore s1 --turn 1)" \
        in proc.stderr
    assert [(r[0], r[2]) for r in rows(fast)] == [("1", "4")]
    diff = fast.checkpoints("diff", "1").stdout
    assert all(name in diff for name in ("mine.txt", "new.py", "old.py", "made.txt"))
    assert "theirs.txt" not in diff and "user-new.txt" not in diff
    assert fast.checkpoints("diff").stdout == diff  # the whole session: the same one turn

    refused = fast.checkpoints("restore", "--turn", "1")
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[5:] == [
        "conflicts (changed while a command ran that may not have been their only writer):",
        "  made.txt  (during run_shell in turn 1)"]
    restore = fast.checkpoints("restore", "--turn", "1", "--force")
    assert restore.returncode == 0, restore.stderr
    assert restore.stdout.splitlines()[1:5] == ["  remove    made.txt", "  restore   mine.txt",
                                                "  remove    new.py", "  recreate  old.py"]
    assert {p.name: p.read_text() for p in workspace.iterdir()} == {
        "mine.txt": "v0\n", "old.py": "old\n", "theirs.txt": "edited by the user\n",
        "user-new.txt": "the user's new file\n"}


def test_a_file_the_user_changed_after_the_session_wrote_it_is_a_conflict(
        fast: Agent, workspace: Path, meanwhile: dict[int, Action]) -> None:
    (workspace / "a.txt").write_text("original\n")
    meanwhile[1] = write(workspace / "a.txt", "the user's edit\n")  # same turn, after our write
    fast.turn("edit", call("write_file", path="a.txt", content="the session's\n"))
    refused = fast.checkpoints("restore", "--turn", "1")
    assert refused.returncode == 1
    assert "conflicts (changed by someone else since the session wrote them):\n  a.txt\n" \
        in refused.stdout
    assert "--force" in refused.stderr and fast.records("rewind") == []
    assert (workspace / "a.txt").read_text() == "the user's edit\n"
    forced = fast.checkpoints("restore", "--turn", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (workspace / "a.txt").read_text() == "original\n"


def test_a_file_tool_claims_only_the_paths_it_writes(fast: Agent, workspace: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    run = WriteFileTool.run

    async def during_write_file(self: WriteFileTool, args: Any, ctx: Any) -> Any:
        (workspace / "saved-meanwhile.txt").write_text("an editor saved this\n")
        return await run(self, args, ctx)

    monkeypatch.setattr(WriteFileTool, "run", during_write_file)
    proc = fast.turn("write", call("write_file", path="note.txt", content="note\n"))
    assert "turn 1 changed 1 file" in proc.stderr
    assert fast.checkpoints("restore", "--turn", "1").returncode == 0
    assert sorted(p.name for p in workspace.iterdir()) == ["saved-meanwhile.txt"]


def test_a_background_job_belongs_to_the_turn_that_started_it(fast: Agent, workspace: Path) -> None:
    script = write_script(fast.tmp_path / "loop.json", [
        call("run_background", command="sleep 0.5; echo done > job.txt"),
        {"text": "started"}, {"text": "the job is done"}])  # turn 2 hears of the job's end
    proc = fast.cli("loop", "start the job", "-C", str(workspace), "--session-id", "s1",
                    "--provider", "scripted", "--script", str(script))
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "job.txt").exists()
    assert [(r[0], r[2]) for r in rows(fast)] == [("1", "1"), ("2", "0")]
    refused = fast.checkpoints("restore", "--turn", "1")
    assert refused.returncode == 1 and "  job.txt  (during run_background in turn 1)" in refused.stdout
    assert fast.checkpoints("restore", "--turn", "1", "--force").returncode == 0
    assert not (workspace / "job.txt").exists()


def test_attribution_survives_kill_9_and_resume(fast: Agent, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a0\n")
    script = write_script(fast.tmp_path / "killed.json", [
        call("write_file", path="a.txt", content="a1\n"),
        {**shell("echo half > half.txt; echo $$ > shell.pid; sleep 30"), "delay": 1.0}])
    agent = start_run(workspace, script)
    try:
        wait_for(lambda: (workspace / "a.txt").read_text() == "a1\n", agent)
        (workspace / "theirs.txt").write_text("made while the model thought\n")
        wait_for(lambda: (workspace / "shell.pid").read_text().strip() != "", agent)
    finally:
        agent.kill()  # kill -9, in the middle of run_shell
        agent.wait()
    with contextlib.suppress(ProcessLookupError):  # (in the sandbox it died with the run)
        os.killpg(host_pid(workspace / "shell.pid"), signal.SIGKILL)
    fast.turns = 1
    fast.turn("carry on")  # a new process: its first snapshot ends the killed call's window
    (workspace / "later.txt").write_text("after the resume\n")

    restore = fast.checkpoints("restore", "--turn", "1", "--force")  # (half.txt is the shell's)
    assert restore.returncode == 0, restore.stderr
    assert {p.name: p.read_text() for p in workspace.iterdir()} == {
        "a.txt": "a0\n", "theirs.txt": "made while the model thought\n",
        "later.txt": "after the resume\n"}
    assert load_session(fast.home / "sessions" / "s1").messages == []


def test_an_interrupted_tool_call_still_owns_what_it_did(fast: Agent, workspace: Path) -> None:
    script = write_script(fast.tmp_path / "interrupted.json", [
        shell("echo part > part.txt; echo $$ > shell.pid; sleep 30"), {"text": "never"}])
    agent = start_run(workspace, script)
    try:
        wait_for(lambda: (workspace / "shell.pid").read_text().strip() != "", agent)
        agent.send_signal(signal.SIGINT)
        assert agent.wait(timeout=30) == 130
    finally:
        agent.kill()
    (workspace / "theirs.txt").write_text("after the run\n")
    assert [(r[0], r[2]) for r in rows(fast)] == [("1", "2")]
    assert fast.checkpoints("restore", "--turn", "1", "--force").returncode == 0
    assert [p.name for p in workspace.iterdir()] == ["theirs.txt"]


def test_a_rewound_turn_can_be_restored_again(fast: Agent, workspace: Path) -> None:
    fast.turn("one", shell("echo 1 > f1.txt"))
    fast.turn("two", shell("echo 2 > f2.txt"))
    assert fast.checkpoints("restore", "--turn", "2", "--force").returncode == 0
    assert fast.checkpoints("restore", "--turn", "1", "--force").returncode == 0
    fast.turn("three", shell("echo 3 > f3.txt"))
    assert [(r[0], r[2], r[4]) for r in rows(fast)] == [("1", "1", "rewound"), ("2", "1", "rewound"),
                                                        ("3", "1", "")]
    assert "+1" in fast.checkpoints("diff", "1").stdout  # a rewound turn's diff is still there

    again = fast.checkpoints("restore", "--turn", "1", "--force")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == ("restore s1 to before turn 1 (undoes turn 3; turn 1 "
                                            "itself was undone by an earlier restore)")
    assert list(workspace.iterdir()) == []
    assert load_session(fast.home / "sessions" / "s1").messages == []
    assert fast.checkpoints("restore", "--turn", "2").returncode == 0  # nothing left to undo
    missing = fast.checkpoints("restore", "--turn", "7")
    assert missing.returncode == 1
    assert "no checkpoint before turn 7 (turns with one: 1, 2, 3)" in missing.stderr


def test_a_folder_replaced_by_a_symlink(fast: Agent, tmp_path: Path, workspace: Path,
                                       isolated_home: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "outside.txt").write_text("not ours\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a.txt").write_text("a\n")
    (workspace / "target.txt").write_text("t\n")
    os.symlink("target.txt", workspace / "link")
    start, outside = state(workspace), state(elsewhere)

    proc = fast.turn("swap", shell(f"rm -rf sub && ln -s {elsewhere} sub && rm link"),
                     flags=("-o", "stream-json"))
    assert all("error" not in line for line in stream(proc, "checkpoint")), proc.stdout
    assert "new file mode 120000" in fast.checkpoints("diff", "1").stdout  # the link, not its target
    other = Agent(tmp_path, workspace, isolated_home, "s2", in_process=True)
    later = other.turn("another session", shell("echo x > x.txt"), flags=("-o", "stream-json"))
    assert all("error" not in line for line in stream(later, "checkpoint")), later.stdout
    assert other.checkpoints("restore", "--turn", "1", "--force").returncode == 0

    restore = fast.checkpoints("restore", "--turn", "1", "--force")
    assert restore.returncode == 0, restore.stderr
    assert state(workspace) == start  # a folder again, and the symlink a symlink
    assert os.readlink(workspace / "link") == "target.txt"
    assert state(elsewhere) == outside


def start_run(workspace: Path, script: Path, *flags: str) -> subprocess.Popen[bytes]:
    """`recursive run go` of session s1 as a real process (to be interrupted or killed)."""
    return subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "go", "-C", str(workspace),
                             "--session-id", "s1", "--provider", "scripted", "--script", str(script), *flags],
                            cwd=workspace, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def wait_for(predicate: Callable[[], bool], proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Poll until `predicate` holds; fail early if `proc` has exited."""
    deadline = time.monotonic() + timeout
    while not _holds(predicate):
        assert proc.poll() is None, f"the agent exited ({proc.returncode}) first"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _holds(predicate: Callable[[], bool]) -> bool:
    try:
        return predicate()
    except OSError:
        return False
