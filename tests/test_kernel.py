"""The runtime and kernel as a library: turns, queue, interrupts, stuck detection."""

from __future__ import annotations

import asyncio
from pathlib import Path

from recursive_cli import AgentRuntime, FinishReason, Message, Settings, ToolCall
from recursive_cli.core.events import AgentEvent, MessageAdded, ToolFinished
from recursive_cli.core.stuck import StuckDetector
from recursive_cli.providers.scripted import ScriptedProvider


class Collect:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def emit(self, event: AgentEvent) -> None:
        self.events.append(event)


def runtime_for(workspace: Path, replies: list[dict], **settings: object) -> tuple[AgentRuntime, Collect]:
    sink = Collect()
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace, **settings))
               .provider(ScriptedProvider(replies)).sink(sink).build())
    return runtime, sink


def test_turns_share_one_transcript(workspace: Path) -> None:
    runtime, sink = runtime_for(workspace, [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "1"}}]},
        {"text": "first"}, {"text": "second"}])

    async def two_turns() -> list[str]:
        first = await runtime.run("one")
        second = await runtime.run("two")
        return [first.text, second.text]

    assert asyncio.run(two_turns()) == ["first", "second"]
    roles = [m.role for m in runtime.transcript()]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert runtime.turn_index() == 2
    added = [e for e in sink.events if isinstance(e, MessageAdded)]
    assert [e.turn for e in added] == [1, 1, 1, 1, 2, 2]


def test_enqueued_messages_run_after_the_turn(workspace: Path) -> None:
    runtime, _ = runtime_for(workspace, [{"text": "a"}, {"text": "b"}])
    runtime.enqueue("follow-up")
    assert runtime.queue_len() == 1
    outcome = asyncio.run(runtime.run("start"))
    assert outcome.text == "b" and runtime.queue_len() == 0
    assert [m.content for m in runtime.transcript() if m.role == "user"] == ["start", "follow-up"]


def test_interrupt_answers_the_running_call(workspace: Path) -> None:
    runtime, sink = runtime_for(workspace, [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "sleep 30"}},
                        {"name": "list_dir", "arguments": {}}]},
        {"text": "never"}])

    async def interrupted() -> FinishReason:
        task = asyncio.create_task(runtime.run("x"))
        while not any(e.type == "tool_started" for e in sink.events):
            await asyncio.sleep(0.01)
        runtime.interrupt()
        return (await asyncio.wait_for(task, 10)).finish_reason

    assert asyncio.run(interrupted()) is FinishReason.INTERRUPTED
    results = [m for m in runtime.transcript() if m.role == "tool"]
    assert len(results) == 2 and all(m.is_error for m in results)
    assert "interrupted before completion" in results[0].content
    assert [e.is_error for e in sink.events if isinstance(e, ToolFinished)] == [True, True]


def test_truncate_and_set_transcript(workspace: Path) -> None:
    runtime, _ = runtime_for(workspace, [{"text": "a"}])
    asyncio.run(runtime.run("x"))
    runtime.truncate_transcript(2)
    assert [m.role for m in runtime.transcript()] == ["system", "user"]
    runtime.set_transcript([Message.system("s")])
    assert len(runtime.transcript()) == 1


def call(name: str, args: str = "{}") -> ToolCall:
    return ToolCall(id="x", name=name, arguments=args)


def test_stuck_on_three_identical_failures() -> None:
    detector = StuckDetector()
    for _ in range(2):
        detector.record(call("read_file", '{"path": "a"}'), True)
    assert detector.verdict() is None
    detector.record(call("read_file", '{"path": "a"}'), True)
    assert "repeated 3 times" in (detector.verdict() or "")


def test_success_resets_the_repeat_count() -> None:
    detector = StuckDetector()
    for ok in (False, True, False, True, False):
        detector.record(call("read_file"), not ok)
    assert detector.verdict() is None


def test_stuck_on_mostly_failing_window() -> None:
    detector = StuckDetector()
    for i in range(10):
        detector.record(call("run_shell", f'{{"command": "try {i}"}}'), is_error=i % 5 != 0)
    assert "8 of the last 10" in (detector.verdict() or "")


def test_system_prompt_includes_project_instructions(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Always run make lint.")
    runtime, _ = runtime_for(workspace, [], append_system_prompt="Be terse.")
    system = runtime.transcript()[0].content
    assert str(workspace.resolve()) in system and "run_shell" in system
    assert "Always run make lint." in system and system.endswith("Be terse.")


def test_tools_added_later_are_named_in_the_system_prompt(workspace: Path) -> None:
    from recursive_cli.core.tool import ToolRegistry
    from recursive_cli.tools.todo import TodoWriteTool

    sink = Collect()
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace))
               .provider(ScriptedProvider([])).tools(ToolRegistry()).sink(sink).build())
    assert "todo_write" not in runtime.transcript()[0].content
    runtime.add_tool(TodoWriteTool())
    assert "Tools: todo_write" in runtime.transcript()[0].content
    assert runtime.tools.names() == ["todo_write"]
