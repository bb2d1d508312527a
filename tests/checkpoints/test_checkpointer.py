"""GitCheckpointer and restore planning on real git in tmp_path, without the CLI.

What the session changes is done inside `tool_call(cp, turn)`, the window a tool call of the
session gets; changes made outside one are someone else's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer
from recursive_cli.features.checkpoints.restore import apply_restore, plan_restore
from recursive_cli.features.checkpoints.scan import NESTED_REPO, scan_workspace

from .conftest import state


@pytest.fixture
def cp(workspace: Path, isolated_home: Path) -> GitCheckpointer:
    return GitCheckpointer(isolated_home, workspace, "s1")


@contextlib.contextmanager
def tool_call(cp: GitCheckpointer, turn: int) -> Iterator[None]:
    """What the body changes is done by a tool call of the session in `turn`."""
    window = cp.open_window(turn, "run_shell")
    yield
    cp.close_window(window)


def test_an_unchanged_tree_stages_nothing_and_keeps_the_index(cp: GitCheckpointer, workspace: Path) -> None:
    for i in range(50):
        (workspace / f"f{i}.txt").write_text(str(i))
    first = cp.snapshot(1, "before")
    index_mtime = cp.git.index.stat().st_mtime_ns
    assert scan_workspace(cp.git).clean
    second = cp.snapshot(1, "after")
    assert second.tree == first.tree and second.files_changed == 0
    assert cp.git.index.stat().st_mtime_ns == index_mtime  # nothing re-hashed, index not rewritten
    (workspace / "f3.txt").write_text("changed")
    scan = scan_workspace(cp.git)
    assert scan.changed == ["f3.txt"]
    assert cp.snapshot(2, "before").files_changed == 1


def test_odd_file_names_round_trip(cp: GitCheckpointer, workspace: Path) -> None:
    names = ["with space.txt", "-leading-dash", "star*.txt", "ümlaut.txt", "new\nline", "colon:x", "[a].md"]
    for name in names:
        (workspace / name).write_text(name)
    cp.snapshot(1, "before")
    with tool_call(cp, 1):
        for name in names:
            (workspace / name).write_text("changed")
        (workspace / "made by turn").write_text("x")
    cp.snapshot(1, "after")
    plan = plan_restore(cp, 1)
    assert sorted(a.path for a in plan.actions) == sorted(names + ["made by turn"])
    apply_restore(cp, plan)
    assert {p.name: p.read_text() for p in workspace.iterdir()} == {name: name for name in names}


def test_nested_repositories_are_skipped_not_fatal(cp: GitCheckpointer, workspace: Path) -> None:
    (workspace / "vendor" / "lib").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=workspace / "vendor" / "lib", check=True)
    (workspace / "vendor" / "lib" / "code.py").write_text("x")
    (workspace / "app.py").write_text("y")
    snap = cp.snapshot(1, "before")
    assert [(s.path, s.reason) for s in snap.skipped] == [("vendor/lib", NESTED_REPO)]
    assert [c.path for c in cp.changes("4b825dc642cb6eb9a060e54bf8d69288fbee4904", snap.tree)] == ["app.py"]


def test_recursive_home_inside_the_workspace_is_never_snapshotted(workspace: Path) -> None:
    home = workspace / ".recursive-home"
    cp = GitCheckpointer(home, workspace, "s1")
    (workspace / "a.txt").write_text("a")
    snap = cp.snapshot(1, "before")
    assert (home / "checkpoints").is_dir()
    assert [c.path for c in cp.changes("4b825dc642cb6eb9a060e54bf8d69288fbee4904", snap.tree)] == ["a.txt"]


def test_callers_git_environment_is_ignored(cp: GitCheckpointer, workspace: Path,
                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    head = (workspace / ".git" / "HEAD").read_bytes()
    monkeypatch.setenv("GIT_DIR", str(workspace / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(workspace / ".git" / "index"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "")  # an empty identity would make commit-tree fail
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".gitconfig").write_text("[core]\n\tautocrlf = true\n[commit]\n\tgpgSign = true\n")
    (workspace / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    cp.snapshot(1, "before")
    assert not (workspace / ".git" / "index").exists()
    assert (workspace / ".git" / "HEAD").read_bytes() == head
    with tool_call(cp, 1):
        (workspace / "crlf.txt").write_bytes(b"changed")
    cp.snapshot(1, "after")
    apply_restore(cp, plan_restore(cp, 1))
    assert (workspace / "crlf.txt").read_bytes() == b"a\r\nb\r\n"


def test_a_tool_call_killed_before_its_end_owns_its_changes(cp: GitCheckpointer, workspace: Path,
                                                            isolated_home: Path) -> None:
    (workspace / "a.txt").write_text("a")
    cp.snapshot(1, "before")
    cp.snapshot(1, "after")
    cp.snapshot(2, "before")
    cp.open_window(2, "run_shell")
    (workspace / "a.txt").write_text("half-done")  # then kill -9: no end, no "after" snapshot
    (workspace / "b.txt").write_text("b")
    later = GitCheckpointer(isolated_home, workspace, "s1")  # another process reads it from disk
    assert sorted(later.history().own({2})) == ["a.txt", "b.txt"]
    plan = plan_restore(later, 2)
    # (a shell command's: someone else may have written them too, so a restore needs --force)
    assert plan.unsure == {"a.txt": "run_shell in turn 2", "b.txt": "run_shell in turn 2"}
    assert plan.conflicts == ["a.txt", "b.txt"]
    assert [(a.kind, a.path) for a in plan.actions] == [("restore", "a.txt"), ("remove", "b.txt")]


def test_restore_never_writes_through_a_symlink(cp: GitCheckpointer, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "conf").mkdir()
    (workspace / "conf" / "x.cfg").write_text("inside")
    cp.snapshot(1, "before")
    with tool_call(cp, 1):
        (workspace / "conf" / "x.cfg").unlink()
    cp.snapshot(1, "after")
    (workspace / "conf").rmdir()
    (workspace / "conf").symlink_to(outside)  # someone else puts a symlink where the folder was
    plan = plan_restore(cp, 1)
    result = apply_restore(cp, plan)
    assert result.blocked == ["conf/x.cfg"]
    assert list(outside.iterdir()) == []


def test_restore_then_restore_earlier(cp: GitCheckpointer, workspace: Path) -> None:
    (workspace / "a.txt").write_text("1")
    states = []
    for turn in (1, 2, 3):
        states.append(state(workspace))
        cp.snapshot(turn, "before")
        with tool_call(cp, turn):
            (workspace / "a.txt").write_text(str(turn + 1))
            (workspace / f"t{turn}.txt").write_text("t")
        cp.snapshot(turn, "after")
    apply_restore(cp, plan_restore(cp, 3))
    assert state(workspace) == states[2]
    (workspace / "untouched.txt").write_text("by hand")  # no turn touched it: not a conflict
    plan = plan_restore(cp, 2)
    assert plan.conflicts == sorted(plan.unsure) == ["a.txt", "t2.txt"] and plan.undone == [2]
    apply_restore(cp, plan)
    assert state(workspace) == {**states[1], "untouched.txt": ("file", b"by hand", False)}
    assert [t.turn for t in cp.turns() if t.rewound] == [2, 3]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_files_are_skipped(cp: GitCheckpointer, workspace: Path) -> None:
    secret = workspace / "secret.txt"
    secret.write_text("x")
    secret.chmod(0)
    try:
        snap = cp.snapshot(1, "before")
    finally:
        secret.chmod(0o600)
    assert [(s.path, s.reason) for s in snap.skipped] == [("secret.txt", "unreadable")]


def test_an_index_lock_left_by_a_killed_snapshot_is_cleared(cp: GitCheckpointer, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a")
    cp.snapshot(1, "before")
    cp.git.index.with_name("index.lock").write_text("")  # kill -9 in the middle of update-index
    (workspace / "a.txt").write_text("b")
    assert cp.snapshot(1, "after").files_changed == 1
