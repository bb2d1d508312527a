"""The event-loop driver (SPEC §6): turns of `RuntimeCore.run`, then wakeups and finished jobs.

After each turn it decides, in order: a plan was presented in plan mode → end, the plan the
answer (features/plan_mode.py); `stop_loop` was called → end; a message was queued
(`recursive queue`) → a turn on it; the wakeup is due → a turn with its prompt; a background
job ended → a turn with its exit code and output tail; a wakeup is pending or jobs are running
→ wait for the first of them; nothing is pending → end. A wait wakes at once when a job ends,
when the wakeup falls due, on SIGINT/SIGTERM (the runtime's interrupt token), when
--max-duration runs out, and when a message is queued (the runtime's inbox looks into the
session folder every 0.2 s; nothing else is polled for). However the loop ends, every
background job is killed.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..core.events import FinishReason, LoopWaiting, Notice
from ..core.interrupt import Interrupted
from ..core.kernel import TurnOutcome
from ..core.messages import CONTINUE, unfinished
from ..features.compaction import Compactor
from ..features.loop.control import DEFAULT_MAX_ITERATIONS, LoopControl, LoopState
from ..features.loop.jobs import BackgroundJobManager, JobRecord
from ..features.loop.reports import job_report, waiting_text
from ..features.loop.wakeup import Wakeup, WakeupSlot

if TYPE_CHECKING:
    from ..core.runtime import RuntimeCore
    from ..features.sessions.reader import LoadedSession

TriggerKind = Literal["start", "resume", "wakeup", "job", "queue"]


@dataclass(slots=True, kw_only=True, eq=False)
class LoopIteration(Notice):
    """The loop starts another turn, for a prompt, a wakeup or a finished job."""

    type: Literal["loop_iteration"] = "loop_iteration"

    iteration: int
    max_iterations: int
    trigger: str
    detail: str

    def text(self) -> str:
        about = f" ({self.detail})" if self.detail else ""
        return f"↻ loop iteration {self.iteration}: {self.trigger}{about}"


@dataclass(frozen=True)
class Trigger:
    """Why a turn runs, and its prompt (None: carry on with the interrupted turn)."""

    kind: TriggerKind
    prompt: str | None
    detail: str = ""


class EventLoop:
    """Runs one loop over a runtime whose `loop` control is attached."""

    def __init__(self, runtime: RuntimeCore, control: LoopControl) -> None:
        self.runtime = runtime
        self.control = control
        self.iterations = 0  # turns run by this process; --max-iterations counts these
        self._last = TurnOutcome(FinishReason.COMPLETED)

    async def run(self, first: Trigger | None) -> TurnOutcome:
        """Run `first` (if any), then whatever comes due, until something ends the loop."""
        completed = False
        try:
            outcome = await self._drive(first)
            completed = (outcome.finish_reason is FinishReason.COMPLETED
                         and not self.runtime.interrupt_token.is_set())
            return outcome
        finally:
            await self.control.shutdown(completed)

    async def _drive(self, trigger: Trigger | None) -> TurnOutcome:
        while True:
            if trigger is not None:
                self._last = await self._turn(trigger)
                if self._last.finish_reason is not FinishReason.COMPLETED:
                    return self._last
                if _planned(self.runtime):  # (its wakeup dropped as the loop ends: no turn may act on the plan)
                    return self._ended()
            decision = await self._next()
            if decision is None:
                return self._ended()
            if isinstance(decision, TurnOutcome):
                return decision
            trigger = decision

    async def _turn(self, trigger: Trigger) -> TurnOutcome:
        self.iterations += 1
        if trigger.prompt is not None:
            self.control.new_turn()
        self.runtime.emit(LoopIteration(iteration=self.iterations,
                                        max_iterations=self.control.max_iterations,
                                        trigger=trigger.kind, detail=trigger.detail))
        if trigger.prompt is None:
            return await self.runtime.continue_turn()
        return await self.runtime.run(trigger.prompt)

    async def _next(self) -> Trigger | TurnOutcome | None:
        """The next turn to run, an outcome that ends the loop, or None when nothing is pending."""
        control, jobs = self.control, self.control.jobs
        while True:
            if self.runtime.interrupt_token.is_set():
                return TurnOutcome(FinishReason.INTERRUPTED, text=self._last.text, detail="interrupted")
            if control.stop_reason is not None:
                return None
            queued = self._queued()  # `recursive queue`: at once, before any wakeup
            if queued is not None:
                return queued
            changed = jobs.changed() if jobs is not None else asyncio.Event()
            changed.clear()  # before looking: an ending seen after this wakes the wait below
            wakeup = control.slot.pending()
            ended = jobs.next_unreported() if jobs is not None else None
            running = jobs.running() if jobs is not None else []
            if wakeup is None and ended is None and not running:
                return None
            stop = self._stop()
            if stop is not None:
                return stop
            if wakeup is not None and wakeup.remaining() <= 0:
                control.take_wakeup()
                return Trigger("wakeup", wakeup.prompt, wakeup.reason)
            if ended is not None:
                control.mark_reported(ended)
                return Trigger("job", job_report(ended), ended.id)
            await self._wait(changed, wakeup, running)

    def _queued(self) -> Trigger | TurnOutcome | None:
        """A turn on the oldest message queued by `recursive queue` (if the budgets allow one)."""
        inbox = self.runtime.inbox
        if inbox is None or not inbox.has_waiting():
            return None
        stop = self._stop()
        if stop is not None:
            return stop
        text = inbox.take()
        return Trigger("queue", text) if text is not None else None

    def _stop(self) -> TurnOutcome | None:
        """An outcome when a budget forbids another turn."""
        text = self._last.text
        if self.iterations >= self.control.max_iterations:
            return TurnOutcome(FinishReason.MAX_ITERATIONS, text=text,
                               detail=f"reached --max-iterations {self.control.max_iterations}")
        exceeded = self.runtime.budget.check_iteration(len(self.runtime.transcript()))
        if exceeded is not None:
            return TurnOutcome(exceeded.reason, text=text, detail=exceeded.detail)
        return None

    async def _wait(self, changed: asyncio.Event, wakeup: Wakeup | None,
                    running: list[JobRecord]) -> None:
        """Sleep until a job ends, the wakeup is due, an interrupt, or --max-duration runs out."""
        timeout = _earliest(wakeup.remaining() if wakeup else None, self._duration_left())
        self.runtime.emit(LoopWaiting(
            wakeup_due=wakeup.due_iso() if wakeup else None,
            running_jobs=[record.id for record in running],
            countdown_to=wakeup.due if wakeup else None, shown=waiting_text(wakeup, running)))

        try:
            await self.runtime.interrupt_token.race(asyncio.wait_for(self._first(changed), timeout))
        except (asyncio.TimeoutError, Interrupted):
            pass  # the caller looks again and sees which

    async def _first(self, changed: asyncio.Event) -> None:
        """Until a job ends or (with an inbox) a queued message arrives."""
        inbox = self.runtime.inbox
        if inbox is None:
            await changed.wait()
            return
        waits = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(inbox.arrival())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def _duration_left(self) -> float | None:
        return self.runtime.budget.remaining_duration()

    def _ended(self) -> TurnOutcome:
        """The loop ran out of things to do, or the agent stopped it: success."""
        last = self._last
        text = last.text or (self.control.stop_reason or "")
        return TurnOutcome(FinishReason.COMPLETED, text=text, steps=last.steps, usage=last.usage)


def _planned(runtime: RuntimeCore) -> bool:
    """Whether the turn presented a plan in plan mode: the plan is the loop's answer."""
    if "recursive_cli.features.plan_mode" not in sys.modules:  # (never loaded: not in plan mode)
        return False
    from ..features.plan_mode import planned

    return planned(runtime)


