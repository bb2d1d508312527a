"""No MCP server outlives `recursive`, whichever way it ends (checked by the servers' pids); a
server that dies mid-call is restarted once; one that does not start in time is stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clitools import alive, json_lines, wait_gone, wait_until, write_script
from mcphelpers import demo_entry, servers_json, started_pids


def start(workspace: Path, replies: list[dict[str, Any]], *args: str, config: str | None = None,
          env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`recursive run` in a process of its own, with the demo server configured."""
    script = write_script(workspace.parent / "script.json", replies)
    command = [sys.executable, "-m", "recursive_cli", "run", "go", "-C", str(workspace), "--provider", "scripted",
               "--script", str(script), "--mcp-config", config or servers_json(demo=demo_entry()),
               "-o", "stream-json", *args]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})


def finish(proc: subprocess.Popen[str]) -> tuple[int, list[dict], str]:
    out, err = proc.communicate(timeout=60)
    return proc.returncode, json_lines(out), err


def results(lines: list[dict]) -> list[dict]:
    return [block for line in lines if line["type"] == "user" for block in line["message"]["content"]
            if block.get("type") == "tool_result"]


def assert_all_gone(demo_dir: Path, count: int = 1) -> None:
    pids = started_pids(demo_dir)
    assert len(pids) == count, pids
    assert all(wait_gone(pid, timeout=5) for pid in pids), [pid for pid in pids if alive(pid)]


def weather() -> dict[str, Any]:
    return {"tool_calls": [{"name": "mcp__demo__weather", "arguments": {"city": "Oslo"}}]}


def slow() -> dict[str, Any]:
    return {"tool_calls": [{"name": "mcp__demo__slow", "arguments": {"seconds": 60}}]}


def test_normal_end(workspace: Path, demo_dir: Path, isolated_home: Path) -> None:
    direct = servers_json(demo=demo_entry(direct=True))  # (`python demo_server.py` itself, not forked)
    code, lines, err = finish(start(workspace, [weather(), {"text": "done"}], config=direct))
    assert code == 0, err
    assert not results(lines)[0]["is_error"]
    assert_all_gone(demo_dir)
    session = lines[-1]["session_id"]
    assert (isolated_home / "sessions" / session / "mcp" / "demo.log").is_file()  # its stderr, not ours


def test_error_end(workspace: Path, demo_dir: Path) -> None:
    code, lines, err = finish(start(workspace, [weather(), {"error": {"status": 400, "message": "bad request"}}]))
    assert code == 1
    assert_all_gone(demo_dir)


def test_budget_end(workspace: Path, demo_dir: Path) -> None:
    code, lines, err = finish(start(workspace, [weather(), weather(), {"text": "done"}], "--max-steps", "1"))
    assert code == 3
    assert_all_gone(demo_dir)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_a_slow_call(workspace: Path, demo_dir: Path, signum: int, code: int) -> None:
    proc = start(workspace, [slow(), {"text": "never"}])
    wait_until(lambda: (demo_dir / "slow-started").exists(), timeout=30, proc=proc)
    proc.send_signal(signum)
    returncode, lines, err = finish(proc)
    assert returncode == code, err
    assert results(lines)[0]["is_error"] and "interrupted" in results(lines)[0]["content"]
    assert_all_gone(demo_dir)


def test_second_ctrl_c_exits_at_once_and_still_kills_the_server(workspace: Path, demo_dir: Path) -> None:
    proc = start(workspace, [slow(), {"text": "never"}])
    wait_until(lambda: (demo_dir / "slow-started").exists(), timeout=30, proc=proc)
    os.kill(proc.pid, signal.SIGINT)
    os.kill(proc.pid, signal.SIGINT)
    returncode, _, err = finish(proc)
    assert returncode == 130
    assert_all_gone(demo_dir)


def test_a_server_that_dies_mid_call_is_restarted_once(workspace: Path, demo_dir: Path) -> None:
    crash = {"tool_calls": [{"name": "mcp__demo__crash", "arguments": {}}]}
    code, lines, err = finish(start(workspace, [crash, weather(), crash, weather(), {"text": "done"}]))
    assert code == 0, err
    first, after_restart, second, after_second = results(lines)
    assert first["is_error"]
    assert "the MCP server 'demo' stopped before answering" in first["content"]
    assert "it has been restarted" in first["content"]
    assert json.loads(after_restart["content"])["city"] == "Oslo"
    assert second["is_error"] and "restarted once already" in second["content"]
    assert after_second["is_error"] and "not running" in after_second["content"]
    assert err.count("restarting it") == 1
    assert_all_gone(demo_dir, count=2)


def test_a_server_that_does_not_start_in_time_is_stopped(workspace: Path, demo_dir: Path) -> None:
    config = servers_json(late=demo_entry("--delay", "30"), demo=demo_entry())
    code, lines, err = finish(start(workspace, [weather(), {"text": "done"}], config=config,
                                    env={"RECURSIVE_MCP_TIMEOUT": "3s"}))
    # (The good one must start in it on a loaded 2-core machine: a forked demo server starts in
    # ≈ 0.2 s even then, and the clock no longer runs while `recursive` imports the SDK.)
    assert code == 0, err
    assert "warning: MCP server 'late' failed to start: did not start within 3 s" in err
    assert not results(lines)[0]["is_error"]
    assert_all_gone(demo_dir, count=2)


def test_ctrl_c_during_a_slow_call_over_http_ends_the_run_at_once(workspace: Path, demo_dir: Path,
                                                                 http_url: str) -> None:
    """The call's POST is abandoned (its answer stream closed, the call cancelled at the server)
    and the run ends as interrupted, without waiting for the 60 s call."""
    config = servers_json(remote={"type": "http", "url": http_url})
    proc = start(workspace, [{"tool_calls": [{"name": "mcp__remote__slow", "arguments": {"seconds": 60}}]},
                             {"text": "never"}], config=config)
    wait_until(lambda: (demo_dir / "slow-started").exists(), timeout=30, proc=proc)
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    returncode, lines, err = finish(proc)
    assert returncode == 130, err
    assert time.monotonic() - began < 10
    assert results(lines)[0]["is_error"] and "interrupted" in results(lines)[0]["content"]
