"""The real `recursive fleet run` process on a terminal (issue 19): it starts its own local Ray,
the provider key reaches every task through Ray's runtime environment — the model server
sees it — and appears in no file of the results folder or of RECURSIVE_HOME; stderr shows
the live display; a task that asks for more than this local Ray has is not started (Ray would
keep it waiting for ever)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from clitools import require
from fakeserver import FakeLLMServer

from .fleettools import by_id, results, shell, tasks_file

KEY = "sk-fleet-secret-0123456789abcdef"


def on_terminal(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> tuple[int, str, str]:
    """Run `recursive ARGS` with a pty as stderr (stdout a pipe): exit code, stdout, and what the
    terminal was sent, without its escape sequences."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave,
                            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", **env})
    os.close(slave)
    received = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                received += data
            elif proc.poll() is not None:
                break
        assert proc.stdout is not None
        stdout = proc.stdout.read().decode()
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, stdout, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", received.decode(errors="replace"))


def test_the_key_travels_in_the_runtime_environment_only(tmp_path: Path, isolated_home: Path) -> None:
    require("ray")
    replies = []
    for name in ("a", "b"):
        replies += [{**shell(f"echo {name} > {name}.txt"), "delay": 0.6}, {"text": f"wrote {name}", "delay": 0.6}]
    tasks = []
    for name in ("a", "b"):
        (tmp_path / f"ws-{name}").mkdir()
        tasks.append({"id": name, "prompt": f"write {name}.txt", "workspace": f"ws-{name}"})
    tasks.append({"id": "huge", "prompt": "never", "workspace": "ws-a", "num_cpus": 512})
    tasks_file(tmp_path / "tasks.jsonl", tasks)
    with FakeLLMServer(replies) as server:
        code, stdout, terminal = on_terminal(
            ["fleet", "run", "tasks.jsonl", "--provider", "openai", "--api-base", server.openai_base_url,
             "-m", "gpt-4o", "--concurrency", "1", "--results", "out"],
            cwd=tmp_path, env={"RECURSIVE_API_KEY": KEY})
        requests = list(server.requests)
    assert code == 2, terminal  # the worst outcome: a task this Ray can never run
    out = tmp_path / "out"
    assert stdout == f"{out}\n"
    outcome = by_id(results(out))
    assert {k: v["subtype"] for k, v in outcome.items()} == {"a": "success", "b": "success", "huge": "error_bad_task"}
    assert outcome["huge"]["errors"][0].startswith("not started: it asks for 512 CPUs; this Ray has ")
    assert len(requests) == 4 and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)
    assert (tmp_path / "ws-a" / "a.txt").is_file() and (tmp_path / "ws-b" / "b.txt").is_file()

    files = [p for root in (out, isolated_home) for p in root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".bundle" for p in files) and any(p.name == "transcript.jsonl" for p in files)
    assert [str(p) for p in files if KEY.encode() in p.read_bytes()] == []

    # the live display: the headline with counts and cost, each task's last action, then the table
    assert "fleet: 0/3 done · 1 running" in terminal
    assert "run_shell echo a > a.txt" in terminal
    assert "✓ a: success" in terminal and "✓ b: success" in terminal
    assert "2/3 succeeded · 1 failed · 0 not run" in terminal
