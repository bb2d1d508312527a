"""Helpers for driving the real CLI: in process (`invoke`) or in a subprocess (`run_cli`).

Use `invoke` unless the test needs a real process (signals, kill -9, a TTY, fds).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class CliResult:
    """What a user sees of one command: exit code, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _cwd(path: Path | None) -> Iterator[None]:
    before = os.getcwd()
    if path is not None:
        os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def invoke(*args: str, cwd: Path | None = None, input: str | None = None,
           env: dict[str, str | None] | None = None) -> CliResult:
    """Run the CLI in this process with typer's CliRunner (stdin is never a TTY here).

    `env` values of None unset a variable for the call; RECURSIVE_HOME comes from the autouse
    fixture. The result has the same fields as `run_cli`'s.
    """
    from typer.testing import CliRunner

    from recursive_cli.cli.app import app

    runner = CliRunner()
    with _cwd(cwd):
        result = runner.invoke(app, list(args), input=input or "", env=env, catch_exceptions=False)
    return CliResult(result.exit_code, result.stdout, result.stderr)


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None,
            env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (`python -m recursive_cli`), stdin closed unless `input`."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "recursive_cli", *args], cwd=cwd, env=full_env,
                          input=input, stdin=None if input is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def write_script(path: Path, replies: list[dict[str, Any]]) -> Path:
    """A script file for the scripted provider."""
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


def json_lines(text: str) -> list[dict[str, Any]]:
    """Parse stream-json output; every line must be one JSON object."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]
