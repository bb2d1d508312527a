"""What a goal run keeps in the session (meta.json `state.goal`), so `resume` can continue it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from .checks import DEFAULT_CHECK_TIMEOUT, CheckResult
from .judge import JudgeVerdict

if TYPE_CHECKING:
    from ..runtime import AgentRuntime

STATE_KEY = "goal"
DEFAULT_MAX_TURNS = 10

GoalStatus = Literal["running", "met", "not_met"]
_NO_TAILS: Any = {"checks": {"__all__": {"output_tail"}}}  # tails are in the goal_evaluation events


class Evaluation(BaseModel):
    """The verdict after one goal turn: every check's result and, if it was asked, the judge's."""

    turn: int
    achieved: bool
    checks: list[CheckResult] = Field(default_factory=list)
    judge: JudgeVerdict | None = None

    def reason(self) -> str:
        """One line saying why the goal is (not) met."""
        failing = [check for check in self.checks if not check.passed]
        if failing:
            return "; ".join(f"check `{check.command}` {check.status()}" for check in failing)
        if self.judge is not None:
            return f"judge: {self.judge.reason}"
        return f"all {len(self.checks)} checks passed" if self.checks else "nothing to check"

    def compact(self) -> Evaluation:
        """The same verdict without output tails, as kept in the state and the result line."""
        checks = [check.model_copy(update={"output_tail": ""}) for check in self.checks]
        return self.model_copy(update={"checks": checks})


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

    def result_fields(self) -> dict[str, Any]:
        """The `goal` object of the run's result line."""
        return {"status": self.status, "until": self.until, "checks": self.checks,
                "turns": self.turns, "max_turns": self.max_turns, "reason": self.reason,
                "verdicts": [v.model_dump(mode="json", exclude=_NO_TAILS) for v in self.verdicts]}


def load_goal(runtime: AgentRuntime) -> GoalState | None:
    """The goal kept in the runtime's state, if any."""
    raw = runtime.state.get(STATE_KEY)
    return GoalState.model_validate(raw) if raw else None


def save_goal(runtime: AgentRuntime, state: GoalState | None) -> None:
    """Persist the goal state now (None clears it)."""
    runtime.save_state(STATE_KEY, None if state is None else state.model_dump(mode="json"))
