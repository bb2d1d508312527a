"""The loop driver through the library API: `run_event_loop`, `run_loop`, waits and interrupts."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from recursive_cli import AgentRuntime, FinishReason, Settings
from recursive_cli.core.events import AgentEvent, Notice, notice_fields
from recursive_cli.features.loop import BackgroundJobManager, WakeupSlot
from recursive_cli.providers.scripted import ScriptedProvider

from .conftest import call, tools


class Collect:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def emit(self, event: AgentEvent) -> None:
        self.events.append(event)

    def notices(self, kind: str) -> list[Notice]:
        return [e for e in self.events if isinstance(e, Notice) and e.type == kind]


def runtime_for(workspace: Path, replies: list[dict]) -> tuple[AgentRuntime, Collect]:
    sink = Collect()
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace))
               .provider(ScriptedProvider(replies)).sink(sink).build())
    return runtime, sink


def user_prompts(runtime: AgentRuntime) -> list[str]:
    return [m.content for m in runtime.transcript() if m.role == "user"]


def test_run_event_loop_reports_a_finished_job(tmp_path: Path, workspace: Path) -> None:
    runtime, sink = runtime_for(workspace, [
        tools(call("run_background", command="echo from-the-job")), {"text": "started"},
        {"text": "got it"}])
    jobs = BackgroundJobManager(tmp_path / "session")
    outcome = asyncio.run(runtime.run_event_loop("go", WakeupSlot(), jobs))
    assert outcome.finish_reason is FinishReason.COMPLETED and outcome.text == "got it"
    assert "from-the-job" in user_prompts(runtime)[1]
    assert (tmp_path / "session" / "jobs" / "job-1.log").read_text() == "from-the-job\n"
    assert [notice_fields(n)["trigger"] for n in sink.notices("loop_iteration")] == ["start", "job"]
    assert runtime.state["loop"]["jobs"][0]["reported"] is True


def test_a_finished_job_is_reported_before_a_later_wakeup(workspace: Path) -> None:
    runtime, _ = runtime_for(workspace, [
        tools(call("run_background", command="sleep 0.2"),
              call("schedule_wakeup", delay_seconds=30, prompt="wake")),
        {"text": "waiting"},
        tools(call("stop_loop", reason="the job was all I needed")),
        {"text": ""},
    ])
    started = time.monotonic()
    outcome = asyncio.run(runtime.run_event_loop("go"))
    assert time.monotonic() - started < 10
    assert outcome.finish_reason is FinishReason.COMPLETED
    assert outcome.text == "the job was all I needed"  # the stop reason when the answer is empty
    assert user_prompts(runtime)[1].startswith("Background job job-1")


def test_run_loop_offers_wakeups_but_no_jobs(workspace: Path) -> None:
    runtime, sink = runtime_for(workspace, [
        tools(call("schedule_wakeup", delay_seconds=0.2, prompt="second look")),
        {"text": "later"}, {"text": "looked"}])
    slot = WakeupSlot()
    outcome = asyncio.run(runtime.run_loop("first look", slot))
    assert outcome.text == "looked" and slot.pending() is None
    names = runtime.tools.names()
    assert "schedule_wakeup" in names and "stop_loop" in names and "run_background" not in names
    assert user_prompts(runtime) == ["first look", "second look"]
    assert len(sink.notices("wakeup_scheduled")) == 1


def test_an_interrupt_wakes_a_wait_at_once(workspace: Path) -> None:
    runtime, _ = runtime_for(workspace, [
        tools(call("schedule_wakeup", delay_seconds=600, prompt="much later")), {"text": "zzz"}])

    async def scenario() -> tuple[FinishReason, float]:
        asyncio.get_running_loop().call_later(0.3, runtime.interrupt)
        started = time.monotonic()
        outcome = await runtime.run_event_loop("go")
        return outcome.finish_reason, time.monotonic() - started

    reason, elapsed = asyncio.run(scenario())
    assert reason is FinishReason.INTERRUPTED and elapsed < 2


def test_a_failed_turn_ends_the_loop_with_its_reason(workspace: Path) -> None:
    runtime, _ = runtime_for(workspace, [
        tools(call("schedule_wakeup", delay_seconds=0.1, prompt="again")),
        {"text": "cut off", "stop": "length"}])
    outcome = asyncio.run(runtime.run_event_loop("go"))
    assert outcome.finish_reason is FinishReason.PROVIDER_STOP
    assert runtime.state["loop"]["wakeup"] is not None  # kept: the loop did not complete
