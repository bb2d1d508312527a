"""run_shell with real subprocesses: exit codes, output caps, timeouts and process groups."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from recursive_cli.core.tool import ProcessTracker, ToolContext, live_processes
from recursive_cli.tools import shell
from recursive_cli.tools.shell import HeadTailBuffer, RunShellTool, ShellArgs


def gone(pid: int) -> bool:
    """Whether `pid` no longer runs (a zombie nobody reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_runs_in_workspace_and_reports_exit_code(call, workspace: Path) -> None:
    result = call("run_shell", command="pwd; echo err >&2")
    assert not result.is_error
    lines = result.content.splitlines()
    assert Path(lines[0]).resolve() == workspace.resolve()
    assert "err" in lines
    assert re.search(r"exit code: 0 \(\d+\.\d s\)$", result.content)
    assert re.fullmatch(r"exit 0, \d+\.\d s", result.summary)


def test_nonzero_exit_is_an_error(call) -> None:
    result = call("run_shell", command="echo boom; exit 3")
    assert result.is_error
    assert result.content.startswith("boom")
    assert re.search(r"exit code: 3 \(", result.content.splitlines()[-1])
    assert result.summary.startswith("exit 3, ")


def test_stdin_is_closed(call) -> None:
    result = call("run_shell", command="cat; echo done", timeout_seconds=5)
    assert "done" in result.content and not result.is_error


def test_huge_output_is_capped_with_head_and_tail(call, ctx: ToolContext) -> None:
    command = "echo HEAD-MARK; head -c 20000000 /dev/zero | tr '\\0' x; echo; echo TAIL-MARK"
    result = call("run_shell", command=command, timeout_seconds=60)
    assert not result.is_error
    assert len(result.content) <= ctx.output_limit
    assert result.content.startswith("HEAD-MARK")
    assert "TAIL-MARK" in result.content
    omitted = int(re.search(r"\[(\d+) bytes of output omitted\]", result.content).group(1))
    assert omitted > 19_900_000


def test_timeout_kills_the_whole_process_group(call) -> None:
    started = time.monotonic()
    result = call("run_shell", command="sleep 100 & echo child=$!; sleep 100", timeout_seconds=1)
    assert time.monotonic() - started < 10
    assert result.is_error
    assert "timed out after 1 s" in result.content and result.summary == "timed out after 1 s"
    child = int(re.search(r"child=(\d+)", result.content).group(1))
    deadline = time.monotonic() + 5
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(child)


async def until(predicate: Callable[[], bool], timeout: float = 10) -> None:
    """Let the event loop run until `predicate` holds (a marker, not a guessed sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


def test_group_is_tracked_while_running(ctx: ToolContext) -> None:
    seen: list[set[int]] = []
    started = ctx.workspace / "started"

    async def scenario() -> None:
        task = asyncio.ensure_future(RunShellTool().run(
            ShellArgs(command="touch started; exec sleep 5"), ctx))
        await until(lambda: started.exists() and bool(ctx.processes.groups))  # it runs, supervised
        seen.append(set(ctx.processes.groups))
        ctx.processes.kill_all()
        await task

    asyncio.run(scenario())
    assert len(seen[0]) == 1
    assert ctx.processes.groups == set()


def test_cancel_kills_the_group_and_propagates(ctx: ToolContext) -> None:
    async def scenario() -> int:
        command = "sleep 100 & echo $! > child.pid.tmp; mv child.pid.tmp child.pid; sleep 100"
        task = asyncio.ensure_future(RunShellTool().run(ShellArgs(command=command), ctx))
        await until(lambda: (ctx.workspace / "child.pid").exists() and bool(ctx.processes.groups))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return int((ctx.workspace / "child.pid").read_text())

    child = asyncio.run(scenario())
    deadline = time.monotonic() + 5
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(child)
    assert ctx.processes.groups == set()


def wait_gone(*pids: int, within: float = 5) -> bool:
    """Whether every one of `pids` is gone within `within` seconds."""
    deadline = time.monotonic() + within
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return all(gone(pid) for pid in pids)


def read_pid(path: Path, within: float = 10) -> int:
    """The pid a command wrote to `path`, waiting for it to appear."""
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return int(path.read_text())


def test_background_process_holding_output_does_not_block(call, workspace: Path) -> None:
    started = time.monotonic()
    result = call("run_shell", command="sleep 30 & echo $! > pid; echo started",
                  timeout_seconds=20)
    assert time.monotonic() - started < 10
    assert not result.is_error
    assert "the shell left 1 process running" in result.content
    assert "run_background" in result.content and "still holds" not in result.content
    assert wait_gone(int((workspace / "pid").read_text()))


def test_leftovers_are_stopped_even_outside_the_group(call, workspace: Path) -> None:
    command = ("sleep 300 & echo $! > a; setsid sleep 300 & echo $! > b; "
               "nohup sleep 300 > /dev/null 2>&1 & echo $! > c; "
               "(setsid sh -c 'sleep 300 & echo $! > d; wait' > /dev/null &); "
               "while [ ! -s d ]; do sleep 0.01; done")
    result = call("run_shell", command=command, timeout_seconds=20)
    assert not result.is_error, result.content
    assert re.search(r"the shell left \d+ processes running", result.content)
    pids = [int((workspace / name).read_text()) for name in "abcd"]
    assert wait_gone(*pids), [pid for pid in pids if not gone(pid)]


def test_a_leftover_ignoring_sigterm_is_killed(call, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell, "KILL_GRACE_SECONDS", 0.2)  # how long SIGTERM gets is not the point
    command = ("sh -c 'trap \"\" TERM; echo $$ > pid; exec sleep 300' > /dev/null & "
               "while [ ! -s pid ]; do sleep 0.01; done")
    result = call("run_shell", command=command, timeout_seconds=20)
    assert "stopped when it exited" in result.content
    assert wait_gone(int((workspace / "pid").read_text()))


def test_a_stopped_leftover_is_stopped_too(call, workspace: Path) -> None:
    result = call("run_shell", command="sleep 300 & echo $! > pid; kill -STOP $!")
    assert "stopped when it exited" in result.content
    assert wait_gone(int((workspace / "pid").read_text()))


def test_a_command_that_leaves_nothing_says_nothing(call) -> None:
    result = call("run_shell", command="sleep 0.01 & wait; echo ok")
    assert "left" not in result.content and result.content.startswith("ok")


def test_output_held_by_an_unfindable_process_does_not_block(call, workspace: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that left both the group and the environment marker cannot be found; its
    hold on the output only costs the drain time, and the model is told."""
    monkeypatch.setattr(shell, "DRAIN_SECONDS", 0.2)  # how long the drain waits is not the point
    command = "setsid env -i sh -c 'echo $$ > pid; exec sleep 60' & while [ ! -s pid ]; do sleep 0.01; done"
    started = time.monotonic()
    result = call("run_shell", command=command, timeout_seconds=20)
    pid = int((workspace / "pid").read_text())
    try:
        assert time.monotonic() - started < 10
        assert "still holds its output open" in result.content
    finally:
        os.kill(pid, signal.SIGKILL)


def test_commands_running_side_by_side_keep_their_own_processes(ctx: ToolContext) -> None:
    """One command's clean-up must not touch what another, still running, started."""
    workspace = ctx.workspace

    async def scenario() -> tuple[bool, str]:
        longer = asyncio.ensure_future(RunShellTool().run(ShellArgs(
            command="setsid sleep 300 & echo $! > long.pid; while [ ! -f stop ]; do sleep 0.02; done; "
                    "kill $(cat long.pid)"), ctx))
        pid = await asyncio.to_thread(read_pid, workspace / "long.pid")
        short = await RunShellTool().run(ShellArgs(command="sleep 300 &"), ctx)
        survived = not gone(pid)
        (workspace / "stop").touch()
        await longer
        return survived, short.content

    survived, short = asyncio.run(scenario())
    assert "the shell left 1 process running" in short
    assert survived


def test_kill_all_reaches_processes_that_left_the_group(ctx: ToolContext) -> None:
    async def scenario() -> int:
        command = "setsid sleep 300 & echo $! > pid; sleep 300"
        task = asyncio.ensure_future(RunShellTool().run(ShellArgs(command=command), ctx))
        pid = await asyncio.to_thread(read_pid, ctx.workspace / "pid")
        ctx.processes.kill_all()
        killed = wait_gone(pid)  # blocking: the command's own clean-up cannot run meanwhile
        await task
        return killed

    assert asyncio.run(scenario())


def test_commands_carry_a_marker_under_the_runs(call, ctx: ToolContext) -> None:
    result = call("run_shell", command="echo $RECURSIVE_TOOL_COMMAND")
    assert result.content.startswith(ctx.processes.run_marker + ".")


def test_a_nested_run_marks_its_commands_under_the_outer_command(monkeypatch) -> None:
    monkeypatch.setenv("RECURSIVE_TOOL_COMMAND", "outer.3")
    tracker = ProcessTracker()
    assert tracker.run_marker.startswith("outer.3.")
    assert tracker.new_marker() != tracker.new_marker()
    assert live_processes("outer.3") == set()  # nothing here carries it


def test_invalid_utf8_is_replaced(call) -> None:
    result = call("run_shell", command="printf 'a\\377b\\n'")
    assert "a\ufffdb" in result.content


def test_head_tail_buffer_bounds_memory() -> None:
    buffer = HeadTailBuffer(half=10)
    for _ in range(1000):
        buffer.write(b"0123456789abcdef")
        assert len(buffer.tail) <= 2 * 10 + 16
    text = buffer.text()
    assert text.startswith("0123456789\n")
    assert text.endswith("\n6789abcdef")
    assert "15980 bytes of output omitted" in text
    small = HeadTailBuffer(half=10)
    small.write(b"hello")
    assert small.text() == "hello"


def test_no_output(call) -> None:
    assert call("run_shell", command="true").content.startswith("(no output)")


def test_api_key_is_not_passed_to_commands(call, monkeypatch) -> None:
    monkeypatch.setenv("RECURSIVE_API_KEY", "sk-secret")
    assert "sk-secret" not in call("run_shell", command="env").content


def test_killed_by_signal(call) -> None:
    result = call("run_shell", command="kill -TERM $$")
    assert result.is_error and "SIGTERM" in result.content
    assert "exit code: 143" in result.content
