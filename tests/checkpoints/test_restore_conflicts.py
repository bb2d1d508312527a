"""A restore never reverts what another process may have written (issue 36), through the CLI.

While the agent's shell command runs, another process may write the workspace too, and
nothing the OS tells us without privileges says which of them wrote what: a restore lists
such files as conflicts, naming them and the command, changes nothing and exits 1 unless
`--force`. A file tool's writes are this process's own, and are restored as before. A restore
of another session, made while this session's command ran, is not this session's change:
it is neither counted, nor undone, nor a conflict.

"Another process" is this test, acting while the agent's command waits for a `go` file (in
an ignored folder of the workspace, which the sandbox lets the command read and write and
snapshots leave out).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from clitools import invoke, wait_until, write_script

from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer
from recursive_cli.features.checkpoints.restore import apply_restore, plan_restore

from .conftest import Agent, shell, state


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


MARKERS = ".markers"


def waiting(workspace: Path, then: str = "true") -> tuple[dict[str, Any], Path, Path]:
    """A shell call that says it started, waits for `go`, then runs `then`."""
    (workspace / ".gitignore").write_text(f"/{MARKERS}/\n")
    (workspace / MARKERS).mkdir(exist_ok=True)
    started, go = workspace / MARKERS / "started", workspace / MARKERS / "go"
    command = f"touch {started}; while [ ! -e {go} ]; do sleep 0.02; done; {then}"
    return shell(command), started, go


def files(workspace: Path) -> dict[str, str]:
    """The workspace's files and what they hold, but the markers'."""
    return {p.name: p.read_text() for p in workspace.iterdir() if p.name not in (MARKERS, ".gitignore")}


def start_turn(tmp_path: Path, workspace: Path, session: str, *replies: dict[str, Any]) -> subprocess.Popen[str]:
    """`recursive run` of one turn as a real process, the agent's replies scripted."""
    script = write_script(tmp_path / f"{session}.json", [*replies, {"text": "done"}])
    return subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "go", "-C", str(workspace),
                             "--session-id", session, "--provider", "scripted", "--script", str(script)],
                            cwd=workspace, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(agent: subprocess.Popen[str]) -> str:
    _, stderr = agent.communicate(timeout=60)
    assert agent.returncode == 0, stderr
    return stderr


def restore(session: str, *flags: str) -> Any:
    return invoke("checkpoints", "restore", session, "--turn", "1", *flags)


def test_an_edit_made_while_a_shell_command_ran_is_a_conflict_not_reverted(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    (workspace / "mine.txt").write_text("v0\n")
    (workspace / "theirs.txt").write_text("t0\n")
    wait, started, go = waiting(workspace)
    agent = start_turn(tmp_path, workspace, "s1", call("write_file", path="mine.txt", content="v1\n"), wait)
    wait_until(started.exists, proc=agent)
    (workspace / "theirs.txt").write_text("the user's edit, saved while the command ran\n")
    go.touch()
    finish(agent)
    edited = state(workspace)

    refused = restore("s1")
    assert refused.returncode == 1
    assert refused.stdout.splitlines() == [
        "restore s1 to before turn 1 (undoes turn 1)",
        "  restore   mine.txt",
        "  restore   theirs.txt",
        "conflicts (changed while a command ran that may not have been their only writer):",
        "  theirs.txt  (during run_shell in turn 1)",
    ]
    assert refused.stderr == ("error: 1 file that another process may have written while the session's "
                              "command ran would be overwritten (listed above as conflicts); --force "
                              "restores anyway\n")
    assert state(workspace) == edited  # nothing reverted, the sure mine.txt neither
    assert Agent(tmp_path, workspace, isolated_home).records("rewind") == []

    forced = restore("s1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (workspace / "mine.txt").read_text() == "v0\n" and (workspace / "theirs.txt").read_text() == "t0\n"


def test_file_tools_are_sure_a_quiet_command_claims_nothing(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a0\n")
    (workspace / "old.py").write_text("old\n")
    patch = "*** Begin Patch\n*** Add File: new.py\n+new\n*** Delete File: old.py\n*** End Patch\n"
    wait, started, go = waiting(workspace)
    agent = start_turn(tmp_path, workspace, "s1", call("edit_file", path="a.txt", old_string="a0", new_string="a1"),
                       call("apply_patch", patch=patch), call("write_file", path="b.txt", content="b\n"), wait)
    wait_until(started.exists, proc=agent)
    go.touch()
    assert "checkpoint: turn 1 changed 4 files" in finish(agent)

    restored = restore("s1")
    assert restored.returncode == 0, restored.stderr
    assert "conflicts" not in restored.stdout
    assert files(workspace) == {"a.txt": "a0\n", "old.py": "old\n"}


def test_a_restore_made_while_another_session_runs_is_not_that_sessions_change(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    (workspace / "shared.txt").write_text("s0\n")
    other = Agent(tmp_path, workspace, isolated_home, "other")
    other.turn("write", call("write_file", path="b.txt", content="b\n"),
               call("write_file", path="shared.txt", content="s1\n"))
    wait, started, go = waiting(workspace, then="echo mine > made.txt")
    agent = start_turn(tmp_path, workspace, "s1", wait)
    wait_until(started.exists, proc=agent)
    undone = other.checkpoints("restore", "--turn", "1")  # while s1's command runs
    assert undone.returncode == 0, undone.stderr
    go.touch()
    stderr = finish(agent)
    assert "turn 1 changed 1 file" in stderr  # made.txt; not b.txt nor shared.txt

    listing = invoke("checkpoints", "list", "s1")
    assert [line.split("\t")[2] for line in listing.stdout.splitlines()] == ["1"]
    diff = invoke("checkpoints", "diff", "s1", "1").stdout
    assert "made.txt" in diff and "b.txt" not in diff and "shared.txt" not in diff
    forced = restore("s1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines()[1:2] == ["  remove    made.txt"]
    assert files(workspace) == {"shared.txt": "s0\n"}  # the other session's restore stands


def test_a_command_writing_after_a_restore_keeps_its_own_change(workspace: Path, isolated_home: Path) -> None:
    """A path a restore wrote during a window counts for the window only when it holds
    something else at the window's end: the call wrote it after the restore."""
    (workspace / "x.txt").write_text("x0\n")
    (workspace / "y.txt").write_text("y0\n")
    other = GitCheckpointer(isolated_home, workspace, "other")
    other.snapshot(1, "before")
    window = other.open_window(1, "write_file")
    (workspace / "x.txt").write_text("x1\n")
    (workspace / "y.txt").write_text("y1\n")
    other.close_window(window, ["x.txt", "y.txt"])
    other.snapshot(1, "after")

    cp = GitCheckpointer(isolated_home, workspace, "s1")
    cp.snapshot(1, "before")
    window = cp.open_window(1, "run_shell")
    apply_restore(other, plan_restore(other, 1))  # x.txt and y.txt back to x0, y0
    (workspace / "y.txt").write_text("y2\n")  # the command writes y.txt after the restore did
    cp.close_window(window)
    cp.snapshot(1, "after")
    own = cp.history().own({1})
    assert list(own) == ["y.txt"] and own["y.txt"].unsure == "run_shell in turn 1"
