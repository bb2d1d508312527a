"""Tool calls that change nothing cost as little git as their guarantees allow, and keep them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer

from .conftest import git_commands


@pytest.fixture
def cp(watched_cp: GitCheckpointer) -> GitCheckpointer:
    return watched_cp


def chain(cp: GitCheckpointer) -> list[str]:
    """The subjects of the session's chain of snapshots, newest first."""
    head = cp.head()
    assert head is not None
    return cp.git.run("log", "--format=%s", head[0]).decode().splitlines()


def loose_objects(cp: GitCheckpointer) -> set[str]:
    root = cp.git.git_dir / "objects"
    return {folder.name + path.name for folder in root.iterdir() if len(folder.name) == 2 for path in folder.iterdir()}


def test_calls_that_change_nothing_leave_no_trace_and_commit_once(
        cp: GitCheckpointer, monkeypatch: pytest.MonkeyPatch) -> None:
    before = chain(cp)
    objects = loose_objects(cp)
    seen = git_commands(monkeypatch)
    for _ in range(5):
        cp.close_window(cp.open_window(1, "run_shell"))
    seen = list(seen)
    assert chain(cp) == before  # no window of them is left in the chain
    assert "write-tree" not in seen  # the index did not change: its tree is known
    assert len(loose_objects(cp) - objects) == 1  # the first call's open commit serves the others
    assert set(seen) <= {"commit-tree", "update-ref"}  # (the refs move without git now)


def test_a_change_after_quiet_calls_is_the_sessions_own(cp: GitCheckpointer, workspace: Path) -> None:
    for _ in range(3):
        cp.close_window(cp.open_window(1, "run_shell"))
    window = cp.open_window(1, "run_shell")
    (workspace / "f3.txt").write_text("changed by the call")
    cp.close_window(window)
    cp.close_window(cp.open_window(1, "run_shell"))
    own = cp.history().own({1})
    assert sorted(own) == ["f3.txt"] and own["f3.txt"].status == "M"


def test_a_change_between_quiet_calls_is_not_the_sessions(cp: GitCheckpointer, workspace: Path) -> None:
    cp.close_window(cp.open_window(1, "run_shell"))
    (workspace / "f4.txt").write_text("someone else")  # between two calls: not ours
    cp.close_window(cp.open_window(1, "run_shell"))
    window = cp.open_window(1, "run_shell")
    (workspace / "new.txt").write_text("ours")
    cp.close_window(window)
    assert sorted(cp.history().own({1})) == ["new.txt"]


def test_the_same_size_and_time_is_still_a_change(cp: GitCheckpointer, workspace: Path) -> None:
    cp.close_window(cp.open_window(1, "run_shell"))
    target = workspace / "f5.txt"
    info = target.stat()
    window = cp.open_window(1, "run_shell")
    target.write_text("9")  # same size as "5"
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    cp.close_window(window)
    assert sorted(cp.history().own({1})) == ["f5.txt"]


def test_an_index_staged_by_another_process_is_read_again(cp: GitCheckpointer, workspace: Path,
                                                          isolated_home: Path) -> None:
    first = cp.capture().tree
    (workspace / "f6.txt").write_text("staged elsewhere")
    other = GitCheckpointer(isolated_home, workspace, "s2")  # another run on the workspace
    theirs = other.capture().tree
    assert theirs != first
    assert cp.capture().tree == theirs


def test_a_reused_open_commit_that_is_gone_is_committed_again(cp: GitCheckpointer) -> None:
    window = cp.open_window(1, "run_shell")
    cp.close_window(window)
    loose = cp.git.git_dir / "objects" / window.commit[:2] / window.commit[2:]
    loose.chmod(0o600)
    loose.unlink()  # as `git gc --prune` would, nothing referring to it
    again = cp.open_window(1, "run_shell")
    assert again.made > window.made  # written anew (the same id, when in the same second)
    cp.git.run("cat-file", "-e", again.commit)  # the object is there again
    assert cp.head() == (again.commit, again.tree)
    cp.close_window(again)
