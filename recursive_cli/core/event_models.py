"""The data that events carry: a goal's checks, the judge's verdict, an evaluation, the summary.

These are core models (nothing above `events.py` is imported), so the goal driver's
`goal_evaluation` event and the result line's `goal` object can be typed without the core
reaching up into `drivers/`. The drivers import them back from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from .messages import Usage
from .values import Computed, as_json

GoalStatus = Literal["running", "met", "not_met"]


@dataclass(slots=True, kw_only=True)
class CheckResult:
    """One check after one turn: its exit code (None when killed), time and output tail."""

    command: str
    exit_code: int | None
    timed_out: bool = False
    duration_s: float = 0.0
    output_tail: str = ""
    _passed: ClassVar[Computed] = Computed("passed")  # shown in its JSON form

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


@dataclass(slots=True, kw_only=True)
class JudgeVerdict:
    """The judge's decision; `valid` is False when its answer was not the JSON asked for.
    `usage` is what its `requests` used (2 when it was asked again), `cost_usd` their cost
    (None when its model has no price); a verdict recorded before they were kept has none."""

    achieved: bool
    reason: str
    model: str = ""
    valid: bool = True
    usage: Usage | None = None
    cost_usd: float | None = None
    requests: int | None = None


@dataclass(slots=True, kw_only=True)
class Evaluation:
    """The verdict after one goal turn: every check's result and, if it was asked, the judge's."""

    turn: int
    achieved: bool
    checks: list[CheckResult] = field(default_factory=list)
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
        return replace(self, checks=[replace(check, output_tail="") for check in self.checks])


@dataclass(slots=True, kw_only=True)
class WorktreeInfo:
    """The `worktree` object of the result line of a session that works in a git worktree of
    its own (`-w`): where it is and its branch."""

    path: str
    branch: str


@dataclass(slots=True, kw_only=True)
class GoalSummary:
    """The `goal` object of a goal run's result line; its verdicts leave out the output tails."""

    status: GoalStatus
    until: str | None
    checks: list[str]
    turns: int
    max_turns: int
    reason: str
    verdicts: list[Evaluation]

    def as_json(self) -> dict[str, Any]:
        """Its JSON form, the verdicts without their checks' output tails (those are in the
        goal_evaluation events)."""
        return {**as_json(self), "verdicts": [_without_tails(verdict) for verdict in self.verdicts]}


def _without_tails(verdict: Evaluation) -> dict[str, Any]:
    """(and without the judge's accounting: also in the goal_evaluation events and records)"""
    checks = [as_json(check, exclude=_TAIL) for check in verdict.checks]
    judge = None if verdict.judge is None else as_json(verdict.judge, exclude=_ACCOUNTING)
    return {**as_json(verdict), "checks": checks, "judge": judge}


_TAIL = frozenset({"output_tail"})
_ACCOUNTING = frozenset({"usage", "cost_usd", "requests"})
