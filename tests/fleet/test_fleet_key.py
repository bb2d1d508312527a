"""The real `recursive fleet run` process (issue 19). Joined to a running Ray with `--address`
(the package's `local_ray`, whose workers started without any key) on a terminal: the provider
key reaches every task through the fleet's runtime environment — the model server sees it —
and appears in no file of the results folder or of RECURSIVE_HOME; stderr shows the live
display. Given no address, it starts a local Ray of its own, runs its tasks there and stops
it; a task that asks for more than that Ray has is not started (Ray would keep it waiting for
ever)."""

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from clitools import require
from fakeserver import FakeLLMServer

from .conftest import SCRUBBED
from .fleettools import by_id, results, say, script, shell, tasks_file

# The Ray of tests/fleet/conftest.py: under pytest-xdist, on the one worker that starts it.
pytestmark = pytest.mark.xdist_group("ray")

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


def test_the_key_travels_in_the_runtime_environment_only(tmp_path: Path, isolated_home: Path,
                                                         ray_address: str) -> None:
    # a's answer comes after a pause, so that the display shows a's tool call for a few redraws
    replies = [shell("echo a > a.txt"), {"text": "wrote a", "delay": 0.8}, shell("echo b > b.txt"), say("wrote b")]
    tasks = []
    for name in ("a", "b"):
        (tmp_path / f"ws-{name}").mkdir()
        tasks.append({"id": name, "prompt": f"write {name}.txt", "workspace": f"ws-{name}"})
    tasks_file(tmp_path / "tasks.jsonl", tasks)
    with FakeLLMServer(replies) as server:
        # (the environment passed on holds the RAY_AUTH_MODE this process's Ray was started with)
        code, stdout, terminal = on_terminal(
            ["fleet", "run", "tasks.jsonl", "--address", ray_address, "--provider", "openai",
             "--api-base", server.openai_base_url, "-m", "gpt-4o", "--concurrency", "1", "--results", "out"],
            cwd=tmp_path, env={"RECURSIVE_API_KEY": KEY})
        requests = list(server.requests)
    assert code == 0, terminal
    out = tmp_path / "out"
    assert stdout == f"{out}\n"
    outcome = by_id(results(out))
    assert {k: v["subtype"] for k, v in outcome.items()} == {"a": "success", "b": "success"}
    assert len(requests) == 4 and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)
    assert (tmp_path / "ws-a" / "a.txt").is_file() and (tmp_path / "ws-b" / "b.txt").is_file()

    files = [p for root in (out, isolated_home) for p in root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".bundle" for p in files) and any(p.name == "transcript.jsonl" for p in files)
    assert [str(p) for p in files if KEY.encode() in p.read_bytes()] == []

    # the live display: the headline with counts and cost, each task's last action, then the table
    assert "fleet: 0/2 done · 1 running · 0 failed · no cost yet" in terminal and "$0.0000" not in terminal
    assert "run_shell echo a > a.txt" in terminal
    assert "✓ a: success" in terminal and "✓ b: success" in terminal
    assert "2/2 succeeded · 0 failed · 0 not run" in terminal


@dataclass
class OwnRayFleet:
    """A `recursive fleet run` given no Ray to join, running in the background."""

    proc: subprocess.Popen[bytes]
    folder: Path
    home: Path

    def finish(self) -> tuple[int, str, str]:
        """Its exit code, stdout and stderr, once it has ended."""
        code = self.proc.wait(timeout=120)
        return code, (self.folder / "stdout").read_text(), (self.folder / "stderr").read_text()


@pytest.fixture(scope="package", autouse=True)
def own_ray_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnRayFleet]:
    """Started as this module's first test begins, before the package's `local_ray` (autouse
    fixtures of a scope come first): the seconds its own Ray takes to start and stop pass while
    that one starts and the tests before `test_without_an_address_it_starts_its_own_local_ray` run."""
    require("ray")
    folder = tmp_path_factory.mktemp("own-ray")
    (folder / "ws").mkdir()
    tasks_file(folder / "tasks.jsonl", [
        {"id": "hello", "prompt": "say hello", "workspace": "ws",
         "script": script(folder / "scripts", "hello", [say("hello from its own Ray")])},
        {"id": "huge", "prompt": "never", "workspace": "ws", "num_cpus": 512}])
    home = folder / "recursive-home"
    # a user's environment: no Ray to join, no key; its own home
    env = {name: value for name, value in os.environ.items() if not name.startswith("RAY_") and name not in SCRUBBED}
    with (folder / "stdout").open("wb") as stdout, (folder / "stderr").open("wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "fleet", "run", "tasks.jsonl", "--provider",
                                 "scripted", "--concurrency", "1", "--results", "out"],
                                cwd=folder, env={**env, "RECURSIVE_HOME": str(home), "COLUMNS": "150"},
                                stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
    try:
        yield OwnRayFleet(proc, folder, home)
    finally:
        if proc.poll() is None:  # (its test was not run, or failed before the end): let it stop its Ray
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()


def test_without_an_address_it_starts_its_own_local_ray(own_ray_fleet: OwnRayFleet) -> None:
    code, stdout, stderr = own_ray_fleet.finish()
    assert code == 2, stderr  # the worst outcome: a task this Ray can never run
    out = own_ray_fleet.folder / "out"
    assert stdout == f"{out}\n"
    outcome = by_id(results(out))
    assert {k: v["subtype"] for k, v in outcome.items()} == {"hello": "success", "huge": "error_bad_task"}
    assert outcome["hello"]["result"] == "hello from its own Ray"
    assert (own_ray_fleet.home / "sessions" / outcome["hello"]["session_id"] / "transcript.jsonl").is_file()
    assert outcome["huge"]["errors"][0].startswith("not started: it asks for 512 CPUs; this Ray has ")
    assert outcome["huge"]["attempts"] == 0 and outcome["huge"]["session_id"] is None
    assert "fleet: hello started (attempt 1" in stderr  # no terminal: a plain line per event
    assert "1/2 succeeded · 1 failed · 0 not run" in " ".join(stderr.split())
