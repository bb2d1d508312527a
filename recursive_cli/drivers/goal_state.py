"""What a goal run keeps in the session (meta.json `state.goal`), so `resume` can continue it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from ..core.event_models import Evaluation, GoalStatus, GoalSummary
from ..core.state import StatePart
from .checks import DEFAULT_CHECK_TIMEOUT

if TYPE_CHECKING:
    from ..core.runtime import RuntimeCore

STATE_KEY = "goal"
DEFAULT_MAX_TURNS = 10


@dataclass(slots=True, kw_only=True)
class GoalState(StatePart):
    """The goal (task, condition, checks, limits) and how far the run has got."""

    key: ClassVar[str] = STATE_KEY

    prompt: str
    until: str | None = None
    checks: list[str] = field(default_factory=list)
    max_turns: int = DEFAULT_MAX_TURNS
    check_timeout: float = DEFAULT_CHECK_TIMEOUT
    judge_model: str | None = None
    status: GoalStatus = "running"
    turns: int = 0  # goal turns started; a turn continued after an interrupt is the same turn
    evaluated: int = 0  # goal turns whose verdict is in (== turns between turns)
    stalled: int = 0  # turns in a row with no tool call and no file change
    next_prompt: str = ""
    reason: str = ""
    judge_requests: int = 0  # requests the judge made to the run's own provider
    verdicts: list[Evaluation] = field(default_factory=list)

    def describe(self) -> str:
        """The goal as one sentence for prompts: the condition and/or the checks."""
        parts = []
        if self.until:
            parts.append(f"this condition holds: {self.until}")
        if self.checks:
            parts.append("these checks pass (exit 0): " + ", ".join(f"`{c}`" for c in self.checks))
        return " and ".join(parts)

    def result_fields(self) -> GoalSummary:
        """The `goal` object of the run's result line."""
        return GoalSummary(status=self.status, until=self.until, checks=list(self.checks),
                           turns=self.turns, max_turns=self.max_turns, reason=self.reason,
                           verdicts=list(self.verdicts))



def load_goal(runtime: RuntimeCore) -> GoalState | None:
    """The goal kept in the runtime's state, if any; raises SessionStateError if it is damaged."""
    return runtime.state.get(GoalState)


def save_goal(runtime: RuntimeCore, state: GoalState | None) -> None:
    """Persist the goal state now (None clears it)."""
    runtime.state.put(GoalState, state)
