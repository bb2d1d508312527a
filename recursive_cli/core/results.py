"""One outcome decides the result line's subtype and the process exit code (SPEC §4).

The subtypes are Claude Code's where Claude Code has one for the ending (`error_max_turns`,
`error_max_budget_usd`, `error_max_structured_output_retries`), ours where it has none.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any

from .events import FinishReason, RunFinished
from .messages import Usage

if TYPE_CHECKING:  # (only named in annotations: a run that is no goal makes none)
    from .event_models import GoalSummary, WorktreeInfo

_TABLE: dict[FinishReason, tuple[int, str]] = {
    FinishReason.COMPLETED: (0, "success"),
    FinishReason.PROVIDER_STOP: (1, "error_during_execution"),
    FinishReason.PROVIDER_ERROR: (1, "error_during_execution"),
    FinishReason.PROVIDER_UNAVAILABLE: (75, "error_provider_unavailable"),  # EX_TEMPFAIL: try again later
    FinishReason.INTERNAL_ERROR: (1, "error_during_execution"),
    FinishReason.IO_ERROR: (1, "error_during_execution"),
    FinishReason.MAX_STEPS: (3, "error_max_turns"),  # --max-steps, Claude's --max-turns
    FinishReason.MAX_COST: (3, "error_max_budget_usd"),  # --max-cost, Claude's --max-budget-usd
    FinishReason.MAX_DURATION: (3, "error_max_budget"),
    FinishReason.MAX_ITERATIONS: (3, "error_max_budget"),
    FinishReason.TRANSCRIPT_LIMIT: (3, "error_max_budget"),
    FinishReason.GOAL_NOT_MET: (4, "error_goal_not_met"),
    FinishReason.STUCK: (5, "error_stuck"),
    FinishReason.PERMISSION_DENIED: (6, "error_permission"),
    FinishReason.INTERRUPTED: (130, "interrupted"),
    # Claude Code's subtype for a --json-schema answer that never validated
    FinishReason.STRUCTURED_OUTPUT_INVALID: (1, "error_max_structured_output_retries"),
}
# A reply cut off at the output limit or by the content filter is not an answer, only part of
# one: it stays out of stdout (the JSON result and the session still have it). These are the
# kernel's words for those stops (`core/kernel.py`, `_stop_detail`).
_CUT_OFF = ("the model stopped: length", "the model stopped: content_filter")


def provider_failure(unavailable: bool) -> FinishReason:
    """The ending of a run whose model request failed for good: an outage that outlived its
    retries (ProviderError.unavailable) is PROVIDER_UNAVAILABLE, any other PROVIDER_ERROR."""
    return FinishReason.PROVIDER_UNAVAILABLE if unavailable else FinishReason.PROVIDER_ERROR


def exit_code_for(reason: FinishReason, signum: int | None = None) -> tuple[int, str]:
    """The exit code and subtype for a finish reason (an interrupt: 128 + its signal number)."""
    code, subtype = _TABLE[reason]
    if reason is FinishReason.INTERRUPTED and signum in (signal.SIGTERM, signal.SIGPIPE):
        code = 128 + signum  # 143 for SIGTERM; 141 when stdout's reader went away
    return code, subtype


def final_answer(reason: FinishReason, text: str, detail: str) -> str:
    """The model's final answer in a run that ended with `reason`: its last text, whatever the
    outcome (after a denial, a refusal, a goal not met…), except a reply that was cut off."""
    if reason is FinishReason.PROVIDER_STOP and detail.startswith(_CUT_OFF):
        return ""
    return text


def stop_reason(reason: FinishReason, detail: str) -> str | None:
    """Claude's `stop_reason` when the ending decides it: `max_tokens` for a reply cut off at the
    output limit, `refusal` for a refused one; None: the stop of the last reply stands."""
    if reason is not FinishReason.PROVIDER_STOP:
        return None
    if detail.startswith("the model stopped: length"):
        return "max_tokens"
    return "refusal" if detail.startswith("the model stopped: refusal") else None


def errors(code: int, detail: str, reason: FinishReason) -> list[str]:
    """The result line's `errors`: empty on success, else the one line that says what went wrong."""
    return [detail or reason.value] if code != 0 else []


def make_result(*, reason: FinishReason, text: str, detail: str, session_id: str, num_turns: int,
                num_steps: int, duration_ms: int, usage: Usage, cost: float | None,
                signum: int | None = None, goal: GoalSummary | None = None,
                structured_output: Any = None, model_usage: dict[str, Usage] | None = None,
                worktree: WorktreeInfo | None = None) -> RunFinished:
    """The final result record for a run that ended with `reason` (and a goal run's `goal`)."""
    code, subtype = exit_code_for(reason, signum)
    return RunFinished(subtype=subtype, is_error=code != 0, exit_code=code,
                       result=text if code == 0 else (text or detail), session_id=session_id,
                       num_turns=num_turns, num_steps=num_steps, duration_ms=duration_ms,
                       usage=usage, total_cost_usd=cost, finish_reason=reason.value,
                       error=detail if code != 0 else "", goal=goal,
                       answer=final_answer(reason, text, detail), structured_output=structured_output,
                       model_usage=dict(model_usage or {}), worktree=worktree)

