"""How checkpoints behave inside runs: no git, broken storage, the agent's tools, and gc."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from clitools import invoke, json_lines, write_script

from recursive_cli.features.checkpoints.gc import OLD_SPARES
from recursive_cli.features.checkpoints.repo import shadow_folder

from .conftest import Agent, shell, stream


def test_without_git_the_run_says_so_once_and_goes_on(tmp_path: Path, workspace: Path) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    if shutil.which("bwrap"):  # (the commands' sandbox is there, git is not)
        (empty / "bwrap").symlink_to(shutil.which("bwrap") or "")
    script = write_script(tmp_path / "s.json", [{"tool_calls": [{"name": "list_dir", "arguments": {}}]},
                                                 {"text": "fine"}])
    proc = invoke("run", "hi", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "-o", "stream-json", env={"PATH": str(empty)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("git is not installed") == 1
    assert "checkpoint_list" not in stream(proc, "init")[0]["tools"]
    notices = stream(proc, "checkpoint")
    assert notices and all(n["enabled"] is False for n in notices)
    assert json_lines(proc.stdout)[-1]["subtype"] == "success"


def test_a_failing_snapshot_never_ends_the_run(agent: Agent, workspace: Path) -> None:
    (agent.home).mkdir(parents=True, exist_ok=True)
    (agent.home / "checkpoints").write_text("not a folder")  # every snapshot fails
    proc = agent.turn("edit", shell("echo x > x.txt"))
    assert proc.stdout == "done: edit\n"
    assert proc.stderr.count("warning: checkpoint before turn 1 failed") == 1
    assert "checkpoint after turn 1 failed" not in proc.stderr  # shown once, recorded every time
    assert [(r["phase"], "error" in r) for r in agent.records("checkpoint")] == [
        ("before", True), ("tool", True), ("after", True)]  # the snapshot before run_shell too
    assert (workspace / "x.txt").read_text() == "x\n"


def test_the_agent_reads_its_own_checkpoints(agent: Agent, workspace: Path) -> None:
    agent.turn("first", shell("echo one > one.txt"))
    proc = agent.turn("second", shell("echo two > two.txt"),
                      {"tool_calls": [{"name": "checkpoint_list", "arguments": {}},
                                      {"name": "checkpoint_list", "arguments": {"turn": 1}},
                                      {"name": "checkpoint_diff", "arguments": {}},
                                      {"name": "checkpoint_diff", "arguments": {"turn": 7}}]},
                      flags=("-o", "stream-json"))
    results = [block for line in json_lines(proc.stdout) if line["type"] == "user"
               for block in line["message"]["content"]]
    listing, turn_one, current, missing = (r["content"] for r in results[1:])
    assert listing == "turn 1: 1 file changed\nturn 2: 1 file changed so far"
    assert turn_one == "added: one.txt"
    assert "two.txt | 1 +" in current and "+two" in current and "one.txt" not in current
    assert results[4]["is_error"] and "no checkpoint for turn 7" in missing


def test_sessions_gc_prunes_the_refs_of_removed_sessions(tmp_path: Path, workspace: Path,
                                                         isolated_home: Path) -> None:
    kept = Agent(tmp_path, workspace, isolated_home, "kept")
    removed = Agent(tmp_path, workspace, isolated_home, "removed")
    kept.turn("a", shell("echo a > a.txt"))
    removed.turn("b", shell("echo b > b.txt"), shell("true"), shell("true"))  # (quiet calls: its noted opens)
    noted = shadow_folder(isolated_home, workspace) / "open-removed"
    assert removed.refs() and kept.refs() and noted.is_file()
    assert invoke("sessions", "rm", "removed").returncode == 0
    assert removed.refs()  # rm leaves them: gc is what frees space
    spares = shadow_folder(isolated_home, workspace) / "repo" / OLD_SPARES / "refs" / "recursive"
    for session in ("kept", "removed"):  # as earlier versions' head moves left them
        (spares / session).mkdir(parents=True, exist_ok=True)
        (spares / session / "head").touch()
    gc = invoke("sessions", "gc", "--older-than", "30d")
    assert gc.returncode == 0, gc.stderr
    assert removed.refs() == {} and set(kept.refs()) == {"head", "turns/1/before", "turns/1/after"}
    assert not (spares / "removed").exists() and (spares / "kept" / "head").is_file() and not noted.exists()
    assert kept.checkpoints("restore", "--turn", "1", "--force").returncode == 0  # (a shell command's)
    assert not (workspace / "a.txt").exists() and (workspace / "b.txt").exists()


def test_gc_drops_the_shadow_repository_of_a_workspace_with_no_sessions(
        agent: Agent, workspace: Path) -> None:
    agent.turn("a", shell("echo a > a.txt"))
    shadow = agent.home / "checkpoints"
    assert len(list(shadow.iterdir())) == 1
    assert invoke("sessions", "rm", "s1").returncode == 0
    assert invoke("sessions", "gc", "--older-than", "1d", "--dry-run").returncode == 0
    assert len(list(shadow.iterdir())) == 1  # a dry run removes nothing
    assert invoke("sessions", "gc", "--older-than", "1d").returncode == 0
    assert list(shadow.iterdir()) == []


def test_library_enable_checkpoints(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    from recursive_cli import AgentRuntime, Settings
    from recursive_cli.providers.scripted import ScriptedProvider

    provider = ScriptedProvider([{"tool_calls": [{"name": "run_shell",
                                  "arguments": {"command": "echo hi > hi.txt"}}]}, {"text": "ok"}])
    runtime = AgentRuntime.builder().settings(Settings(workspace=workspace)).provider(provider).build()
    assert not runtime.checkpoints_enabled()
    assert runtime.enable_checkpoints(isolated_home, "lib-1")
    assert runtime.checkpoints_enabled() and "checkpoint_diff" in runtime.tools.names()
    asyncio.run(runtime.run("say hi"))
    agent = Agent(tmp_path, workspace, isolated_home, "lib-1")
    assert set(agent.refs()) == {"head", "turns/1/before", "turns/1/after"}


def test_a_prepared_checkpointer_sees_what_changed_before_the_first_turn(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    """A launch begins the first snapshot before it builds the runtime (prepared_checkpointer):
    a file written between that and the turn is in the turn's "before", none of the turn's."""
    import subprocess

    from recursive_cli import AgentRuntime, Settings
    from recursive_cli.features.checkpoints.observer import prepared_checkpointer
    from recursive_cli.providers.scripted import ScriptedProvider

    (workspace / "old.txt").write_text("old\n")
    prepared = prepared_checkpointer(isolated_home, workspace, "prep-1")
    assert prepared is not None
    prepared.prepared()  # (its first walk is done: the next one must notice what comes now)
    (workspace / "new.txt").write_text("new\n")
    runtime = AgentRuntime.builder().settings(Settings(workspace=workspace)).provider(
        ScriptedProvider([{"text": "ok"}])).session_id("prep-1").build()
    assert runtime.enable_checkpoints(isolated_home, "prep-1", prepared=prepared)
    assert runtime.feature(type(prepared)) is prepared  # taken, not made again
    asyncio.run(runtime.run("hi"))
    repo = shadow_folder(isolated_home, workspace) / "repo"
    listed = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "-r", "--name-only",
                             "refs/recursive/prep-1/turns/1/before"], capture_output=True, text=True, check=True)
    assert {"old.txt", "new.txt"} <= set(listed.stdout.split())


def test_a_prepared_checkpointer_of_another_session_is_not_taken(workspace: Path, isolated_home: Path) -> None:
    from recursive_cli import AgentRuntime, Settings
    from recursive_cli.features.checkpoints.observer import prepared_checkpointer
    from recursive_cli.providers.scripted import ScriptedProvider

    prepared = prepared_checkpointer(isolated_home, workspace, "other")
    assert prepared is not None
    runtime = AgentRuntime.builder().settings(Settings(workspace=workspace)).provider(
        ScriptedProvider([{"text": "ok"}])).session_id("mine").build()
    assert runtime.enable_checkpoints(isolated_home, "mine", prepared=prepared)
    taken = runtime.feature(type(prepared))
    assert taken is not None and taken is not prepared and taken.session_id == "mine"
    asyncio.run(runtime.run("hi"))
