"""The goal driver (SPEC §7): turns over `RuntimeCore.run` until the goal verifiably holds.

After every turn each check runs; if all pass and there is a condition, the judge is asked.
Success needs every check green and the judge's yes. Otherwise the next turn's prompt carries
the condition, the judge's reason and each failing check's output tail. The run stops after
`max_turns`, or after STALL_TURNS turns in a row that made no tool call and changed no file
(see fingerprint.py), with FinishReason.GOAL_NOT_MET; budgets, interrupts and errors end it
as they end any turn. Progress is saved in the session before and after every step, so
`resume` continues an interrupted goal with the turns it has left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..core.events import ApiRetry, FinishReason, Notice
from ..core.interrupt import Interrupted
from ..core.kernel import TurnOutcome
from ..core.messages import CONTINUE, Message, unfinished
from ..core.provider import ChatProvider, ProviderError, RetryNotice
from ..core.results import provider_failure
from ..core.state import count_side_replies
from ..core.wording import counted
from .checks import CheckResult, run_checks
from .fingerprint import workspace_fingerprint
from .goal_state import DEFAULT_MAX_TURNS, Evaluation, GoalState, load_goal, save_goal
from .judge import GoalJudge, JudgeVerdict

if TYPE_CHECKING:
    from ..core.runtime import RuntimeCore

STALL_TURNS = 3
GOAL_NOTE = ("Goal of this run: keep working until {goal}. After each of your turns this is "
             "verified{how}, and you are told the result. When you believe the goal holds, stop "
             "calling tools and say what you did.")


@dataclass(slots=True, kw_only=True, eq=False)
class GoalEvaluated(Notice):
    """The verdict after a goal turn: the checks' results and the judge's, if asked."""

    type: Literal["goal_evaluation"] = "goal_evaluation"

    turn: int
    max_turns: int
    session_turn: int
    achieved: bool
    checks: list[CheckResult]
    judge: JudgeVerdict | None
    reason: str

    def text(self) -> str:
        mark, word = ("✓", "met") if self.achieved else ("✗", "not met")
        return f"{mark} goal {word} after turn {self.turn}/{self.max_turns}: {self.reason}"


class _RetryHooks:
    """Judge requests stream nothing to the terminal but report their retries like turns do."""

    def __init__(self, runtime: RuntimeCore) -> None:
        self._runtime = runtime

    def on_text(self, delta: str) -> None:
        pass

    def on_retry(self, notice: RetryNotice) -> None:
        self._runtime.emit(ApiRetry(attempt=notice.attempt, max_retries=notice.max_retries,
                                    retry_delay_ms=int(notice.delay_seconds * 1000),
                                    error_status=notice.status, error=notice.reason))


class GoalDriver:
    """Runs one goal on a runtime; `judge` is the provider for the judge (default: the run's)."""

    def __init__(self, runtime: RuntimeCore, state: GoalState,
                 judge: ChatProvider | None = None) -> None:
        self.runtime = runtime
        self.state = state
        provider = judge or runtime.provider
        self._judge = GoalJudge(provider, runtime.budget, _RetryHooks(runtime), runtime.interrupt_token,
                                runtime)
        self._judge_shared = provider is runtime.provider

    async def start(self) -> TurnOutcome:
        """A new goal: the first turn gets the task prompt."""
        return await self._drive(self.state.prompt, new_turn=True)

    async def resume(self, prompt: str = "") -> TurnOutcome:
        """Continue a saved goal: finish a cut-short turn, else run the next one with `prompt`
        (default: the feedback saved for it). A goal that had ended gets a new round of turns."""
        state = self.state
        if state.status != "running":
            text = prompt or state.next_prompt or CONTINUE
            state.status, state.turns, state.evaluated, state.stalled = "running", 0, 0, 0
            state.verdicts, state.reason = [], ""
            return await self._drive(text, new_turn=True)
        if state.evaluated < state.turns:  # interrupted during the turn or its evaluation
            if prompt or unfinished(self.runtime.transcript()):
                return await self._drive(prompt or None, new_turn=False)
            return await self._drive(None, new_turn=False, evaluate_first=True)
        return await self._drive(prompt or state.next_prompt or state.prompt, new_turn=True)

    async def _drive(self, text: str | None, *, new_turn: bool,
                     evaluate_first: bool = False) -> TurnOutcome:
        """Turn, evaluate, repeat until something ends the run."""
        self._note_goal_in_system_prompt()
        try:
            if evaluate_first:
                last = TurnOutcome(FinishReason.COMPLETED, text=last_answer(self.runtime.transcript()))
                ended = await self._evaluate(last, progressed=True)
                if ended is not None:
                    return ended
                text, new_turn = self.state.next_prompt, True
            while True:
                ended = await self._turn_then_evaluate(text, new_turn)
                if ended is not None:
                    return ended
                text, new_turn = self.state.next_prompt, True
        finally:
            self.runtime.goal_summary = self.state.result_fields()

    async def _turn_then_evaluate(self, text: str | None, new_turn: bool) -> TurnOutcome | None:
        """One turn (`text` None continues a cut-short one) and its verdict; an outcome ends the run."""
        state = self.state
        if new_turn:
            if state.turns >= state.max_turns:
                return self._not_met(f"no turns left of --max-turns {state.max_turns}", "")
            state.turns += 1
        self._save()
        before = await asyncio.to_thread(workspace_fingerprint, self.runtime.workspace)
        runtime = self.runtime
        outcome = await (runtime.run(text) if text is not None else runtime.continue_turn())
        if outcome.finish_reason is not FinishReason.COMPLETED or self._planned():
            return outcome  # (a plan, in plan mode, is the run's answer: nothing was to be done yet)
        progressed = outcome.tool_calls > 0 or (
            await asyncio.to_thread(workspace_fingerprint, runtime.workspace) != before)
        return await self._evaluate(outcome, progressed)

    def _planned(self) -> bool:
        """Whether the turn ended with a plan (plan mode's `exit_plan_mode`)."""
        from ..features.plan_mode import planned

        return planned(self.runtime)

    async def _evaluate(self, outcome: TurnOutcome, progressed: bool) -> TurnOutcome | None:
        """Checks, then the judge if they all pass; records the verdict and decides what is next."""
        stop = self._budget_stop()
        if stop is not None:
            return stop
        checks = await run_checks(self.state.checks, self.runtime.tool_context, self._check_timeout())
        stop = self._interrupted() or self._budget_stop()
        if stop is not None:
            return stop
        judge: JudgeVerdict | None = None
        if self.state.until and all(check.passed for check in checks):
            try:
                judge = await self._ask_judge(self.state.until, checks)
            except Interrupted:
                return TurnOutcome(FinishReason.INTERRUPTED, detail="interrupted")
            except ProviderError as exc:
                return TurnOutcome(provider_failure(exc.unavailable), detail=f"goal judge: {exc.reason}")
        achieved = all(check.passed for check in checks) and (judge is None or judge.achieved)
        evaluation = Evaluation(turn=self.state.turns, achieved=achieved, checks=checks, judge=judge)
        self._record(evaluation)
        return self._decide(evaluation, outcome, progressed)

    async def _ask_judge(self, condition: str, checks: list[CheckResult]) -> JudgeVerdict:
        before = self._judge.requests
        try:
            return await self._judge.judge(condition, self.state.prompt, self.runtime.transcript(),
                                           checks)
        finally:
            if self._judge_shared:  # replies of the run's own provider, outside the conversation
                self.state.judge_requests += self._judge.requests - before
                count_side_replies(self.runtime.state, self._judge.requests - before)

    def _decide(self, evaluation: Evaluation, outcome: TurnOutcome,
                progressed: bool) -> TurnOutcome | None:
        """Met, not met for good (stalled, out of turns), or the feedback for another turn."""
        state = self.state
        if evaluation.achieved:
            state.status, state.next_prompt = "met", ""
            self._save()
            return TurnOutcome(FinishReason.COMPLETED, text=outcome.text)
        state.stalled = 0 if progressed else state.stalled + 1
        state.next_prompt = feedback_prompt(state, evaluation)
        if state.stalled >= STALL_TURNS:
            return self._not_met(f"stalled: {STALL_TURNS} turns in a row made no tool call and "
                                 f"changed no file; {evaluation.reason()}", outcome.text)
        if state.turns >= state.max_turns:
            return self._not_met(f"goal not met after {counted(state.turns, 'turn')} (--max-turns "
                                 f"{state.max_turns}); {evaluation.reason()}", outcome.text)
        self._save()
        return None

    def _record(self, evaluation: Evaluation) -> None:
        """Emit the `goal_evaluation` event and keep the verdict in the state."""
        state = self.state
        state.evaluated, state.reason = state.turns, evaluation.reason()
        state.verdicts.append(evaluation.compact())
        self._save()
        self.runtime.emit(GoalEvaluated(
            turn=evaluation.turn, max_turns=state.max_turns, session_turn=self.runtime.turn_index(),
            achieved=evaluation.achieved, checks=evaluation.checks, judge=evaluation.judge,
            reason=state.reason))


    def _not_met(self, reason: str, text: str) -> TurnOutcome:
        self.state.status, self.state.reason = "not_met", reason
        self._save()
        return TurnOutcome(FinishReason.GOAL_NOT_MET, text=text, detail=reason)

    def _budget_stop(self) -> TurnOutcome | None:
        """The budget (cost, wall clock) that is used up, as the run's ending."""
        exceeded = self.runtime.budget.check_iteration(len(self.runtime.transcript()))
        return None if exceeded is None else TurnOutcome(exceeded.reason, detail=exceeded.detail)

    def _interrupted(self) -> TurnOutcome | None:
        if self.runtime.interrupt_token.is_set():
            return TurnOutcome(FinishReason.INTERRUPTED, detail="interrupted")
        return None

    def _check_timeout(self) -> float:
        """--check-timeout, cut to what is left of --max-duration."""
        left = self.runtime.budget.remaining_duration()
        if left is None:
            return self.state.check_timeout
        return max(min(self.state.check_timeout, left), 0.1)

    def _note_goal_in_system_prompt(self) -> None:
        """Tell the model its goal in the system prompt (rebuilt on resume, so added each time)."""
        messages = self.runtime.transcript()
        how = " by running the checks" if self.state.checks else ""
        if self.state.until:
            how += (" and" if how else "") + " by a judge who reads your recent work"
        note = GOAL_NOTE.format(goal=self.state.describe(), how=how)
        if messages and messages[0].role == "system" and note not in messages[0].content:
            messages[0] = Message.system(f"{messages[0].content}\n\n{note}")
            self.runtime.set_transcript(messages)

    def _save(self) -> None:
        save_goal(self.runtime, self.state)


def feedback_prompt(state: GoalState, evaluation: Evaluation) -> str:
    """The next turn's prompt: the goal, the judge's reason, each failing check's tail."""
    parts = [f"The goal is not met yet (after turn {state.turns} of {state.max_turns}). "
             f"Keep working until {state.describe()}."]
    failing = [check for check in evaluation.checks if not check.passed]
    for check in failing:
        output = check.output_tail or "(no output)"
        fence = "`" * max(3, _longest_backtick_run(output) + 1)
        parts.append(f"Check `{check.command}` failed: {check.status()}. End of its output:\n"
                     f"{fence}\n{output}\n{fence}")
    if evaluation.judge is not None and not evaluation.judge.achieved:
        parts.append(f"All checks pass, but the judge says the condition does not hold yet: "
                     f"{evaluation.judge.reason}")
    if state.stalled:
        parts.append(f"Your last {state.stalled} turn(s) made no tool call and changed no file; "
                     f"the run stops after {STALL_TURNS} such turns in a row.")
    return "\n\n".join(parts)


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def last_answer(transcript: Sequence[Message]) -> str:
    """The text of the last assistant message."""
    return next((m.content for m in reversed(transcript) if m.role == "assistant"), "")


def set_goal(runtime: RuntimeCore, condition: str | None, max_turns: int = DEFAULT_MAX_TURNS,
             checks: Sequence[str] = ()) -> GoalState:
    """Record a new goal (no turns yet) in the runtime's state and return it."""
    if not condition and not checks:
        raise ValueError("a goal needs a condition, at least one check, or both")
    state = GoalState(prompt="", until=condition or None, checks=list(checks), max_turns=max_turns)
    save_goal(runtime, state)
    return state


async def run_goal_loop(runtime: RuntimeCore, prompt: str, until: str | None = None,
                        checks: Sequence[str] | None = None, max_turns: int | None = None, *,
                        check_timeout: float | None = None, judge: ChatProvider | None = None,
                        judge_model: str | None = None) -> TurnOutcome:
    """Start a goal on `prompt`; what is not given comes from `set_goal`'s goal, if any."""
    current = load_goal(runtime)
    base = current if current is not None and until is None and not checks else None
    state = GoalState(prompt=prompt, until=until if base is None else base.until,
                      checks=list(checks or (base.checks if base else [])),
                      max_turns=max_turns or (base.max_turns if base else DEFAULT_MAX_TURNS),
                      judge_model=judge_model)
    if check_timeout is not None:
        state.check_timeout = check_timeout
    if not state.until and not state.checks:
        raise ValueError("a goal needs a condition (until), at least one check, or both")
    return await GoalDriver(runtime, state, judge).start()


async def resume_goal_loop(runtime: RuntimeCore, prompt: str = "",
                           judge: ChatProvider | None = None) -> TurnOutcome:
    """Continue the goal saved in the runtime's state (see GoalDriver.resume)."""
    state = load_goal(runtime)
    if state is None:  # a goal session always saves its goal first: ours is lost, not the model's fault
        return TurnOutcome(FinishReason.INTERNAL_ERROR,
                           detail="this session has no saved goal to resume")
    if not state.until and not state.checks:  # (its checks kept out of a bundle): nothing could tell success
        return TurnOutcome(FinishReason.GOAL_NOT_MET,
                           detail="this goal has no condition and no checks left (a bundle's checks are "
                                  "not imported): go on with `recursive goal -c PROMPT --check CMD`")
    return await GoalDriver(runtime, state, judge).resume(prompt)
