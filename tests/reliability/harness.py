"""Running the real CLI under faults and reading back what it left: output, exit code, session.

Everything a case observes is normalised (`Scrub`) before it goes into the doc table, so
ports, temp paths and durations do not make the table change from run to run.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from clitools import invoke_strict, run_cli
from fakeserver import FakeLLMServer

from recursive_cli.core import utf8
from recursive_cli.core.messages import Message
from recursive_cli.features.sessions.reader import load_session, pair_tool_results
from recursive_cli.launch.stdio import PipeGuard
from recursive_cli.surfaces.cli.sessions_cmd import show_command

API_KEY = "sk-test-reliability-0123456789"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal would obey
AGENT = [sys.executable, "-m", "recursive_cli"]
BASE_ENV = {"RECURSIVE_RETRY_BASE_DELAY": "0.01", "RECURSIVE_API_KEY": API_KEY}


@dataclass
class Run:
    """A finished CLI process."""

    code: int
    stdout: str
    stderr: str

    def records(self) -> list[dict[str, Any]]:
        """The stream-json records on stdout, split on newlines only (as JSON lines are)."""
        return [json.loads(line) for line in self.stdout.split("\n") if line.strip()]

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    def assert_clear(self, *, errors: int | None = None) -> None:
        """No traceback, Python noise or raw control characters on stderr; `errors` (if given)
        `error:` lines."""
        for noise in ("Traceback", "Exception ignored", "Error in sys.excepthook"):
            assert noise not in self.stderr, self.stderr
        assert not CONTROL.search(self.stderr), repr(CONTROL.search(self.stderr))
        if errors is not None:
            assert len(self.error_lines()) == errors, self.stderr


def agent(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
          in_process: bool = False) -> Run:
    """`python -m recursive_cli ARGS` to completion (stdout must be valid UTF-8).

    `in_process`: the same command in this process (`invoke_strict`), where a real process is not the
    point (no hang to time out, no signal, no exit-time flush). What the interpreter would
    print while finalising objects at exit ("Exception ignored in: …", e.g. a client left open
    on a closed event loop) is collected here and added to stderr, so `assert_clear` still sees
    it.
    """
    full_env = {**BASE_ENV, **(env or {})}
    if not in_process:
        proc = run_cli(*args, env=full_env, timeout=timeout)
        return Run(proc.returncode, proc.stdout, proc.stderr)
    ignored: list[str] = []

    def unraisable(info: Any) -> None:
        ignored.append(f"Exception ignored in: {info.object!r}\n"
                       + "".join(traceback.format_exception_only(info.exc_type, info.exc_value)))

    with mock.patch.object(sys, "unraisablehook", unraisable):
        result = invoke_strict(*args, env=full_env)
        gc.collect()
    return Run(result.returncode, result.stdout, result.stderr + "".join(ignored))


def provider_args(server: FakeLLMServer, provider: str) -> list[str]:
    """Flags that point `provider` at the loopback server."""
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return ["--provider", provider, "--api-base", base, "-m", "fake-model"]


def scripted_args(path: Path, replies: Sequence[dict[str, Any]]) -> list[str]:
    """Flags for the scripted provider replaying `replies`."""
    path.write_text(json.dumps(list(replies)), encoding="utf-8")
    return ["--provider", "scripted", "--script", str(path)]


def call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """A scripted tool call."""
    spec: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id:
        spec["id"] = call_id
    return spec


# -- sessions -------------------------------------------------------------------------------------


@dataclass
class SessionView:
    """A session as `recursive sessions show` and the loader see it."""

    status: str
    turns: int
    messages: list[Message]
    warnings: list[str] = field(default_factory=list)

    def result_of(self, call_id: str) -> Message:
        """The tool result answering `call_id`."""
        found = [m for m in self.messages if m.role == "tool" and m.tool_call_id == call_id]
        assert len(found) == 1, f"call {call_id}: {len(found)} results in the session"
        return found[0]

    def unanswered_calls(self) -> list[Message]:
        """Tool results a resume would have to invent (none: every call is answered)."""
        return pair_tool_results(self.messages, lambda c: Message.tool_result(c, "?"))[1]

    def summary(self, *extra: str) -> str:
        """The table's session cell: status, size, and what was checked on it."""
        turns = f"{self.turns} turn" + ("" if self.turns == 1 else "s")
        parts = [f"`{self.status}`, {turns}", "`sessions show` loads it", *extra]
        return "; ".join(parts)


def inspect_session(home: Path, session_id: str) -> SessionView:
    """Load a session through `recursive sessions show` and through the loader.

    `sessions show` runs in this process (a fresh interpreter per case would cost seconds),
    with stdout wrapped in the same guard `run_app` puts around every CLI command.
    """
    out = io.StringIO()
    with mock.patch.dict(os.environ, {"RECURSIVE_HOME": str(home)}), \
            contextlib.redirect_stdout(PipeGuard(out, lambda: None)):  # type: ignore[type-var]
        code = show_command(session_id)
    assert code == 0 and f"session {session_id}" in out.getvalue(), out.getvalue()[:2000]
    loaded = load_session(home / "sessions" / session_id)
    return SessionView(loaded.meta.status, loaded.turns, loaded.messages, loaded.warnings)


# -- normalising what was seen ---------------------------------------------------------------------


class Scrub:
    """Turns observed text into stable table text: paths, ports and durations become names."""

    _RULES = (
        (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
        (re.compile(r"\b\d+\.\d+ s\b"), "T s"),
        (re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{12}\b"), "<session-id>"),  # a generated session id
        # what is left of a temp path that a one-line summary cut short
        (re.compile(re.escape(tempfile.gettempdir()) + r"/pytest-of-[^\s)]*"), "<tmp>"),
    )

    def __init__(self, **paths: Path) -> None:
        pairs = {str(p): f"<{name}>" for name, p in paths.items()}
        pairs.update({str(p.resolve()): f"<{name}>" for name, p in paths.items()})
        self._paths = sorted(pairs.items(), key=lambda item: -len(item[0]))

    def __call__(self, text: str) -> str:
        text = utf8.scrub(text)  # what leaves the process: U+FFFD for undecodable bytes
        for path, name in self._paths:
            text = text.replace(path, name)
        for pattern, replacement in self._RULES:
            text = pattern.sub(replacement, text)
        return text


def exit_text(code: int) -> str:
    """An exit status as the table shows it: the number, or the signal that killed the process."""
    return f"none: killed by {signal.Signals(-code).name}" if code < 0 else str(code)


def start_agent(*args: str, env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen[str]:
    """Start `python -m recursive_cli ARGS` without waiting (stdin closed unless given)."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen([*AGENT, *args], text=True,
                            env={**os.environ, **BASE_ENV, **(env or {})}, **popen)


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll `predicate` until it holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)
