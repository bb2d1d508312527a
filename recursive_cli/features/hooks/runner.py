"""Run one command hook: the event as JSON on stdin, in the workspace, in its own process
group, killed (the whole group) on timeout and on every other way out; and read its outcome
as Claude Code defines it.

Exit 0 proceeds; its stdout, when it is a JSON object, may carry `decision` (`block`,
`approve`), `reason`, `continue: false` + `stopReason`, and `hookSpecificOutput` with
`permissionDecision` (allow, deny, ask), `permissionDecisionReason`, `updatedInput` and
`additionalContext`. Exit 2 blocks, its stderr the reason. Any other code, a timeout or a
command that cannot start is a non-blocking error, shown to the user.
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

_OUTPUT_LIMIT = 64 * 1024  # of stdout and of stderr, kept for the outcome


@dataclass
class HookOutcome:
    """What one hook run said."""

    hook: HookCommand
    exit_code: int | None = None  # None: timed out or could not start
    stdout: str = ""
    stderr: str = ""
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
    try:
        data = json.dumps(payload).encode()
        try:
            out, err = await asyncio.wait_for(process.communicate(data), hook.timeout)
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
    outcome.stdout = out[:_OUTPUT_LIMIT].decode("utf-8", "replace")
    outcome.stderr = err[:_OUTPUT_LIMIT].decode("utf-8", "replace")
    _read_outcome(outcome)
    return outcome


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)


def _read_outcome(outcome: HookOutcome) -> None:
    if outcome.exit_code == 2:
        outcome.blocked = True
        outcome.reason = outcome.stderr.strip() or f"blocked by a {outcome.hook.event} hook"
        return
    if outcome.exit_code != 0:
        first = outcome.stderr.strip().splitlines()
        outcome.error = f"exit {outcome.exit_code}" + (f": {first[-1]}" if first else "")
        return
    text = outcome.stdout.strip()
    try:
        output = json.loads(text) if text.startswith("{") else None
    except ValueError:
        output = None
    if not isinstance(output, dict):
        if outcome.hook.event in ("UserPromptSubmit", "SessionStart") and text:
            outcome.context = text  # plain stdout is context for these two, as in Claude Code
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
