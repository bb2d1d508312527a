"""Helpers for driving the real CLI: in process (`invoke`) or in a subprocess (`run_cli`).

Use `invoke` unless the test needs a real process (signals, kill -9, a TTY, fds).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
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


@contextlib.contextmanager
def _process_state() -> Iterator[None]:
    """Put back what one command changes for the rest of the process: signal handlers and the
    `-v` log handler (which writes to that command's stderr, closed once it returns)."""
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    log = logging.getLogger("recursive_cli")
    log_handlers, log_level = list(log.handlers), log.level
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            if handler is not None:  # (None: set outside Python, cannot be put back)
                signal.signal(signum, handler)
        log.handlers[:] = log_handlers
        log.setLevel(log_level)


def invoke(*args: str, cwd: Path | None = None, input: str | None = None,
           env: Mapping[str, str | None] | None = None) -> CliResult:
    """Run the CLI in this process with typer's CliRunner (stdin is never a TTY here).

    `env` values of None unset a variable for the call; RECURSIVE_HOME comes from the autouse
    fixture. The result has the same fields as `run_cli`'s.
    """
    result = _run_in_process(args, cwd, input, env)
    return CliResult(result.exit_code, result.stdout, result.stderr)


def invoke_strict(*args: str, cwd: Path | None = None, input: str | None = None,
                  env: Mapping[str, str | None] | None = None) -> CliResult:
    """`invoke`, but output that is not valid UTF-8 raises (as it does from `run_cli`) instead
    of reaching the test with U+FFFD in place of the bad bytes."""
    result = _run_in_process(args, cwd, input, env)
    return CliResult(result.exit_code, result.stdout_bytes.decode().replace("\r\n", "\n"),
                     result.stderr_bytes.decode().replace("\r\n", "\n"))


def _run_in_process(args: tuple[str, ...], cwd: Path | None, input: str | None,
                    env: Mapping[str, str | None] | None) -> Any:
    from typer.testing import CliRunner

    from recursive_cli.surfaces.cli.app import app

    runner = CliRunner()
    with _cwd(cwd), _process_state():
        return runner.invoke(app, list(args), input=input or "", env=dict(env or {}),
                             catch_exceptions=False)


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


def wait_until(predicate: Callable[[], bool], timeout: float = 20.0,
               proc: subprocess.Popen[Any] | None = None) -> None:
    """Poll `predicate` until it holds: wait for a marker rather than sleep and hope.

    With `proc`, fail at once (not at the timeout) if that process has exited first, with the
    end of its stderr when that is a pipe.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            _, stderr = proc.communicate(timeout=5)
            tail = stderr[-2000:] if isinstance(stderr, (str, bytes)) else ""
            raise AssertionError(f"the process exited ({proc.returncode}) before the marker: {tail!r}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting")
        time.sleep(0.01)


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    """Whether process `pid` is gone (or a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def require(module: str) -> Any:
    """Import `module` for a test; skipped where it is missing, but a failure in CI (CI=1),
    where the test extra installs it: a client we test against must never silently vanish."""
    import importlib

    import pytest

    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)
