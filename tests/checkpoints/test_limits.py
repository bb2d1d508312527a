"""A big workspace, or a folder that is no project, costs a run a bounded time: checkpoints go
off for the session with one line that says why (issue 35)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from clitools import invoke, write_script

from .conftest import Agent, shell, stream

OFF = "checkpoint: off for this session"


def many_files(root: Path, count: int) -> None:
    for folder in range(count // 500):
        (root / f"d{folder}").mkdir()
        for i in range(500):
            (root / f"d{folder}" / f"f{i}.txt").write_bytes(b"x")


def edit_script(tmp_path: Path) -> Path:
    return write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "hi\n"}}]},
        {"text": "done"}])


def test_a_workspace_over_the_file_cap_runs_without_checkpoints_and_says_so_once(
        tmp_path: Path, workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many_files(workspace, 5000)
    monkeypatch.setenv("RECURSIVE_CHECKPOINT_MAX_FILES", "1000")
    agent = Agent(tmp_path, workspace, isolated_home)
    started = time.monotonic()
    proc = invoke("run", "go", "-C", str(workspace), "--session-id", "s1", "--provider", "scripted",
                  "--script", str(edit_script(tmp_path)), "--permission-mode", "accept-edits",
                  "-o", "stream-json")
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "note.txt").read_text() == "hi\n"  # the run went on
    assert proc.stderr.count(OFF) == 1, proc.stderr
    assert f"{workspace} holds over 1,000 files" in proc.stderr
    assert "RECURSIVE_CHECKPOINT_MAX_FILES" in proc.stderr and "--no-checkpoints" in proc.stderr
    notices = stream(proc, "checkpoint")
    assert len(notices) == 1 and notices[0]["enabled"] is False
    assert "holds over 1,000 files" in notices[0]["error"]
    assert agent.refs() == {}  # not one snapshot: no hashing of 5,000 files
    assert took < 5  # (the run without checkpoints takes a fraction of a second)


def test_a_slow_walk_turns_checkpoints_off_within_the_budget(
        tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many_files(workspace, 5000)
    monkeypatch.setenv("RECURSIVE_CHECKPOINT_BUDGET", "0.001")
    proc = invoke("run", "go", "-C", str(workspace), "--provider", "scripted",
                  "--script", str(edit_script(tmp_path)), "--permission-mode", "accept-edits")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count(OFF) == 1, proc.stderr
    assert "took over 0.001 s" in proc.stderr


def test_the_home_folder_is_no_project(tmp_path: Path, workspace: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "a.txt").write_text("a")
    monkeypatch.setenv("HOME", str(workspace))
    proc = invoke("run", "go", "-C", str(workspace), "--provider", "scripted",
                  "--script", str(edit_script(tmp_path)), "--permission-mode", "accept-edits",
                  "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count(OFF) == 1, proc.stderr
    assert f"{workspace} is the home folder" in proc.stderr
    assert "checkpoint_list" not in stream(proc, "init")[0]["tools"]
    assert [n["enabled"] for n in stream(proc, "checkpoint")] == [False]


def test_a_workspace_within_the_cap_still_checkpoints(
        tmp_path: Path, workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many_files(workspace, 500)
    monkeypatch.setenv("RECURSIVE_CHECKPOINT_MAX_FILES", "1000")
    agent = Agent(tmp_path, workspace, isolated_home)
    proc = agent.turn("go", {"tool_calls": [{"name": "write_file",
                                             "arguments": {"path": "note.txt", "content": "hi\n"}}]},
                      flags=("--permission-mode", "accept-edits"))
    assert OFF not in proc.stderr
    assert "turn 1 changed 1 file" in proc.stderr
    assert set(agent.refs()) == {"head", "turns/1/before", "turns/1/after"}


def test_a_workspace_that_grows_over_the_cap_turns_checkpoints_off_without_hashing_it(
        tmp_path: Path, workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many_files(workspace, 500)
    monkeypatch.setenv("RECURSIVE_CHECKPOINT_MAX_FILES", "1000")
    agent = Agent(tmp_path, workspace, isolated_home)
    proc = agent.turn("grow", shell("mkdir gen && cd gen && seq 2000 | xargs touch"),
                      shell("echo more > more.txt"))
    assert (workspace / "more.txt").is_file() and len(list((workspace / "gen").iterdir())) == 2000
    assert proc.stderr.count(OFF) == 1, proc.stderr
    assert f"{workspace} grew to over 1,000 files" in proc.stderr
    assert "turns/1/after" not in agent.refs() and "turns/1/before" in agent.refs()


def test_a_workspace_that_grew_over_the_cap_since_the_last_run_goes_off_at_the_first_walk(
        tmp_path: Path, workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last run's snapshot was within the cap, so this run's first walk is the check: the
    new files it lists count with the kept index's, and it stops at the cap, hashing nothing."""
    many_files(workspace, 500)
    monkeypatch.setenv("RECURSIVE_CHECKPOINT_MAX_FILES", "1000")
    first = Agent(tmp_path, workspace, isolated_home, session_id="s1")
    proc = first.turn("go", shell("true"))
    assert OFF not in proc.stderr and set(first.refs()) == {"head", "turns/1/before", "turns/1/after"}
    many_files(workspace / "d0", 1000)  # 500 + 1,000 now: over the cap
    second = Agent(tmp_path, workspace, isolated_home, session_id="s2")
    proc = second.turn("go", {"tool_calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "hi\n"}}]},
                       flags=("--permission-mode", "accept-edits", "-o", "stream-json"))
    assert (workspace / "note.txt").read_text() == "hi\n"  # the run went on
    assert proc.stderr.count(OFF) == 1, proc.stderr
    assert f"{workspace} holds over 1,000 files" in proc.stderr
    assert [n["enabled"] for n in stream(proc, "checkpoint")] == [False]
    assert second.refs() == {}  # not one snapshot of this session: nothing of the new files hashed


def test_a_slow_first_walk_after_a_run_within_the_limits_turns_checkpoints_off(
        tmp_path: Path, workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many_files(workspace, 5000)
    first = Agent(tmp_path, workspace, isolated_home, session_id="s1")
    assert OFF not in first.turn("go").stderr
    monkeypatch.setenv("RECURSIVE_CHECKPOINT_BUDGET", "0.001")
    proc = Agent(tmp_path, workspace, isolated_home, session_id="s2").turn("go", shell("true"))
    assert proc.stderr.count(OFF) == 1, proc.stderr
    assert "took over 0.001 s" in proc.stderr
