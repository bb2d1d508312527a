"""Compaction in the runtime: when it happens, what it keeps, and what the summariser is asked."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path

from recursive_cli import AgentRuntime, Message, Settings, ToolCall
from recursive_cli.core.events import AgentEvent, CompactionDone
from recursive_cli.core.messages import Usage
from recursive_cli.core.provider import Completion, ProviderHooks, ToolSpec
from recursive_cli.features.compaction import (
    SUMMARY_HEADER,
    SUMMARY_SYSTEM,
    apply_record,
    choose_cut,
    context_window,
    estimate_tokens,
    message_tokens,
)
from recursive_cli.providers.scripted import ScriptedProvider


class RecordingProvider(ScriptedProvider):
    """The scripted provider, remembering each request's messages and tool names."""

    def __init__(self, replies: list[dict]) -> None:
        super().__init__(replies)
        self.requests: list[tuple[list[Message], list[str]]] = []

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                       hooks: ProviderHooks) -> Completion:
        self.requests.append((list(messages), [t.name for t in tools]))
        return await super().complete(messages, tools, hooks)


class Collect:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def emit(self, event: AgentEvent) -> None:
        self.events.append(event)


def shell_turn(n: int, usage: int = 100) -> list[dict]:
    """A turn's replies: one run_shell call, then an answer reporting `usage` input tokens."""
    return [{"tool_calls": [{"name": "run_shell", "arguments": {"command": f"echo out-{n}"}}]},
            {"text": f"done {n}", "usage": {"input_tokens": usage, "output_tokens": 5}}]


