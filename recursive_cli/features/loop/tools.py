"""The loop tools (SPEC §6): schedule_wakeup, run_background, job_status, job_stop, stop_loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, ClassVar

from msgspec import Meta

from ...core.tool import BaseTool, Tool, ToolContext, ToolError, ToolKind, ToolResult
from .reports import ending, job_status_text
from .wakeup import human_duration

if TYPE_CHECKING:
    from .control import LoopControl
    from .jobs import JobRecord

MAX_DELAY_SECONDS = 7 * 86_400


class _LoopTool:
    """Loop tools act on the control of the loop they were made for."""

    def __init__(self, control: LoopControl) -> None:
        self.control = control

    def job(self, job_id: str) -> JobRecord:
        jobs = self.control.jobs
        record = jobs.get(job_id) if jobs is not None else None
        if record is None:
            known = ", ".join(r.id for r in jobs.records()) if jobs is not None else ""
            raise ToolError(f"no background job {job_id!r}; known jobs: {known or 'none'}")
        return record


@dataclass(slots=True, kw_only=True)
class ScheduleWakeupArgs:
    delay_seconds: Annotated[float, Meta(gt=0, le=MAX_DELAY_SECONDS,
                                         description="Seconds from now, e.g. 300 for five minutes.")]
    prompt: Annotated[str, Meta(min_length=1, description="The message your next turn starts with when it "
                                                          "fires: what to check or do then.")]
    reason: Annotated[str, Meta(description="Why you wait, in a few words (shown to the user).")] = ""


class ScheduleWakeupTool(_LoopTool, BaseTool[ScheduleWakeupArgs]):
    name = "schedule_wakeup"
    description = (
        "Schedule your next turn: after delay_seconds the loop wakes you with `prompt`. There is "
        "one wakeup at a time; a new call replaces the pending one. End your turn after "
        "scheduling: the loop sleeps until then (a background job that finishes meanwhile is "
        "reported at once, and the wakeup stays)."
    )
    kind: ClassVar[ToolKind] = "other"
    Args = ScheduleWakeupArgs
    subject_field = "reason"

    async def run(self, args: ScheduleWakeupArgs, ctx: ToolContext) -> ToolResult:
        wakeup = self.control.schedule(args.delay_seconds, args.prompt, args.reason)
        delay = human_duration(args.delay_seconds)
        return ToolResult(f"Wakeup scheduled for {wakeup.due_iso()} (in {delay}); it replaces any "
                          "earlier one. End your turn now.", summary=f"in {delay}")


@dataclass(slots=True, kw_only=True)
class RunBackgroundArgs:
    command: Annotated[str, Meta(min_length=1, description="Shell command line, run with bash -c in the workspace.")]
    timeout_seconds: Annotated[Annotated[float, Meta(gt=0)] | None,
                               Meta(description="Kill it after this many seconds (default: no limit; it is "
                                                "killed when the loop ends).")] = None


class RunBackgroundTool(_LoopTool, BaseTool[RunBackgroundArgs]):
    name = "run_background"
    description = (
        "Start a long shell command (build, test suite, benchmark) in the background and return "
        "at once with its job id. Its stdout and stderr go to a file; when it ends, the loop "
        "gives you its exit code and the end of its output in a new turn. Use job_status to look "
        "earlier and job_stop to stop it. End your turn when there is nothing else to do meanwhile."
    )
    kind: ClassVar[ToolKind] = "shell"
    Args = RunBackgroundArgs
    subject_field = "command"

    async def run(self, args: RunBackgroundArgs, ctx: ToolContext) -> ToolResult:
        if self.control.jobs is None:
            raise ToolError("background jobs are not available in this loop")
        record = await self.control.start_job(args.command, ctx.workspace, args.timeout_seconds, ctx.commands)
        limit = f", killed after {args.timeout_seconds:g} s" if args.timeout_seconds else ""
        return ToolResult(f"Started {record.id} (process group {record.pgid}{limit}). Output goes "
                          f"to {record.output}. You will hear when it ends.",
                          summary=record.id)


@dataclass(slots=True, kw_only=True)
class JobArgs:
    job_id: Annotated[str, Meta(description="The id run_background returned, e.g. job-1.")]


class JobStatusTool(_LoopTool, BaseTool[JobArgs]):
    name = "job_status"
    description = ("The state of a background job (running, or how it ended) and the end of its "
                   "output so far.")
    kind: ClassVar[ToolKind] = "read"
    Args = JobArgs
    subject_field = "job_id"

    async def run(self, args: JobArgs, ctx: ToolContext) -> ToolResult:
        record = self.job(args.job_id)
        if not record.running:
            self.control.mark_reported(record)  # seen here, so no turn of its own
        return ToolResult(job_status_text(record), summary=ending(record))


class JobStopTool(_LoopTool, BaseTool[JobArgs]):
    name = "job_stop"
    description = "Stop a background job and every process it started."
    kind: ClassVar[ToolKind] = "other"
    Args = JobArgs
    subject_field = "job_id"

    async def run(self, args: JobArgs, ctx: ToolContext) -> ToolResult:
        record = self.job(args.job_id)
        if not record.running:
            return ToolResult(f"{record.id} is not running ({ending(record)}).", summary=ending(record))
        await self.control.stop_job(record.id)
        return ToolResult(job_status_text(record), summary="stopped")


@dataclass(slots=True, kw_only=True)
class StopLoopArgs:
    reason: Annotated[str, Meta(description="Why the loop can end: what was achieved, or why it cannot go on.")]


class StopLoopTool(_LoopTool, BaseTool[StopLoopArgs]):
    name = "stop_loop"
    description = ("End the autonomous loop after this turn: no more wakeups, and running "
                   "background jobs are stopped. Call it when the work is done.")
    kind: ClassVar[ToolKind] = "other"
    Args = StopLoopArgs
    subject_field = "reason"

    async def run(self, args: StopLoopArgs, ctx: ToolContext) -> ToolResult:
        self.control.request_stop(args.reason)
        return ToolResult("The loop ends after this turn. Give your final answer now.",
                          summary="loop ends after this turn")


def loop_tools(control: LoopControl) -> list[Tool]:
    """The loop tools for `control`, in the order the model sees them."""
    tools: list[Tool] = [ScheduleWakeupTool(control)]
    if control.jobs is not None:
        tools += [RunBackgroundTool(control), JobStatusTool(control), JobStopTool(control)]
    tools.append(StopLoopTool(control))
    return tools
