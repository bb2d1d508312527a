"""The demo launcher (demo_launch.py), on which every lifecycle test relies: what `recursive`
spawns is one process whose stdio is a forked demo server's, whose pid file holds the server's
own pid, which passes its signals on, exits as the server did, and takes the server with it
when it is killed (even with SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from clitools import alive, wait_gone, wait_until
from mcphelpers import demo_entry, started_pids

HELLO = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
         {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def launch(demo_dir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], int]:
    """A launcher in a session of its own (as the SDK starts a server), and its server's pid."""
    entry = demo_entry(*extra)
    proc = subprocess.Popen([entry["command"], *entry["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until(lambda: bool(started_pids(demo_dir)), timeout=30, proc=proc)
    (pid,) = started_pids(demo_dir)
    return proc, pid


def test_the_launchers_stdio_is_the_forked_servers_and_it_exits_with_the_servers_code(demo_dir: Path) -> None:
    proc, pid = launch(demo_dir)
    assert pid != proc.pid and alive(pid)
    assert proc.stdin is not None and proc.stdout is not None
    crash = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "crash", "arguments": {}}}
    proc.stdin.write(b"".join(json.dumps(message).encode() + b"\n" for message in HELLO))
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "demo"
    # (only now the crash: sent with the hello, its os._exit could beat the server's writer
    # task to stdout, and the answer above was lost; 9 runs in 80 on a busy machine)
    proc.stdin.write(json.dumps(crash).encode() + b"\n")
    proc.stdin.flush()
    assert proc.wait(timeout=10) == 3  # the server's os._exit(3)
    assert proc.stdout.read() == b""
    assert wait_gone(pid)


def test_signals_to_the_launcher_reach_the_server(demo_dir: Path) -> None:
    proc, pid = launch(demo_dir, "--delay", "30")
    proc.send_signal(signal.SIGUSR1)
    wait_until(lambda: (demo_dir / "got-SIGUSR1").exists(), timeout=10, proc=proc)
    assert (demo_dir / "got-SIGUSR1").read_text() == str(pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert wait_gone(pid)


def test_killing_the_launchers_group_kills_the_server(demo_dir: Path) -> None:
    proc, pid = launch(demo_dir, "--delay", "30")
    os.killpg(proc.pid, signal.SIGKILL)  # what `recursive` does last; the launcher cannot pass it on
    assert proc.wait(timeout=10) == -signal.SIGKILL
    assert wait_gone(pid)
