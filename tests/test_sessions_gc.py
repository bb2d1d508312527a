"""`recursive sessions gc` through the real CLI: deleting is never a surprise (issue 12).

An age needs a unit; only this workspace's sessions are touched unless `--all-workspaces`; a
terminal is asked first, and without one `--yes` is required; every removed id is named.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitools import invoke, write_script


@pytest.fixture
def sessions(tmp_path: Path, isolated_home: Path) -> dict[str, Path]:
    """Workspaces `one` (sessions old-1 and new-1) and `two` (old-2); the old ones untouched
    since 2020. Returns the workspaces by name."""
    script = write_script(tmp_path / "s.json", [{"text": "a"}])
    spaces = {"one": tmp_path / "one", "two": tmp_path / "two"}
    for folder in spaces.values():
        folder.mkdir()
    for session_id, space in (("old-1", "one"), ("new-1", "one"), ("old-2", "two")):
        proc = invoke("run", f"work {session_id}", "-C", str(spaces[space]), "--provider", "scripted",
                      "--script", str(script), "--session-id", session_id, "--no-checkpoints")
        assert proc.returncode == 0, proc.stderr
    for session_id in ("old-1", "old-2"):
        meta_path = isolated_home / "sessions" / session_id / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["updated"] = "2020-01-01T00:00:00.000+00:00"
        meta_path.write_text(json.dumps(meta))
    return spaces


def remaining(home: Path) -> list[str]:
    return sorted(path.name for path in (home / "sessions").iterdir())


ALL = ["new-1", "old-1", "old-2"]


def test_a_bare_number_is_refused_not_taken_as_seconds(sessions: dict[str, Path], isolated_home: Path) -> None:
    for age in ("30", "0", "1.5"):
        proc = invoke("sessions", "gc", "--older-than", age, "--yes", "--all-workspaces")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and f"'{age}' has no unit" in proc.stderr
        assert f"{age}d" in proc.stderr
    bad = invoke("sessions", "gc", "--older-than", "soon", "--yes")
    assert bad.returncode == 2 and "invalid duration 'soon'" in bad.stderr
    assert remaining(isolated_home) == ALL


def test_only_this_workspace_unless_all_workspaces(sessions: dict[str, Path], isolated_home: Path) -> None:
    here = invoke("sessions", "gc", "--older-than", "30d", "--yes", cwd=sessions["one"])
    assert here.returncode == 0, here.stderr
    assert remaining(isolated_home) == ["new-1", "old-2"]
    assert "removed old-1\n" in here.stderr and "old-2" not in here.stderr and here.stdout == ""

    other = invoke("sessions", "gc", "--older-than", "30d", "--yes", "-C", str(sessions["one"]))
    assert other.returncode == 0 and remaining(isolated_home) == ["new-1", "old-2"]

    everywhere = invoke("sessions", "gc", "--older-than", "30d", "--yes", "--all-workspaces")
    assert everywhere.returncode == 0, everywhere.stderr
    assert remaining(isolated_home) == ["new-1"] and "removed old-2\n" in everywhere.stderr


def test_without_a_terminal_it_needs_yes(sessions: dict[str, Path], isolated_home: Path) -> None:
    proc = invoke("sessions", "gc", "--older-than", "30d", "--all-workspaces")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--yes" in proc.stderr and "2 sessions of" in proc.stderr and "(s)" not in proc.stderr
    assert remaining(isolated_home) == ALL
    nothing = invoke("sessions", "gc", "--older-than", "3650d", "--all-workspaces")
    assert nothing.returncode == 0, nothing.stderr  # nothing to delete: nothing to confirm


def test_dry_run_lists_and_deletes_nothing(sessions: dict[str, Path], isolated_home: Path) -> None:
    proc = invoke("sessions", "gc", "--older-than", "30d", "--dry-run", "--all-workspaces")
    assert proc.returncode == 0, proc.stderr
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == ["would remove old-1",
                                                                        "would remove old-2"]
    assert remaining(isolated_home) == ALL


def gc_on_a_terminal(answer: str | None, cwd: Path, home: Path) -> tuple[int, str]:
    """`sessions gc` with a pty as stdin, stdout and stderr; `answer` is typed at the question
    (None: Ctrl-C instead, a SIGINT)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "sessions", "gc", "--older-than", "30d"],
                            stdin=follower, stdout=follower, stderr=follower, cwd=cwd,
                            env={**os.environ, "RECURSIVE_HOME": str(home), "NO_COLOR": "1"})
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 30
    answered = False
    last_sigint = 0.0
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if answer is None and b"[y/N]" in seen and time.monotonic() - last_sigint > 0.5 and proc.poll() is None:
            # again until it ends: one sent just before the prompt's read() begins is seen only
            # once that read returns (a person's Ctrl-C comes while it waits)
            proc.send_signal(signal.SIGINT)
            last_sigint = time.monotonic()
        elif not answered and answer is not None and b"[y/N]" in seen:
            os.write(leader, answer.encode() + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(leader)
    return proc.wait(timeout=30), seen.decode(errors="replace").replace("\r\n", "\n")


@pytest.mark.parametrize("answer", ["n", "y"])
def test_a_terminal_is_shown_the_list_and_asked(answer: str, sessions: dict[str, Path],
                                                isolated_home: Path) -> None:
    code, screen = gc_on_a_terminal(answer, sessions["one"], isolated_home)
    assert code == 0, screen
    question = screen.index("[y/N]")
    assert "old-1" in screen[:question] and "old-2" not in screen  # listed before the question
    if answer == "y":
        assert "removed old-1" in screen and remaining(isolated_home) == ["new-1", "old-2"]
    else:
        assert "nothing removed" in screen and remaining(isolated_home) == ALL


def test_ctrl_c_at_the_question_removes_nothing_and_exits_130(sessions: dict[str, Path],
                                                             isolated_home: Path) -> None:
    code, screen = gc_on_a_terminal(None, sessions["one"], isolated_home)
    assert code == 130, screen
    assert "nothing removed" in screen and remaining(isolated_home) == ALL
