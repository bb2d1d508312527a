"""A run's snapshots watch the workspace from their first walk: a turn that changed nothing
ends without walking it again (one `git ls-files` walk for the whole one-turn run, where
there were two), and a turn that changed something still reports exactly what it changed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


class Walks:
    """The `git ls-files` walks of the workspace (not the watch's listing of ignored folders)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import subprocess

        from recursive_cli.features.checkpoints import scan

        monkeypatch.setattr(scan, "_known", {})  # what a new `recursive` process knows: no walk, no watch yet
        self.count = 0
        real = subprocess.Popen.__init__

        def popen(proc: subprocess.Popen[bytes], argv: list[str], *args: Any, **kwargs: Any) -> None:
            if argv[1:2] == ["ls-files"] and "--modified" in argv:  # (the first walk's, bounded, or any other)
                self.count += 1
            real(proc, argv, *args, **kwargs)

        monkeypatch.setattr(subprocess.Popen, "__init__", popen)


def one_turn(workspace: Path, tmp_path: Path, replies: list[dict[str, Any]], session: str = "s1") -> Any:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    return invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "--session-id", session)


def test_a_turn_that_changes_nothing_walks_the_workspace_once(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("a = 1\n")
    one_turn(workspace, tmp_path, [{"text": "warm"}], "warm")  # the shadow index knows the files now
    walks = Walks(monkeypatch)
    run = one_turn(workspace, tmp_path, [{"tool_calls": [{"name": "read_file", "arguments": {"path": "src/a.py"}}]},
                                         {"text": "read it"}])
    assert run.returncode == 0, run.stderr
    assert run.stdout == "read it\n" and "changed" not in run.stderr
    assert walks.count == 1  # the turn's "before" walk; its "after" is known from the watch


def test_a_turn_that_changes_a_file_is_still_seen_whole(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "a.txt").write_text("one\n")
    one_turn(workspace, tmp_path, [{"text": "warm"}], "warm")
    walks = Walks(monkeypatch)
    run = one_turn(workspace, tmp_path, [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo two > a.txt && mkdir -p new && echo b > new/b.txt"}}]},
        {"text": "done"}])
    assert run.returncode == 0, run.stderr
    assert "checkpoint: turn 1 changed 2 files" in run.stderr
    shown = invoke("checkpoints", "diff", "s1", "1")
    assert shown.returncode == 0, shown.stderr
    assert "+two" in shown.stdout and "new/b.txt" in shown.stdout
    assert walks.count >= 2  # the shell's window saw the change: walked
