"""run_shell with real subprocesses: exit codes, output caps, timeouts and process groups."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from recursive_cli.tools.base import ToolContext
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


def test_group_is_tracked_while_running(ctx: ToolContext) -> None:
    seen: list[set[int]] = []

    async def scenario() -> None:
        task = asyncio.ensure_future(RunShellTool().run(ShellArgs(command="sleep 5"), ctx))
        await asyncio.sleep(0.5)
        seen.append(set(ctx.processes.groups))
        ctx.processes.kill_all()
        await task

    asyncio.run(scenario())
    assert len(seen[0]) == 1
    assert ctx.processes.groups == set()


def test_cancel_kills_the_group_and_propagates(ctx: ToolContext) -> None:
    async def scenario() -> int:
        command = "sleep 100 & echo $! > child.pid; sleep 100"
        task = asyncio.ensure_future(RunShellTool().run(ShellArgs(command=command), ctx))
        await asyncio.sleep(0.5)
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


def test_background_process_holding_output_does_not_block(call) -> None:
    started = time.monotonic()
    result = call("run_shell", command="sleep 30 & echo started", timeout_seconds=20)
    assert time.monotonic() - started < 10
    assert not result.is_error
    assert "still running" in result.content


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
