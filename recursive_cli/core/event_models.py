"""The data that events carry: a goal's checks, the judge's verdict, an evaluation, the summary.

These are core models (nothing above `events.py` is imported), so the goal driver's
`goal_evaluation` event and the result line's `goal` object can be typed without the core
reaching up into `drivers/`. The drivers import them back from here.
"""

# (No `from __future__ import annotations`: pydantic would compile and evaluate every field's
# annotation from its text when the models are made at import; issue 16.)

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, computed_field, field_serializer

from .messages import Usage

GoalStatus = Literal["running", "met", "not_met"]
# Tails and the judge's accounting are in the goal_evaluation events (and records), not the result line.
_NO_TAILS: Any = {"checks": {"__all__": {"output_tail"}}, "judge": {"usage", "cost_usd", "requests"}}


class CheckResult(BaseModel):
    """One check after one turn: its exit code (None when killed), time and output tail."""

    model_config = ConfigDict(defer_build=True)  # built when first made (events.EventModel)

    command: str
    exit_code: int | None
    timed_out: bool = False
    duration_s: float = 0.0
    output_tail: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def status(self) -> str:
        """`exit 0`, `exit 1`, `killed by SIGKILL` or `timed out after 5 s`."""
        if self.timed_out:
            return f"timed out after {self.duration_s:.0f} s and was killed"
        if self.exit_code is None:
            return "did not finish"
        if self.exit_code < 0:
            return f"killed by signal {-self.exit_code}"
        return f"exit {self.exit_code}"


class JudgeVerdict(BaseModel):
    """The judge's decision; `valid` is False when its answer was not the JSON asked for.
    `usage` is what its `requests` used (2 when it was asked again), `cost_usd` their cost
    (None when its model has no price); a verdict recorded before they were kept has none."""

    model_config = ConfigDict(defer_build=True)  # built when first made (events.EventModel)

    achieved: bool
    reason: str
    model: str = ""
    valid: bool = True
    usage: Usage | None = None
    cost_usd: float | None = None
    requests: int | None = None


class Evaluation(BaseModel):
    """The verdict after one goal turn: every check's result and, if it was asked, the judge's."""

    model_config = ConfigDict(defer_build=True)  # built when first made (events.EventModel)

    turn: int
    achieved: bool
    checks: list[CheckResult] = []  # (copied per model; `default_factory=list` costs a signature parse)
    judge: JudgeVerdict | None = None

    def reason(self) -> str:
        """One line saying why the goal is (not) met."""
        failing = [check for check in self.checks if not check.passed]
        if failing:
            return "; ".join(f"check `{check.command}` {check.status()}" for check in failing)
        if self.judge is not None:
            return f"judge: {self.judge.reason}"
        return f"all {len(self.checks)} checks passed" if self.checks else "nothing to check"

    def compact(self) -> "Evaluation":
        """The same verdict without output tails, as kept in the state and the result line."""
        checks = [check.model_copy(update={"output_tail": ""}) for check in self.checks]
        return self.model_copy(update={"checks": checks})


class WorktreeInfo(BaseModel):
    """The `worktree` object of the result line of a session that works in a git worktree of
    its own (`-w`): where it is and its branch."""

    model_config = ConfigDict(defer_build=True)

    path: str
    branch: str


class GoalSummary(BaseModel):
    """The `goal` object of a goal run's result line; its verdicts leave out the output tails."""

    model_config = ConfigDict(defer_build=True)  # built when first made (events.EventModel)

    status: GoalStatus
    until: str | None
    checks: list[str]
    turns: int
    max_turns: int
    reason: str
    verdicts: list[Evaluation]

    @field_serializer("verdicts")
    def _without_tails(self, verdicts: list[Evaluation]) -> list[dict[str, Any]]:
        return [verdict.model_dump(mode="json", exclude=_NO_TAILS) for verdict in verdicts]