def _earliest(*delays: float | None) -> float | None:
    known = [max(0.0, delay) for delay in delays if delay is not None]
    return min(known) if known else None


def install_loop(runtime: RuntimeCore, wakeup_slot: WakeupSlot | None = None,
                 jobs: BackgroundJobManager | None = None, *, with_jobs: bool = True) -> LoopControl:
    """The runtime's loop control (made and attached if it has none), using the given slot and
    job manager, with the loop tools registered once."""
    from ..features.loop.tools import loop_tools

    control = runtime.feature(LoopControl) or LoopControl()
    control.slot = wakeup_slot or control.slot
    control.jobs = (jobs or control.jobs or BackgroundJobManager()) if with_jobs else None
    control.attach(runtime)
    have = set(runtime.tools.names())
    for tool in loop_tools(control):
        if tool.name not in have:
            runtime.add_tool(tool)
    return control


async def run_event_loop(runtime: RuntimeCore, prompt: str, wakeup_slot: WakeupSlot | None = None,
                         jobs: BackgroundJobManager | None = None, *,
                         max_iterations: int = DEFAULT_MAX_ITERATIONS, with_jobs: bool = True,
                         max_context_tokens: int | None = None,
                         jobs_folder: Path | None = None) -> TurnOutcome:
    """Run `prompt`, then keep going on wakeups and finished background jobs (SPEC §6).

    `jobs_folder` holds the jobs' output (the session folder; None: a temp folder);
    `max_context_tokens` compacts the conversation at that size."""
    control = install_loop(runtime, wakeup_slot, jobs, with_jobs=with_jobs)
    control.max_iterations, control.max_context_tokens = max_iterations, max_context_tokens
    _prepare(runtime, control, jobs_folder)
    return await EventLoop(runtime, control).run(Trigger("start", prompt))


