"""Helpers for the loop tests: scripted replies, a live `recursive loop` process, session files."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clitools import alive, wait_gone, write_script  # noqa: F401  (the loop tests import them from here)


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def tools(*calls: dict[str, Any]) -> dict[str, Any]:
    """A reply that only calls tools."""
    return {"tool_calls": list(calls)}


def scripted(tmp_path: Path, replies: list[dict[str, Any]], name: str = "script.json") -> list[str]:
    script = write_script(tmp_path / name, replies)
    return ["--provider", "scripted", "--script", str(script)]


def session_records(home: Path, session_id: str) -> list[dict[str, Any]]:
    """The transcript's records (a torn last line is skipped)."""
    records = []
    for line in (home / "sessions" / session_id / "transcript.jsonl").read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            pass
    return records


def prompts(records: list[dict[str, Any]]) -> list[str]:
    """The prompt of each turn, in order."""
    return [r["prompt"] for r in records if r["type"] == "turn_start"]


def loop_state(home: Path, session_id: str) -> dict[str, Any]:
    meta = json.loads((home / "sessions" / session_id / "meta.json").read_text())
    return meta["state"]["loop"]


class LiveCLI:
    """`recursive ARGS... -o stream-json` running in the background; read its lines as they come."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "recursive_cli", *args, "-o", "stream-json"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})})
        self.lines: list[dict[str, Any]] = []
        self._buffer = b""

    def wait_for(self, subtype: str, timeout: float = 20.0) -> dict[str, Any]:
        """The first stream line (from now on) whose subtype (or type) is `subtype`."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                record = json.loads(line)
                self.lines.append(record)
                if subtype in (record.get("subtype"), record.get("type")):
                    return record
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                self._buffer += chunk
        seen = [r.get("subtype") or r["type"] for r in self.lines]
        raise AssertionError(f"no {subtype!r} line; got {seen}; stderr: {self._stderr()}")

    def signal(self, signum: int = signal.SIGINT) -> float:
        """Send `signum`; returns when it was sent (monotonic)."""
        sent = time.monotonic()
        self.proc.send_signal(signum)
        return sent

    def finish(self, timeout: float = 20.0) -> int:
        """Wait for the exit; collects the rest of stdout. Returns the exit code."""
        out, _ = self.proc.communicate(timeout=timeout)
        rest = self._buffer + (out or b"")
        self.lines += [json.loads(line) for line in rest.splitlines() if line.strip()]
        self._buffer = b""
        return self.proc.returncode

    def _stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(still running)"
        return self.proc.stderr.read().decode(errors="replace")


@pytest.fixture
def live():
    """Start LiveCLI processes; any still running at teardown are killed."""
    started: list[LiveCLI] = []

    def start(*args: str, env: dict[str, str] | None = None) -> LiveCLI:
        cli = LiveCLI(*args, env=env)
        started.append(cli)
        return cli

    yield start
    for cli in started:
        if cli.proc.poll() is None:
            cli.proc.kill()
        cli.proc.communicate()
