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


_commands: dict[int, tuple[tuple[Any, ...], Any]] = {}


def _shape(tree: Any) -> tuple[Any, ...]:
    """What typer builds the click tree of `tree` from: its callback and command and group
    lists, below it too (a test that registered another command gets a tree built anew)."""
    groups = tuple((id(group), _shape(group.typer_instance)) for group in tree.registered_groups)
    return (id(tree.registered_callback), tuple(map(id, tree.registered_commands)), groups)


def _click_command(tree: Any) -> Any:
    """`tree` as typer's click objects, built once per process: building the whole tree costs
    tens of milliseconds (type hints and signatures of every command), more than most
    commands take to run, and the objects keep nothing from one invocation to the next (each
    `main` gets its own context), as the tests of a click program reuse one command."""
    import typer.main

    shape = _shape(tree)
    known = _commands.get(id(tree))
    if known is None or known[0] != shape:
        known = _commands[id(tree)] = (shape, typer.main.get_command(tree))
    return known[1]


def _run_in_process(args: tuple[str, ...], cwd: Path | None, input: str | None,
                    env: Mapping[str, str | None] | None) -> Any:
    """What typer's `CliRunner.invoke(app, …, catch_exceptions=False)` does, on click objects
    built once (`_click_command`) rather than on every call."""
    from typer.testing import CliRunner, Result

    from recursive_cli.surfaces.cli.app import app

    runner = CliRunner()
    command = _click_command(app)
    with _cwd(cwd), _process_state(), \
            runner.isolation(input=input or "", env=dict(env or {})) as (stdout, stderr, output):
        code: Any = 0
        return_value: Any = None
        exception: BaseException | None = None
        exc_info: Any = None
        try:
            return_value = command.main(args=list(args), prog_name=runner.get_default_prog_name(command))
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
            if code != 0:
                exception, exc_info = exc, sys.exc_info()
            if not isinstance(code, int):
                sys.stdout.write(f"{code}\n")
                code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        return Result(runner=runner, stdout_bytes=stdout.getvalue(), stderr_bytes=stderr.getvalue(),
                      output_bytes=output.getvalue(), return_value=return_value, exit_code=code,
                      exception=exception, exc_info=exc_info)


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


GONE = 1 << 23  # above any pid_max: no such process


def host_pid(pid_file: Path) -> int:
    """The pid, as this test sees it, of the process whose pid a command wrote to `pid_file`
    (`$$` or `$!`). Inside the command sandbox's pid namespace that number is the namespace's:
    the process is the one with that namespace pid working in the file's folder. GONE when
    no live process matches (it has ended)."""
    written = int(pid_file.read_text())
    folder = str(pid_file.parent.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        line = next((row for row in status.splitlines() if row.startswith("NSpid:")), "")
        pids = [int(part) for part in line.split()[1:]]
        if pids and pids[-1] == written and (len(pids) > 1 or pids[0] == written) and cwd == folder:
            return pids[0]
    return GONE


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
