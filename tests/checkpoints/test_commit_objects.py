"""Snapshot commits are written by a long-lived `git hash-object`, as the very objects `git commit-tree` writes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from recursive_cli.features.checkpoints import GitCommandError
from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer, commit_text
from recursive_cli.features.checkpoints.git import IDENTITY, ShadowGit
from recursive_cli.features.checkpoints.pipes import GitPipes

from .conftest import git_commands


def real_git(repo: Path, *args: str, date: int | None = None, input: bytes | None = None) -> str:
    """stdout of the real git on a bare repository, with the snapshots' identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | IDENTITY | {"GIT_DIR": str(repo)}
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
    return subprocess.run(["git", *args], env=env, input=input, capture_output=True, check=True).stdout.decode()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def a_tree(repo: Path, name: str = "a.txt", text: bytes = b"a\n") -> str:
    blob = real_git(repo, "hash-object", "-w", "--stdin", input=text).strip()
    return real_git(repo, "mktree", input=f"100644 blob {blob}\t{name}\n".encode()).strip()


def gits_own(repo: Path, tree: str, parents: list[str], message: str, date: int) -> str:
    """The commit `git commit-tree` writes for the same input (its object removed again)."""
    args = [arg for parent in parents for arg in ("-p", parent)]
    oid = real_git(repo, "commit-tree", "--no-gpg-sign", tree, *args, "-m", message, date=date).strip()
    (repo / "objects" / oid[:2] / oid[2:]).unlink()
    return oid


@pytest.fixture
def pipes(repo: Path) -> GitPipes:
    return GitPipes(ShadowGit("git", repo, repo, repo / "index"))


@pytest.mark.parametrize("message", [
    's1: turn 1 before\n\n{"event": "before", "turn": 1, "by": "0a1b2c3d4e5f"}\n',
    "s1: turn 2 mcp__files__écrire starts\n\n{\"tool\": \"\\u00e9\"}\n",  # non-ASCII subject
])
def test_commits_are_the_objects_git_commit_tree_writes(repo: Path, pipes: GitPipes, message: str) -> None:
    tree, other = a_tree(repo), a_tree(repo, "b.txt", b"b\n")
    root = gits_own(repo, tree, [], message, 1_796_000_000)
    assert pipes.write_commit(commit_text(tree, [], message, 1_796_000_000)) == root
    child = gits_own(repo, other, [root], message, 1_796_000_007)
    assert pipes.write_commit(commit_text(other, [root], message, 1_796_000_007)) == child
    assert real_git(repo, "cat-file", "-t", child) == "commit\n"
    assert real_git(repo, "log", "--format=%H %P %T %at %s", child).splitlines() == [
        f"{child} {root} {other} 1796000007 {message.splitlines()[0]}",
        f"{root}  {tree} 1796000000 {message.splitlines()[0]}"]
    real_git(repo, "fsck", "--strict", "--no-dangling", child)  # (check=True: a bad object fails)
    pipes.close()
    assert [p.name for p in repo.iterdir() if p.name.startswith("commit-")] == []  # its text file too


def test_a_refused_object_is_an_error_and_the_next_one_is_written(repo: Path, pipes: GitPipes) -> None:
    with pytest.raises(GitCommandError, match="hash-object failed"):
        pipes.write_commit(b"not a commit\n")  # git checks the format, and exits
    tree = a_tree(repo)
    assert pipes.write_commit(commit_text(tree, [], "m\n", 1)) == gits_own(repo, tree, [], "m\n", 1)
    pipes.close()


def test_snapshots_and_windows_run_no_commit_tree(workspace: Path, isolated_home: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "a.txt").write_text("a")
    cp = GitCheckpointer(isolated_home, workspace, "s1")
    seen = git_commands(monkeypatch)
    before = cp.snapshot(1, "before")
    window = cp.open_window(1, "run_shell")
    (workspace / "b.txt").write_text("made by the call")
    cp.close_window(window)
    after = cp.snapshot(1, "after")
    assert "commit-tree" not in seen and "update-ref" not in seen
    assert sorted(cp.history(since=before.commit).own({1})) == ["b.txt"]
    repo = cp.git.git_dir
    real_git(repo, "fsck", "--strict", "--no-dangling")
    subjects = real_git(repo, "log", "--format=%s", after.commit).splitlines()
    assert subjects == ["s1: turn 1 after", "s1: turn 1 run_shell ended", "s1: turn 1 run_shell starts",
                        "s1: turn 1 before"]


def test_packed_history_is_committed_on_through_git(workspace: Path, isolated_home: Path) -> None:
    (workspace / "a.txt").write_text("a")
    cp = GitCheckpointer(isolated_home, workspace, "s1")
    first = cp.snapshot(1, "before")
    real_git(cp.git.git_dir, "gc", "--quiet")  # the head commit and its tree are packed now
    second = cp.snapshot(1, "after")
    parents = real_git(cp.git.git_dir, "log", "-1", "--format=%P", second.commit).split()
    assert parents == [first.commit]
