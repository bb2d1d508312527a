"""run_shell heard on the event loop itself: no helper thread per command, no process search
after a quick command that started nothing, and the same results where there is no pidfd."""

from __future__ import annotations

import asyncio
import errno
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from recursive_cli.core import tool as tool_base
from recursive_cli.core.tool import ToolContext
from recursive_cli.tools import shell_child
from recursive_cli.tools.shell import RunShellTool, ShellArgs


def _pidfd_works() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


needs_pidfd = pytest.mark.skipif(not _pidfd_works(), reason="no pidfd_open here")


def threads_of_this_process() -> set[str]:
    """The thread ids /proc lists for this process (what `ps -L` would show)."""
    return set(os.listdir("/proc/self/task"))


@needs_pidfd
def test_a_running_command_adds_no_thread_to_the_process(ctx: ToolContext) -> None:
    started = ctx.workspace / "started"
    seen: list[set[str]] = []

    async def scenario() -> str:
        before = threads_of_this_process()
        task = asyncio.ensure_future(RunShellTool().run(
            ShellArgs(command="touch started; sleep 0.3; echo done"), ctx))
        deadline = time.monotonic() + 10
        while not started.exists():
            assert time.monotonic() < deadline, "the command never started"
            await asyncio.sleep(0.01)
        seen.append(threads_of_this_process() - before)
        result = await task
        return result.content

    content = asyncio.run(scenario())
    assert content.startswith("done")
    assert "exit code: 0" in content
    assert seen == [set()]  # asyncio's child watcher would have started a waitpid thread


def test_a_quick_command_that_starts_nothing_needs_no_process_search(
        ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[int] = []
    real = tool_base.proc_entries

    def counted() -> list[tuple[int, int]]:
        scans.append(1)
        return real()

    monkeypatch.setattr(tool_base, "proc_entries", counted)

    async def scenario() -> list[int]:
        searched = []
        for _ in range(60):  # another process on the machine may start during any one of them
            before = len(scans)
            result = await RunShellTool().run(ShellArgs(command="true"), ctx)
            assert result.content.endswith(")") and "exit code: 0" in result.content
            searched.append(len(scans) - before)
            if searched[-1] == 0:
                break
        return searched

    searched = asyncio.run(scenario())
    if shell_child.last_pid() is None:
        pytest.skip("no kernel /proc/loadavg here: every command is searched for")
    assert searched[-1] == 0, f"every one of {len(searched)} quick commands listed all processes"


def test_a_quick_command_that_leaves_a_process_outside_its_group_still_has_it_stopped(
        call: Any, workspace: Path) -> None:
    started = time.monotonic()
    result = call("run_shell", command="setsid sleep 100 > /dev/null 2>&1 & echo child=$!")
    assert time.monotonic() - started < 10
    assert "left 1 process running" in result.content
    match = re.search(r"child=(\d+)", result.content)
    assert match is not None
    assert _gone_soon(int(match.group(1)))


def _gone_soon(pid: int, within: float = 5) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _no_pidfd(pid: int, flags: int = 0) -> int:
    raise OSError(errno.ENOSYS, "pidfd_open is not implemented")


def test_without_pidfd_commands_end_time_out_and_report_as_before(
        call: Any, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "pidfd_open", _no_pidfd, raising=False)
    ok = call("run_shell", command="echo out; echo err >&2; exit 3")
    assert ok.content.startswith("out\nerr")
    assert "exit code: 3" in ok.content and ok.is_error
    killed = call("run_shell", command="kill -9 $$")
    assert "the shell was killed by SIGKILL" in killed.content
    began = time.monotonic()
    slow = call("run_shell", command="sleep 100", timeout_seconds=0.5)
    assert time.monotonic() - began < 10
    assert "timed out after 0.5 s" in slow.content

    async def cancelled() -> None:
        task = asyncio.ensure_future(RunShellTool().run(
            ShellArgs(command="touch started; exec sleep 100"), ctx))
        deadline = time.monotonic() + 10
        while not (ctx.workspace / "started").exists():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert ctx.processes.groups == set()


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "RECURSIVE_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_the_api_keys_stay_hidden_and_the_overrides_apply(call: Any, monkeypatch: pytest.MonkeyPatch,
                                                          variable: str) -> None:
    monkeypatch.setenv(variable, "sk-ant-secret")
    monkeypatch.setenv("SOME_SETTING", "kept")
    monkeypatch.setenv("PAGER", "less")
    result = call("run_shell", command=f'echo "[${variable}] [$SOME_SETTING] [$PAGER]"; env')
    assert result.content.startswith("[] [kept] [cat]")
    assert "sk-ant-secret" not in result.content


def test_a_changed_path_is_searched_for_the_shell_afresh(call: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    first = call("run_shell", command="echo one")
    assert first.content.startswith("one")
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "bash").write_text("#!/bin/sh\necho \"our bash was run with $*\"\n")
    (folder / "bash").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    again = call("run_shell", command="echo two")
    assert again.content.startswith("our bash was run with -c echo two")


def test_a_shell_that_cannot_start_is_an_error_and_leaves_no_descriptor_open(
        call: Any, workspace: Path) -> None:
    call("run_shell", command="true")  # (whatever a first call opens for good is open now)
    before = len(os.listdir("/proc/self/fd"))
    workspace.rmdir()  # the shell cannot start in it
    result = call("run_shell", command="echo never")
    assert result.is_error and "FileNotFoundError" in result.content
    assert len(os.listdir("/proc/self/fd")) == before
