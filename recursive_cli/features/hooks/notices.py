"""The command hooks' notices: one started, one ended (core/events.py says how a notice is
declared and shown)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...core.events import Notice


@dataclass(slots=True, kw_only=True, eq=False)
class HookStarted(Notice):
    """A command hook of the user's settings started (stream-json: with --include-hook-events)."""

    type: Literal["hook_started"] = "hook_started"

    hook_id: str
    hook_name: str  # `PreToolUse:Bash`, as Claude names it
    hook_event: str
    command: str
    source: str  # the settings file (or `--settings`) it comes from


# A block of these is told by the line it causes — the call's denial, the prompt's error — with
# its reason: a line of its own would say it twice.
_TOLD_ELSEWHERE = frozenset({"PreToolUse", "UserPromptSubmit"})


@dataclass(slots=True, kw_only=True, eq=False)
class HookFinished(Notice):
    """A command hook ended: `success`, `blocked`, `error` or `timeout`; the terminal shows
    the ones that did not succeed."""

    type: Literal["hook_finished"] = "hook_finished"

    hook_id: str
    hook_name: str
    hook_event: str
    outcome: str
    exit_code: int | None
    duration_s: float
    reason: str = ""  # why it blocked, or the error
    stdout: str = ""
    stderr: str = ""

    def text(self) -> str:
        if self.outcome == "blocked" and self.hook_event in _TOLD_ELSEWHERE:
            return ""
        if self.outcome == "blocked":
            return f"⚑ {self.hook_name} hook blocked: {self.reason}"
        if self.outcome in ("error", "timeout"):
            return f"warning: {self.hook_name} hook failed ({self.reason}); going on"
        return ""
