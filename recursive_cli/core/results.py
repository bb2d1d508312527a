"""One outcome decides the result line's subtype and the process exit code (SPEC §4)."""

from __future__ import annotations

import signal

from .event_models import GoalSummary
from .events import FinishReason, RunFinished
from .messages import Usage

_TABLE: dict[FinishReason, tuple[int, str]] = {
    FinishReason.COMPLETED: (0, "success"),
    FinishReason.PROVIDER_STOP: (1, "error_during_execution"),
    FinishReason.PROVIDER_ERROR: (1, "error_during_execution"),
    FinishReason.INTERNAL_ERROR: (1, "error_during_execution"),
    FinishReason.IO_ERROR: (1, "error_during_execution"),
    FinishReason.MAX_STEPS: (3, "error_max_budget"),
    FinishReason.MAX_COST: (3, "error_max_budget"),
    FinishReason.MAX_DURATION: (3, "error_max_budget"),
    FinishReason.MAX_ITERATIONS: (3, "error_max_budget"),
    FinishReason.TRANSCRIPT_LIMIT: (3, "error_max_budget"),
    FinishReason.GOAL_NOT_MET: (4, "error_goal_not_met"),
    FinishReason.STUCK: (5, "error_stuck"),
    FinishReason.PERMISSION_DENIED: (6, "error_permission"),
    FinishReason.INTERRUPTED: (130, "interrupted"),
}


def exit_code_for(reason: FinishReason, signum: int | None = None) -> tuple[int, str]:
    """The exit code and subtype for a finish reason (an interrupt: 128 + its signal number)."""
    code, subtype = _TABLE[reason]
    if reason is FinishReason.INTERRUPTED and signum in (signal.SIGTERM, signal.SIGPIPE):
        code = 128 + signum  # 143 for SIGTERM; 141 when stdout's reader went away
    return code, subtype


def make_result(*, reason: FinishReason, text: str, detail: str, session_id: str, num_turns: int,
                num_steps: int, duration_ms: int, usage: Usage, cost: float | None,
                signum: int | None = None, goal: GoalSummary | None = None) -> RunFinished:
    """The final result record for a run that ended with `reason` (and a goal run's `goal`)."""
    code, subtype = exit_code_for(reason, signum)
    return RunFinished(subtype=subtype, is_error=code != 0, exit_code=code,
                       result=text if code == 0 else (text or detail), session_id=session_id,
                       num_turns=num_turns, num_steps=num_steps, duration_ms=duration_ms,
                       usage=usage, total_cost_usd=cost, finish_reason=reason.value,
                       error=detail if code != 0 else "", goal=goal)

