"""The per-step cost of checkpoints (issue 16, goal 2): a quiet window's head moves take git's
ref lock by linking a spare file of the ref's to `<ref>.lock` — no lock file made and freed per
move — and every other process still sees that lock as git's own."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from recursive_cli.features.checkpoints import refs
from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer
from recursive_cli.features.checkpoints.repo import head_ref

from .conftest import git_commands
from .test_fast_windows import head_on_disk, real_git


@pytest.fixture
def cp(watched_cp: GitCheckpointer) -> GitCheckpointer:
    watched_cp.close_window(watched_cp.open_window(1, "run_shell"))  # its open commit exists now
    return watched_cp


def _paths(cp: GitCheckpointer) -> tuple[Path, Path, Path]:
    ref = head_ref("s1")
    path = cp.git.git_dir / ref
    return path, path.with_name(path.name + ".lock"), cp.git.git_dir / refs.SPARES / ref


def test_a_quiet_window_locks_the_head_by_a_link_of_its_spare(cp: GitCheckpointer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path, lock, spare = _paths(cp)
    held: list[os.stat_result] = []
    overwrite = refs._overwrite

    def looking(target: Path, line: bytes) -> bool:  # what another process sees mid-move
        held.append(os.stat(lock))
        return overwrite(target, line)

    monkeypatch.setattr(refs, "_overwrite", looking)
    seen = git_commands(monkeypatch)
    before = head_on_disk(cp)
    window = cp.open_window(1, "run_shell")
    assert head_on_disk(cp) == window.commit
    cp.close_window(window)
    assert head_on_disk(cp) == before and seen == []
    assert [(s.st_ino, s.st_nlink) for s in held] == [(spare.stat().st_ino, 2)] * 2
    assert not lock.exists() and spare.stat().st_nlink == 1 and spare.read_bytes() == b""
    real_git(cp, "fsck", "--no-dangling")
    real_git(cp, "pack-refs", "--all", "--prune")  # as `sessions gc` does: the spare is no ref
    assert head_on_disk(cp) == before and spare.exists()


def test_git_sees_a_link_lock_as_its_lock(cp: GitCheckpointer) -> None:
    path, lock, spare = _paths(cp)
    assert refs._link_lock(spare, lock) is True
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        other = subprocess.run(["git", "--git-dir", str(cp.git.git_dir), "update-ref", head_ref("s1"),
                                path.read_text().strip()], capture_output=True, text=True, env=env)
        assert other.returncode != 0 and "lock" in other.stderr  # git waits for no one: it refuses
        assert refs._link_lock(spare, lock) is False  # … and so do we
    finally:
        lock.unlink()


def test_a_link_lock_left_by_a_killed_process_is_taken_over_once_old(
        cp: GitCheckpointer, monkeypatch: pytest.MonkeyPatch) -> None:
    path, lock, spare = _paths(cp)
    assert refs._link_lock(spare, lock) is True  # a run killed while it held the lock
    with pytest.raises(Exception, match="lock"):
        cp.open_window(1, "run_shell")  # fresh: it is a live one's for all we know
    assert lock.exists()
    monkeypatch.setattr(refs, "STALE_LOCK_SECONDS", 0.0)
    window = cp.open_window(1, "run_shell")
    assert head_on_disk(cp) == window.commit and not lock.exists()
    cp.close_window(window)


def test_without_hard_links_the_lock_file_is_made_as_git_makes_it(
        cp: GitCheckpointer, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(refs.os, "link", no_links)
    seen = git_commands(monkeypatch)
    before = head_on_disk(cp)
    window = cp.open_window(1, "run_shell")
    assert head_on_disk(cp) == window.commit
    cp.close_window(window)
    assert head_on_disk(cp) == before and seen == []
    assert not _paths(cp)[1].exists()


def test_a_ref_file_not_to_write_over_is_renamed_over_and_the_spare_left_empty(
        cp: GitCheckpointer, monkeypatch: pytest.MonkeyPatch) -> None:
    path, lock, spare = _paths(cp)
    before = head_on_disk(cp)
    os.link(path, path.with_name("second-name"))  # a second link: never written in place
    window = cp.open_window(1, "run_shell")
    assert head_on_disk(cp) == window.commit and path.stat().st_nlink == 1
    cp.close_window(window)
    assert head_on_disk(cp) == before
    assert not lock.exists() and spare.read_bytes() == b"" and spare.stat().st_nlink == 1


def test_a_stale_lock_is_taken_over_even_before_the_spare_exists(cp: GitCheckpointer) -> None:
    path, lock, spare = _paths(cp)
    spare.unlink(missing_ok=True)  # (a repository whose head was never moved here)
    lock.write_text("")
    old = time.time() - 120
    os.utime(lock, (old, old))  # left by a process killed a while ago
    window = cp.open_window(1, "run_shell")
    assert head_on_disk(cp) == window.commit and not lock.exists() and spare.exists()
    cp.close_window(window)
