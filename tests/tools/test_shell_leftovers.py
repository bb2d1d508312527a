"""Issue 12 through the real CLI: nothing a shell command starts outlives it.

Whatever `run_shell` (or a goal check) leaves running, in its process group or escaped from it
with `setsid` or `nohup`, is stopped when the shell exits; an interrupt (SIGINT, SIGTERM) in the
middle of a command leaves nothing behind either; and a background child holding the output
open does not keep the tool waiting.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clitools import host_pid, invoke, json_lines, write_script

from recursive_cli.tools.shell import DRAIN_SECONDS

# Three ways to leave a sleeper behind, each writing its pid to a file named after it.
LEAVE_SLEEPERS = ("sleep 300 & echo $! > plain.pid; "
                  "setsid sleep 300 & echo $! > setsid.pid; "
                  "nohup sleep 300 > /dev/null 2>&1 & echo $! > nohup.pid")
SLEEPERS = ("plain.pid", "setsid.pid", "nohup.pid")


def running(pid: int) -> bool:
    """Whether `pid` still runs; a zombie nobody reaped (init here may not) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def survivors(workspace: Path, names: tuple[str, ...], within: float = 5) -> list[str]:
    """The pid files among `names` whose process still runs after `within` seconds."""
    pids = {name: host_pid(workspace / name) for name in names}
    deadline = time.monotonic() + within
    while any(map(running, pids.values())) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [name for name, pid in pids.items() if running(pid)]


def shell_script(tmp_path: Path, command: str) -> list[str]:
    """Scripted-provider flags for one run_shell call, then a final answer."""
    script = write_script(tmp_path / "script.json", [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": command}}]},
        {"text": "done"},
    ])
    return ["--provider", "scripted", "--script", str(script)]


def tool_output(stdout: str) -> str:
    """The content of the one tool result in a stream-json run."""
    [block] = [block for line in json_lines(stdout) if line["type"] == "user"
               for block in line["message"]["content"] if block["type"] == "tool_result"]
    return block["content"]


def kill_leftovers(workspace: Path) -> None:
    """Test hygiene: SIGKILL the sleepers a failing run left, so they do not outlive the test."""
    for path in workspace.glob("*.pid"):
        with contextlib.suppress(OSError, ValueError):
            pid = host_pid(path)
            if running(pid) and Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def ws(workspace: Path) -> Iterator[Path]:
    """The workspace; whatever a failing run left there is killed afterwards."""
    yield workspace
    kill_leftovers(workspace)


def test_a_finished_run_leaves_no_background_process(tmp_path: Path, ws: Path) -> None:
    result = invoke("run", "start sleepers", "-C", str(ws), "-o", "stream-json",
                    *shell_script(tmp_path, LEAVE_SLEEPERS))
    assert result.returncode == 0, result.stderr
    assert survivors(ws, SLEEPERS) == []
    output = tool_output(result.stdout)
    assert "the shell left 3 processes running" in output and "run_background" in output


def test_the_issue_example_leaves_nothing(tmp_path: Path, ws: Path) -> None:
    result = invoke("run", "start a server", "-C", str(ws),
                    *shell_script(tmp_path, "sleep 300 & echo $! > server.pid"))
    assert result.returncode == 0 and result.stdout == "done\n", result.stderr
    assert survivors(ws, ("server.pid",)) == []


def test_a_goal_check_leaves_no_background_process(tmp_path: Path, ws: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "done"}])
    result = invoke("goal", "start sleepers", "-C", str(ws), "--check", LEAVE_SLEEPERS,
                    "--provider", "scripted", "--script", str(script))
    assert result.returncode == 0, result.stderr
    assert survivors(ws, SLEEPERS) == []


def test_run_shell_returns_when_the_shell_exits_not_when_the_pipe_closes(
        tmp_path: Path, ws: Path) -> None:
    """`sleep 100 &` inherits stdout; the tool must not wait for it (nor for a drain timeout)."""
    started = time.monotonic()
    result = invoke("run", "hold the pipe", "-C", str(ws), "-o", "stream-json",
                    *shell_script(tmp_path, "sleep 100 & echo $! > held.pid; echo started"))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 30
    output = tool_output(result.stdout)
    assert output.startswith("started\n")
    match = re.search(r"exit code: 0 \((\d+\.\d) s\)$", output)
    assert match, output
    elapsed = float(match.group(1))
    assert elapsed < DRAIN_SECONDS, output  # it did not sit out the wait for the pipe to close
    assert survivors(ws, ("held.pid",)) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_an_interrupt_mid_command_leaves_nothing(tmp_path: Path, ws: Path,
                                                 signum: signal.Signals) -> None:
    command = f"{LEAVE_SLEEPERS}; touch ready; sleep 300"
    proc = subprocess.Popen(
        [sys.executable, "-m", "recursive_cli", "run", "start sleepers", "-C", str(ws),
         *shell_script(tmp_path, command)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (ws / "ready").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (ws / "ready").exists(), proc.communicate(timeout=10)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signum, stderr
    assert "error: interrupted" in stderr and "Traceback" not in stderr, stderr
    assert survivors(ws, SLEEPERS) == []
