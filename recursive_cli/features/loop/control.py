"""LoopControl: what the loop tools act on and the loop driver reads.

It holds the wakeup slot, the background jobs, the stop request and the loop's limits. Every
change is saved at once in the session (the `LoopState` part of `runtime.state`, i.e. meta.json) and reported
as an event (`WakeupScheduled`, `BackgroundJobStarted`, `BackgroundJobFinished`),

so a `kill -9` at any moment leaves enough on disk for `resume` to carry the loop on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ...core.events import Notice
from ...core.state import StatePart
from .jobs import BackgroundJobManager, JobRecord
from .notices import BackgroundJobFinished, BackgroundJobStarted, WakeupScheduled
from .reports import ending
from .wakeup import Wakeup, WakeupSlot, human_duration

if TYPE_CHECKING:
    from ...core.runtime import RuntimeCore
    from ...core.tool import CommandSandbox

STATE_KEY = "loop"
DEFAULT_MAX_ITERATIONS = 100


@dataclass(slots=True, kw_only=True)
class LoopState(StatePart):
    """The loop's part of a session's saved state."""

    key: ClassVar[str] = STATE_KEY


    max_iterations: int = DEFAULT_MAX_ITERATIONS
    max_context_tokens: int | None = None
    stop_reason: str | None = None
    wakeup: Wakeup | None = None
    jobs: list[JobRecord] = field(default_factory=list)
    next_job: int = 1


class LoopControl:
    """The wakeup slot, the background jobs (None: wakeups only) and the stop request of a loop."""

    def __init__(self, slot: WakeupSlot | None = None, jobs: BackgroundJobManager | None = None,
                 max_iterations: int = DEFAULT_MAX_ITERATIONS) -> None:
        self.slot = slot or WakeupSlot()
        self.jobs = jobs
        self.max_iterations = max_iterations
        self.max_context_tokens: int | None = None
        self.stop_reason: str | None = None
        self._runtime: RuntimeCore | None = None

    def attach(self, runtime: RuntimeCore) -> None:
        """Become `runtime`'s loop feature: report through its events, save into its session state."""
        self._runtime = runtime
        runtime.attach(self)
        if self.jobs is not None:
            self.jobs.on_finish = self._job_finished

    # What the tools do.

    def schedule(self, delay_seconds: float, prompt: str, reason: str) -> Wakeup:
        wakeup = self.slot.schedule(delay_seconds, prompt, reason)
        self.save()
        self._emit(WakeupScheduled(
            delay_seconds=delay_seconds, due=wakeup.due_iso(), prompt=prompt, reason=reason,
            shown=f"⏰ wakeup in {human_duration(delay_seconds)}: {reason or prompt}"))
        return wakeup

    async def start_job(self, command: str, cwd: Path, timeout_seconds: float | None,
                        sandbox: CommandSandbox | None = None) -> JobRecord:
        assert self.jobs is not None
        record = await self.jobs.start(command, cwd, timeout_seconds, sandbox)
        self.save()
        self._emit(BackgroundJobStarted(job_id=record.id, command=command, pid=record.pgid,
                                        output_file=record.output, timeout_seconds=timeout_seconds))
        return record

    async def stop_job(self, job_id: str) -> JobRecord | None:
        assert self.jobs is not None
        record = await self.jobs.stop(job_id)
        if record is not None and not record.running:
            self.mark_reported(record)  # the agent asked, so it knows
        return record

    def request_stop(self, reason: str) -> None:
        self.stop_reason = reason.strip() or "the agent stopped the loop"
        self.save()

    def mark_reported(self, record: JobRecord) -> None:
        if not record.reported:
            record.reported = True
            self.save()

    # What the driver does.

    def take_wakeup(self) -> Wakeup | None:
        """Empty the slot, returning what it held."""
        wakeup = self.slot.pending()
        self.slot.clear()
        self.save()
        return wakeup

    def new_turn(self) -> None:
        """A new turn starts: an old stop request no longer applies."""
        if self.stop_reason is not None:
            self.stop_reason = None
            self.save()

    async def shutdown(self, completed: bool) -> None:
        """The loop is over: kill every job; a loop that completed also drops its wakeup.

        After an interrupt or a budget stop, running jobs become `lost` and the wakeup stays,
        so that `resume` reports them and sleeps out the rest.
        """
        if self.jobs is not None:
            await self.jobs.shutdown("stopped" if completed else "lost", grace=completed)
            if completed:
                for record in self.jobs.records():
                    record.reported = record.reported or record.status == "stopped"
            self.jobs.close()
        if completed:
            self.slot.clear()
        self.save()

    # Persistence.

    def state(self) -> LoopState:
        jobs, next_job = self.jobs.saved() if self.jobs is not None else ([], 1)
        return LoopState(max_iterations=self.max_iterations, max_context_tokens=self.max_context_tokens,
                         stop_reason=self.stop_reason, wakeup=self.slot.pending(), jobs=jobs,
                         next_job=next_job)

    def save(self) -> None:
        if self._runtime is not None:
            self._runtime.state.put(LoopState, self.state())

    def restore(self, state: LoopState) -> list[JobRecord]:
        """Take back a saved loop; returns the jobs that died with the process that ran them."""
        self.max_iterations, self.max_context_tokens = state.max_iterations, state.max_context_tokens
        self.stop_reason = state.stop_reason
        self.slot.set(state.wakeup)
        lost = self.jobs.restore(state.jobs, state.next_job) if self.jobs is not None else []
        for record in lost:
            self._job_finished(record)
        self.save()
        return lost

    def _job_finished(self, record: JobRecord) -> None:
        self.save()
        self._emit(BackgroundJobFinished(
            job_id=record.id, command=record.command, status=record.status,
            exit_code=record.exit_code, duration_s=round(record.duration(), 3),
            output_file=record.output,
            shown=f"■ {record.id} {ending(record)} after {human_duration(record.duration())}: "
                  f"{record.command}"))

    def _emit(self, event: Notice) -> None:

        if self._runtime is not None:
            self._runtime.emit(event)
