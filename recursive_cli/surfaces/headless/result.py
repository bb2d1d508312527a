"""Claude Code's words for how a headless turn ended: the result's `terminal_reason`, and the
shape of a failed model request (a synthetic assistant message with `API Error: …`, then a
`success` result with `is_error`, `terminal_reason: "api_error"`, `api_error_status`), which the
Agent SDKs' `ResultError` and claude-code-action read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.events import FinishReason
from ...core.kernel import TurnOutcome

# the Messages API's error types by status, as its error bodies name them
_API_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                    429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
# the assistant message's `error`, in the SDKs' AssistantMessageError words
_MESSAGE_ERRORS = {401: "authentication_failed", 403: "authentication_failed", 402: "billing_error",
                   429: "rate_limit", 400: "invalid_request", 404: "invalid_request"}
_TERMINAL = {FinishReason.COMPLETED: "completed", FinishReason.MAX_STEPS: "max_turns",
             FinishReason.MAX_COST: "budget_exhausted",
             FinishReason.INTERRUPTED: "aborted_streaming",
             FinishReason.PROVIDER_ERROR: "api_error", FinishReason.PROVIDER_UNAVAILABLE: "api_error"}


def terminal(outcome: TurnOutcome, blocked: bool = False) -> str | None:
    """Claude's `terminal_reason` for a turn (None where Claude has no word for ours)."""
    if blocked:
        return "blocked_by_hook"
    if outcome.halted:
        return "hook_stopped"
    if outcome.finish_reason is FinishReason.INTERRUPTED and outcome.tool_calls:
        return "aborted_tools"
    if outcome.finish_reason is FinishReason.PERMISSION_DENIED and outcome.text:
        return "completed"  # the model answered after being refused
    return _TERMINAL.get(outcome.finish_reason)


@dataclass(frozen=True, slots=True)
class ApiFailure:
    """A model request that failed the turn, as Claude Code reports it."""

    status: int | None
    text: str  # `API Error: 500 …`: the synthetic message's text and the result's `result`

    @property
    def error_type(self) -> str:
        return _API_ERROR_TYPES.get(self.status or 0, "api_error")

    def message_fields(self) -> dict[str, Any]:
        """The fields Claude Code adds to the synthetic assistant line."""
        status = self.status or 0
        kind = "server_error" if status >= 500 or not status else _MESSAGE_ERRORS.get(status, "unknown")
        return {"error": kind, "is_api_error_message": True, "api_error_status": self.status,
                "api_error_type": self.error_type}

    def result_fields(self) -> dict[str, Any]:
        return {"terminal_reason": "api_error", "api_error_status": self.status, "api_error_type": self.error_type}


def api_failure(status: int | None, detail: str) -> ApiFailure:
    """The failure of a request that ended with `status` (None: no answer at all) and `detail`."""
    if status and detail.startswith(f"HTTP {status}"):  # (our providers' `HTTP 400 from URL: …`)
        return ApiFailure(status, f"API Error: {detail[len('HTTP '):]}")
    return ApiFailure(status, f"API Error: {status} {detail}" if status else f"API Error: {detail}")
