"""Stuck detection: a model repeating failing tool calls gets its turn ended instead of burning budget."""

from __future__ import annotations

from collections import deque

from .messages import ToolCall

REPEAT_LIMIT = 3
WINDOW = 10
FAILING_SHARE = 0.8


class StuckDetector:
    """Ends a turn after the same failing call 3 times in a row, or ≥ 80% failures over the last 10."""

    def __init__(self) -> None:
        self._recent: deque[bool] = deque(maxlen=WINDOW)
        self._last_failure: tuple[str, str] | None = None
        self._repeats = 0

    def record(self, call: ToolCall, is_error: bool) -> None:
        """Note one tool result."""
        self._recent.append(is_error)
        key = (call.name, call.arguments)
        if not is_error:
            self._last_failure, self._repeats = None, 0
        elif key == self._last_failure:
            self._repeats += 1
        else:
            self._last_failure, self._repeats = key, 1

    def verdict(self) -> str | None:
        """Why the agent looks stuck, or None."""
        if self._repeats >= REPEAT_LIMIT and self._last_failure:
            return f"the same failing call to {self._last_failure[0]} was repeated {self._repeats} times"
        failures = sum(self._recent)
        if len(self._recent) == WINDOW and failures >= FAILING_SHARE * WINDOW:
            return f"{failures} of the last {WINDOW} tool calls failed"
        return None
