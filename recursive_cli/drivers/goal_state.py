"""What a goal run keeps in the session (meta.json `state.goal`), so `resume` can continue it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, ValidationError

from ..core.errors import SessionStateError
from ..core.event_models import Evaluation, GoalStatus, GoalSummary
from .checks import DEFAULT_CHECK_TIMEOUT

if TYPE_CHECKING:
    from ..core.runtime import RuntimeCore

STATE_KEY = "goal"
DEFAULT_MAX_TURNS = 10


class GoalState(BaseModel):
    """The goal (task, condition, checks, limits) and how far the run has got."""

    prompt: str
    until: str | None = None
    checks: list[str] = Field(default_factory=list)
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
    verdicts: list[Evaluation] = Field(default_factory=list)

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
    raw = runtime.state.get(STATE_KEY)
    if not raw:
        return None
    try:
        return GoalState.model_validate(raw)
    except ValidationError as exc:
        raise SessionStateError("goal", _first_problem(exc)) from None


def _first_problem(exc: ValidationError) -> str:
    """`field: what is wrong` for the first error pydantic found (one line)."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


def save_goal(runtime: RuntimeCore, state: GoalState | None) -> None:
    """Persist the goal state now (None clears it)."""
    runtime.save_state(STATE_KEY, None if state is None else state.model_dump(mode="json"))
