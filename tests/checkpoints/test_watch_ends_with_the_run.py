"""A run's workspace watch ends with the run: its watches are removed first and its inotify
descriptor closed after git's processes, so neither the run's end nor the process's exit
waits on the kernel letting go of them, and a process that runs agent after agent (a fleet
worker, an SDK host) keeps no descriptor per workspace it once snapshotted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from clitools import invoke

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


def inotify_descriptors() -> dict[int, int]:
    """This process's inotify descriptors, each with the number of watches it holds (the
    kernel's own account, /proc/self/fdinfo)."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/self/fdinfo/{name}").read_text()
        except OSError:
            continue
        found[int(name)] = sum(line.startswith("inotify wd:") for line in info.splitlines())
    return found


def test_a_run_leaves_no_inotify_descriptor_behind(workspace: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.features.checkpoints import scan

    monkeypatch.setattr(scan, "_known", {})  # a fresh process: nothing watched yet
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("a = 1\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo b > b.txt"}}]},
                                  {"text": "done"}]), encoding="utf-8")
    before = inotify_descriptors()
    run = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    assert run.returncode == 0, run.stderr
    assert run.stdout == "done\n" and "checkpoint: turn 1 changed 1 file" in run.stderr
    assert set(inotify_descriptors()) <= set(before)  # (those of earlier tests in this process may remain)
    assert not any(known.watch for known in scan._known.values())


def test_an_ended_watch_holds_no_watches_before_its_descriptor_closes(workspace: Path, tmp_path: Path) -> None:
    from recursive_cli.features.checkpoints.repo import ensure_repo, shadow_git
    from recursive_cli.features.checkpoints.watch import watch_workspace

    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "a" / "b" / "c.txt").write_text("c\n")
    git = shadow_git("git", tmp_path / "home", workspace)
    ensure_repo(git, tmp_path / "home")
    before = inotify_descriptors()
    watch = watch_workspace(git)
    (fd, watches), = (item for item in inotify_descriptors().items() if item[0] not in before)
    assert watches == watch.folders == 3  # the workspace, a, a/b
    watch.end()
    assert inotify_descriptors()[fd] == 0  # still open, no watch left in it
    watch.close()
    assert fd not in inotify_descriptors()
