"""Budgets shared by every turn of a run: steps per turn, cost, wall clock and transcript size."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .events import FinishReason
from .messages import Usage


@dataclass
class Budget:
    """Limits and the running totals they are checked against."""

    max_steps: int = 100
    max_cost: float | None = None
    max_duration: float | None = None
    max_messages: int = 50_000
    spent_cost: float = 0.0
    usage: Usage = field(default_factory=Usage)
    cost_known: bool = True
    started: float = field(default_factory=time.monotonic)

    def charge(self, usage: Usage, cost: float | None) -> None:
        """Add one request's usage and cost (None when the model's price is unknown)."""
        self.usage = self.usage + usage
        if cost is None:
            self.cost_known = False
        else:
            self.spent_cost += cost

    @property
    def total_cost(self) -> float | None:
        return self.spent_cost if self.cost_known else None

    def exceeded(self, steps: int, messages: int) -> tuple[FinishReason, str] | None:
        """The budget that is used up before another model call, if any."""
        if steps >= self.max_steps:
            return FinishReason.MAX_STEPS, f"reached --max-steps {self.max_steps}"
        if self.max_cost is not None and self.spent_cost >= self.max_cost:
            return FinishReason.MAX_COST, f"spent ${self.spent_cost:.4f} of --max-cost ${self.max_cost:g}"
        if self.max_duration is not None and time.monotonic() - self.started >= self.max_duration:
            return FinishReason.MAX_DURATION, f"ran for the --max-duration of {self.max_duration:g} s"
        if messages >= self.max_messages:
            return FinishReason.TRANSCRIPT_LIMIT, f"the transcript reached {messages} messages"
        return None
