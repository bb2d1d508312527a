"""New refs are written as git writes them (refs.create_ref), a new session's head is known
absent without asking git, and a turn with no tool call reads no history: a one-turn run on a
known workspace runs no git but its walk (`ls-files`) and `write-tree`, where it ran seven
processes, and git reads every ref it wrote. Where something stands in a new ref's way
(a file named as its folder, a packed ref above or below it, a held lock), nothing is written
here and git decides, as before."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke

from recursive_cli.features.checkpoints.refs import absent, create_ref


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    git(path, "config", "core.logAllRefUpdates", "false")
    return path


def a_commit(repo: Path, message: str = "c") -> str:
    tree = subprocess.run(["git", "--git-dir", str(repo), "hash-object", "-w", "-t", "tree", "--stdin"], input="",
                          check=True, capture_output=True, text=True).stdout.strip()  # the empty tree
    return subprocess.run(["git", "--git-dir", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree",
                           tree, "-m", message], check=True, capture_output=True, text=True).stdout.strip()


def test_a_new_ref_is_one_git_reads(repo: Path) -> None:
    oid = a_commit(repo)
    ref = "refs/recursive/s1/turns/1/before"
    assert absent(repo, ref)
    assert create_ref(repo, ref, oid)
    assert git(repo, "for-each-ref", "--format=%(refname) %(objectname)") == f"{ref} {oid}"
    assert not absent(repo, ref) and not (repo / (ref + ".lock")).exists()
    assert git(repo, "fsck", "--no-dangling") == ""


def test_what_stands_in_a_new_refs_way_leaves_it_to_git(repo: Path) -> None:
    oid = a_commit(repo)
    git(repo, "update-ref", "refs/x/a", oid)  # a loose ref named as the new one's folder
    assert absent(repo, "refs/x/a/b") and not create_ref(repo, "refs/x/a/b", oid)
    git(repo, "update-ref", "refs/y/a/b", oid)
    git(repo, "pack-refs", "--all")  # packed: under the new one, and above the next one
    assert not (repo / "refs" / "y" / "a" / "b").exists()
    assert not absent(repo, "refs/y/a/b")  # (packed only: it exists)
    assert not create_ref(repo, "refs/y/a", oid)
    assert not create_ref(repo, "refs/y/a/b/c", oid)
    (repo / "refs" / "z").mkdir()
    (repo / "refs" / "z" / "n.lock").write_text("")  # someone holds its lock
    assert not create_ref(repo, "refs/z/n", oid)
    assert not create_ref(repo, "refs/ok", "not-an-id")
    assert git(repo, "for-each-ref", "--format=%(refname)").split() == ["refs/x/a", "refs/y/a/b"]


class GitRuns:
    """The git subcommands `recursive` runs in this process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from recursive_cli.features.checkpoints import scan
        from recursive_cli.features.checkpoints.git import ShadowGit

        monkeypatch.setattr(scan, "_known", {})  # what a new `recursive` process knows
        self.commands: list[str] = []
        real = ShadowGit.run

        def run(shadow: ShadowGit, *args: str, **kwargs: Any) -> bytes:
            self.commands.append(args[0])
            return real(shadow, *args, **kwargs)

        monkeypatch.setattr(ShadowGit, "run", run)


def one_turn(workspace: Path, tmp_path: Path, replies: list[dict[str, Any]], session: str) -> Any:
    script = tmp_path / f"{session}.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    return invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "--session-id", session)


def test_a_one_turn_run_writes_its_refs_here_and_git_reads_them(workspace: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "a.txt").write_text("one\n")
    assert one_turn(workspace, tmp_path, [{"text": "warm"}], "warm").returncode == 0  # the shadow repo exists
    runs = GitRuns(monkeypatch)
    done = one_turn(workspace, tmp_path, [{"text": "hi"}], "s1")
    assert done.returncode == 0, done.stderr
    assert set(runs.commands) <= {"ls-files", "write-tree"}, runs.commands  # no update-ref, for-each-ref, log
    listed = invoke("checkpoints", "list", "s1", "--json")
    assert listed.returncode == 0, listed.stderr
    (turn,) = json.loads(listed.stdout)
    assert turn["turn"] == 1 and turn["files_changed"] == 0, turn


def test_a_turn_with_a_call_still_counts_what_it_changed(workspace: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "a.txt").write_text("one\n")
    assert one_turn(workspace, tmp_path, [{"text": "warm"}], "warm").returncode == 0
    runs = GitRuns(monkeypatch)
    done = one_turn(workspace, tmp_path, [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo two > a.txt"}}]}, {"text": "done"}], "s2")
    assert done.returncode == 0, done.stderr
    assert "checkpoint: turn 1 changed 1 file" in done.stderr
    assert "log" in runs.commands  # the call's window is read back
    restored = invoke("checkpoints", "restore", "s2", "--turn", "1", "--force")  # (a shell command's)
    assert restored.returncode == 0, restored.stderr
    assert (workspace / "a.txt").read_text() == "one\n"