async def resume_event_loop(runtime: RuntimeCore, session: LoadedSession, prompt: str) -> TurnOutcome:
    """Continue a saved loop: its pending wakeup is slept out, jobs that died with the old
    process are reported as lost, an interrupted turn carries on; PROMPT, if given, runs first.
    A damaged loop state ends the run with a clear error (SessionStateError) rather than a different loop."""
    state = runtime.state.get(LoopState) or LoopState()  # SessionStateError when damaged
    control = install_loop(runtime)
    control.restore(state)
    _prepare(runtime, control, session.folder)
    return await EventLoop(runtime, control).run(_first_turn(session, prompt))


def _prepare(runtime: RuntimeCore, control: LoopControl, folder: Path | None) -> None:
    """Jobs' output goes to `folder` (else where the job manager says: a temp folder by
    default); save the state."""
    if control.jobs is not None and folder is not None:
        control.jobs.folder = folder
    if control.max_context_tokens and isinstance(runtime.compactor, Compactor):
        runtime.compactor.max_tokens = control.max_context_tokens
    control.save()


def _first_turn(session: LoadedSession, prompt: str) -> Trigger | None:
    """PROMPT; else "Continue." for a loop that had ended; else the interrupted turn, if any."""
    if prompt:
        return Trigger("resume", prompt)
    if session.meta.status == "completed":
        return Trigger("resume", CONTINUE)
    if unfinished(session.messages):
        return Trigger("resume", None, "carrying on with the interrupted turn")
    return None


NOTE = ("Mode: autonomous loop. Use schedule_wakeup to look again later, run_background for long "
        "commands, and stop_loop when the work is done. After your turn the loop goes on only "
        "for a scheduled wakeup or a background job: a job's exit code and output tail come "
        "back as a new turn. With neither pending, the loop ends.")


class LoopDriver:
    """`recursive loop`: the event loop (SPEC §6)."""

    mode = "loop"
    note = NOTE

    def install(self, runtime: RuntimeCore) -> None:
        """The loop tools, bound to a loop control with background jobs."""
        install_loop(runtime)

    async def start(self, runtime: RuntimeCore, prompt: str) -> TurnOutcome:
        return await run_event_loop(runtime, prompt)

    async def resume(self, runtime: RuntimeCore, session: LoadedSession, prompt: str) -> TurnOutcome:
        return await resume_event_loop(runtime, session, prompt)
