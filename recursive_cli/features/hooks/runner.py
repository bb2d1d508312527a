"""Run one command hook: the event as JSON on stdin, in the workspace, in its own process
group, killed (the whole group) on timeout and on every other way out; and read its outcome
as Claude Code defines it.

Exit 0 proceeds; its stdout, when it is a JSON object, may carry `decision` (`block`,
`approve`), `reason`, `continue: false` + `stopReason`, and `hookSpecificOutput` with
`permissionDecision` (allow, deny, ask), `permissionDecisionReason`, `updatedInput` and
`additionalContext`. Exit 2 blocks, its stderr the reason. Any other code, a timeout or a
command that cannot start is a non-blocking error, shown to the user.

Of stdout and of stderr only the first `OUTPUT_LIMIT` bytes are kept: the rest is read and
dropped as it comes, so a hook that prints gigabytes neither fills our memory nor blocks on a
full pipe (it runs to its end or its timeout as any other). Plain text cut there says so at
its end; a JSON output cut there cannot be read, and is a non-blocking error that says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import HookCommand

OUTPUT_LIMIT = 64 * 1024  # of stdout and of stderr, kept for the outcome
_CHUNK = 64 * 1024


@dataclass
class HookOutcome:
    """What one hook run said."""

    hook: HookCommand
    exit_code: int | None = None  # None: timed out or could not start
    stdout: str = ""
    stderr: str = ""
    stdout_dropped: int = 0  # bytes printed past OUTPUT_LIMIT, read and dropped
    stderr_dropped: int = 0
    duration_s: float = 0.0
    pid: int | None = None
    blocked: bool = False  # exit 2 or `decision: block`
    reason: str = ""
    decision: str | None = None  # PreToolUse: allow, deny, ask
    updated_input: dict[str, Any] | None = None
    context: str = ""  # additionalContext (or plain stdout where Claude takes it as context)
    stop: bool = False  # `continue: false`
    stop_reason: str = ""
    error: str = ""  # a non-blocking error, for the user
    output: dict[str, Any] = field(default_factory=dict)  # the JSON it printed, if any

    @property
    def outcome(self) -> str:
        """One word for the event: success, blocked, error, timeout."""
        if self.exit_code is None and self.error.startswith("timed out"):
            return "timeout"
        return "blocked" if self.blocked else "error" if self.error else "success"


async def run_hook(hook: HookCommand, payload: dict[str, Any], cwd: Path,
                   env: dict[str, str] | None = None) -> HookOutcome:
    """Run `hook` with `payload` on stdin; never raises for what the hook does."""
    outcome = HookOutcome(hook)
    started = time.monotonic()
    environment = {**os.environ, **(env or {})}
    try:
        process = await asyncio.create_subprocess_shell(
            hook.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=str(cwd), env=environment, start_new_session=True)
    except OSError as exc:
        outcome.error = f"could not start: {exc.strerror or exc}"
        return outcome
    outcome.pid = process.pid
    out, err = _Capped(), _Capped()
    try:
        data = json.dumps(payload).encode()
        try:
            await asyncio.wait_for(asyncio.gather(
                _feed(process.stdin, data), out.read(process.stdout), err.read(process.stderr),
                process.wait()), hook.timeout)
        except asyncio.TimeoutError:
            _kill_group(process.pid)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 5)
            outcome.error = f"timed out after {hook.timeout:g}s (killed)"
            return outcome
    finally:
        _kill_group(process.pid)  # what it left running in its group goes too
        outcome.duration_s = round(time.monotonic() - started, 3)
    outcome.exit_code = process.returncode
    outcome.stdout, outcome.stdout_dropped = out.text(), out.dropped
    outcome.stderr, outcome.stderr_dropped = err.text(), err.dropped
    _read_outcome(outcome)
    return outcome


class _Capped:
    """The first OUTPUT_LIMIT bytes of a stream read to its end, and how many more it carried."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.dropped = 0

    async def read(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(_CHUNK):
            kept = chunk[:max(OUTPUT_LIMIT - len(self.kept), 0)]
            self.kept += kept
            self.dropped += len(chunk) - len(kept)

    def text(self) -> str:
        return self.kept.decode("utf-8", "replace")


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes) -> None:
    """Write the event to the hook's stdin and close it; a hook that does not read it is fine."""
    if stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()


def _cut(text: str, dropped: int) -> str:
    """`text`, with a note at its end when the hook printed more than was kept."""
    if not dropped:
        return text
    return f"{text}\n[hook output cut: {_size(OUTPUT_LIMIT + dropped)} printed, the first {_size(OUTPUT_LIMIT)} kept]"


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{count} bytes"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)


def _read_outcome(outcome: HookOutcome) -> None:
    if outcome.exit_code == 2:
        outcome.blocked = True
        reason = _cut(outcome.stderr.strip(), outcome.stderr_dropped)
        outcome.reason = reason or f"blocked by a {outcome.hook.event} hook"
        return
    if outcome.exit_code != 0:
        first = outcome.stderr.strip().splitlines()
        outcome.error = f"exit {outcome.exit_code}" + (f": {first[-1]}" if first else "")
        return
    text = outcome.stdout.strip()
    if text.startswith("{") and outcome.stdout_dropped:
        outcome.error = (f"its JSON output ({_size(OUTPUT_LIMIT + outcome.stdout_dropped)}) is over "
                         f"the {_size(OUTPUT_LIMIT)} a hook may print, so it was not read")
        return
    try:
        output = json.loads(text) if text.startswith("{") else None
    except ValueError:
        output = None
    if not isinstance(output, dict):
        if outcome.hook.event in ("UserPromptSubmit", "SessionStart") and text:
            # plain stdout is context for these two, as in Claude Code
            outcome.context = _cut(text, outcome.stdout_dropped)
        return
    outcome.output = output
    specific = output.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if output.get("decision") == "block":
        outcome.blocked = True
        outcome.reason = str(output.get("reason") or f"blocked by a {outcome.hook.event} hook")
    elif output.get("decision") == "approve":
        outcome.decision = "allow"
        outcome.reason = str(output.get("reason") or "")
    said = specific.get("permissionDecision")
    if said in ("allow", "deny", "ask"):
        outcome.decision = said
        outcome.reason = str(specific.get("permissionDecisionReason") or output.get("reason") or "")
    if isinstance(specific.get("updatedInput"), dict):
        outcome.updated_input = specific["updatedInput"]
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        outcome.context = context
    if output.get("continue") is False:
        outcome.stop = True
        outcome.stop_reason = str(output.get("stopReason") or "")