def assert_paired(messages: list[Message]) -> None:
    """Every tool call is followed by its result, and every result follows its call."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_calls, message
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls, f"calls without results before a {message.role} message"
            open_calls = {call.id for call in message.tool_calls}
    assert not open_calls


def test_context_windows_come_from_the_table() -> None:
    assert context_window("gpt-4o-mini") == 128_000
    assert context_window("gpt-4.1-mini") == 1_047_576
    assert context_window("claude-sonnet-4-5") == 200_000
    assert context_window("anthropic/claude-3.5-sonnet") == 200_000
    assert context_window("some-local-model") == 128_000


def test_the_estimate_starts_from_the_last_reported_request() -> None:
    result = Message(role="tool", content="x" * 400, tool_call_id="c", tool_name="read_file")
    messages = [Message.system("s"), Message.user("hi"),
                Message(role="assistant", tool_calls=(ToolCall(id="c", name="read_file"),),
                        usage=Usage(input_tokens=1_000, output_tokens=50)), result]
    assert estimate_tokens(messages) == 1_050 + message_tokens(result)
    assert estimate_tokens(messages[:2]) == sum(message_tokens(m) for m in messages[:2])


def random_conversation(rng: random.Random) -> list[Message]:
    """Turns of a user prompt, steps of parallel tool calls with results, and an answer."""
    body: list[Message] = []
    for turn in range(rng.randint(1, 6)):
        body.append(Message.user(f"task {turn} " + "p" * rng.randint(0, 3000)))
        for step in range(rng.randint(0, 4)):
            calls = tuple(ToolCall(id=f"c{turn}-{step}-{i}", name="run_shell")
                          for i in range(rng.randint(1, 3)))
            body.append(Message(role="assistant", content="thinking", tool_calls=calls))
            body += [Message.tool_result(call, "r" * rng.randint(0, 8000)) for call in calls]
        if rng.random() < 0.8:
            body.append(Message(role="assistant", content="answer"))
    return body


def test_the_cut_never_separates_a_call_from_its_result() -> None:
    rng = random.Random(7)
    for _ in range(500):
        body = random_conversation(rng)
        cut = choose_cut(body, keep_tokens=rng.randint(0, 5_000), keep_turns=rng.randint(1, 4))
        assert 0 <= cut < len(body)
        assert body[cut].role != "tool"
        assert_paired(body[:cut])
        assert_paired(body[cut:])
        assert any(m.role != "tool" for m in body[cut:])  # the last step is always kept


def test_the_cut_keeps_the_last_turns_within_the_token_share() -> None:
    body = []
    for turn in range(5):
        body += [Message.user(f"task {turn}"), Message(role="assistant", content="done")]
    assert choose_cut(body, keep_tokens=10_000, keep_turns=3) == 4  # turns 2, 3, 4 kept
    big = body + [Message.user("x" * 40_000), Message(role="assistant", content="ok")]
    assert choose_cut(big, keep_tokens=1_000, keep_turns=3) == len(big) - 1  # only the last step


def test_compaction_keeps_the_system_prompt_and_every_call_paired(workspace: Path) -> None:
    replies = (shell_turn(1) + shell_turn(2) + shell_turn(3, usage=3_500)
               + [{"text": "SUMMARY: turn one echoed out-1"}] + shell_turn(4))
    provider = RecordingProvider(replies)
    sink = Collect()
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace)).provider(provider)
               .sink(sink).build())
    runtime.compactor.max_tokens = 4_000
    system = runtime.transcript()[0]

    async def four_turns() -> None:
        for n in range(1, 5):
            await runtime.run(f"task {n}")

    asyncio.run(four_turns())
    transcript = runtime.transcript()
    assert transcript[0] is system
    assert transcript[1].role == "user"
    assert transcript[1].content == SUMMARY_HEADER + "SUMMARY: turn one echoed out-1"
    assert [m.content for m in transcript if m.role == "user"][1:] == ["task 2", "task 3", "task 4"]
    assert_paired(transcript[1:])
    assert all(m.usage is None for m in transcript[2:11])  # kept messages: stale usage dropped
    (notice,) = [e for e in sink.events if isinstance(e, CompactionDone)]
    assert notice.replaced == 4 and notice.kept == 9 and notice.turn == 4
    assert notice.tokens_before > notice.tokens_after

    summary_messages, summary_tools = provider.requests[6]
    assert summary_tools == []
    assert summary_messages[0].content == SUMMARY_SYSTEM
    assert "task 1" in summary_messages[1].content and "out-1" in summary_messages[1].content
    assert "task 2" not in summary_messages[1].content
    after, _ = provider.requests[7]
    assert after[0] is system and after[1].content.startswith(SUMMARY_HEADER)
    assert runtime.usage.input_tokens == sum(r.get("usage", {"input_tokens": 10})["input_tokens"]
                                             for r in replies)  # the summary call is charged


def test_a_failed_summary_leaves_the_conversation_as_it_was(workspace: Path) -> None:
    replies = (shell_turn(1) + shell_turn(2) + shell_turn(3, usage=3_500)
               + [{"error": {"status": 400, "message": "too long"}}] + shell_turn(4))
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace))
               .provider(ScriptedProvider(replies)).build())
    runtime.compactor.max_tokens = 4_000

    async def four_turns() -> str:
        for n in range(1, 5):
            outcome = await runtime.run(f"task {n}")
        return outcome.text

    assert asyncio.run(four_turns()) == "done 4"
    assert [m.content for m in runtime.transcript() if m.role == "user"] == [
        "task 1", "task 2", "task 3", "task 4"]


def test_compact_now_summarises_whatever_the_size(workspace: Path) -> None:
    replies = shell_turn(1) + shell_turn(2) + shell_turn(3) + shell_turn(4) + [{"text": "S"}]
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace))
               .provider(ScriptedProvider(replies)).build())

    async def scenario():  # type: ignore[no-untyped-def]
        for n in range(1, 5):
            await runtime.run(f"task {n}")
        return await runtime.compact_now()

    result = asyncio.run(scenario())
    assert result is not None and result.replaced == 4 and result.summary == "S"
    assert runtime.transcript()[1].content == SUMMARY_HEADER + "S"
    assert_paired(runtime.transcript()[1:])


def test_a_compaction_record_replays_on_the_conversation() -> None:
    body = [Message.user("a"), Message(role="assistant", content="b", usage=Usage(input_tokens=9)),
            Message.user("c"), Message(role="assistant", content="d", usage=Usage(input_tokens=9))]
    rebuilt = apply_record(body, {"summary": "sum", "replaced": 2})
    assert [m.content for m in rebuilt] == [SUMMARY_HEADER + "sum", "c", "d"]
    assert rebuilt[2].usage is None
    for bad in ({"summary": "s"}, {"summary": "s", "replaced": 9}, {"replaced": 1}):
        try:
            apply_record(body, bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad}")
