"""What the hot-path work of issue 16 must keep: the same requests, the same answers, the same
refusals — only cheaper. No timing is asserted here; each test checks behaviour that a faster
path could break (a request body, an estimate, an interrupt, a refusal, a snapshot)."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import random
import sys
import threading
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer

from recursive_cli.core import utf8
from recursive_cli.core.errors import Interrupted
from recursive_cli.core.interrupt import InterruptToken
from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.core.provider import ToolSpec
from recursive_cli.features.compaction import (
    choose_cut,
    estimate_tokens,
    json_size,
    message_tokens,
    provider_size,
)
from recursive_cli.providers.anthropic_provider import EMPTY_TEXT, AnthropicProvider, tool_input
from recursive_cli.providers.openai_provider import OpenAIProvider

KEY = "sk-test-0123456789"
TOOLS = [
    ToolSpec("run_shell", "Run a shell command.",
             {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec("read_file", "Read a file.",
             {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
]


# -- request bodies -------------------------------------------------------------------------------


def conversation(rng: random.Random, steps: int) -> list[Message]:
    """A coding session: prompts, replies with and without text, single and parallel tool
    calls, error results, a second system message, non-ASCII text and runs of user messages."""
    out = [Message.system("You are a coding agent. Ünïcode ✓"), Message.user("fix the tests")]
    for step in range(steps):
        roll = rng.random()
        if roll < 0.1:
            out.append(Message.user(f"also check module {step} — please"))
            continue
        if roll < 0.13:
            out.append(Message.system(f"note {step}: the user changed a file"))
            continue
        calls = tuple(ToolCall(id=f"toolu_{step}_{i}", name=rng.choice(["read_file", "run_shell"]),
                               arguments=rng.choice(['{"path": "src/a.py"}', '{"command": "ls"}',
                                                     "{not json", '["a list"]', ""]))
                      for i in range(1 if rng.random() < 0.7 else rng.randint(2, 3)))
        text = rng.choice(["", "", "Let me look.", "  ", "Running the tests ☕"])
        if rng.random() < 0.1:
            out.append(Message(role="assistant", content=text or "done"))
            continue
        out.append(Message(role="assistant", content=text, tool_calls=calls,
                           usage=Usage(input_tokens=100 + step, output_tokens=7)))
        out += [Message.tool_result(call, rng.choice(["ok", "", "line 1\nline 2\t\"quoted\"", "é" * 30]),
                                    is_error=rng.random() < 0.2) for call in calls]
    return out


def reference_anthropic_body(messages: list[Message], tools: list[ToolSpec], model: str,
                             max_tokens: int, stream: bool) -> bytes:
    """The Messages API body built from scratch as one JSON document, with no cache of any kind."""
    def blocks(message: Message) -> list[dict[str, Any]]:
        if message.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id,
                                     "content": message.content}
            if message.is_error:
                block["is_error"] = True
            return [block]
        found: list[dict[str, Any]] = []
        if message.content.strip():
            found.append({"type": "text", "text": message.content})
        if message.role == "assistant":
            found += [{"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(c)}
                      for c in message.tool_calls]
        return found or [{"type": "text", "text": EMPTY_TEXT}]

    system = [b for m in messages if m.role == "system" for b in blocks(m)]
    merged: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "user" if message.role == "tool" else message.role
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"] += blocks(message)
        else:
            merged.append({"role": role, "content": blocks(message)})
    # breakpoints: the system prompt, the last block, the user message before the last reply
    before = [merged[-3]["content"]] if len(merged) >= 3 and merged[-3]["role"] == "user" else []
    for group in ([system] if system else []) + ([merged[-1]["content"]] if merged else []) + before:
        group[-1] = {**group[-1], "cache_control": {"type": "ephemeral"}}
    # (keys in the order the SDK's `messages.create` writes them: tests/providers)
    body: dict[str, Any] = {"max_tokens": max_tokens, "messages": merged, "model": model}
    if stream:
        body["stream"] = True
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                         for t in tools]
    return utf8.encode(json.dumps(body, ensure_ascii=False, separators=(",", ":")))


@pytest.mark.parametrize("seed", range(6))
def test_anthropic_bodies_grown_step_by_step_are_the_bodies_built_from_scratch(seed: int) -> None:
    """The body kept between steps (merged messages encoded once) is byte for byte the body
    built from nothing, after every single message appended, and after history is replaced."""
    rng = random.Random(seed)
    full = conversation(rng, 60)
    provider = AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9", stream=seed % 2 == 0)
    grown: list[Message] = []
    for message in full:
        grown.append(message)
        tools = TOOLS if len(grown) % 5 else []
        body = provider.request_body(grown, tools)
        assert body == reference_anthropic_body(grown, tools, "claude-sonnet-4-5", 8192, seed % 2 == 0)
        fresh = AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9", stream=seed % 2 == 0)
        assert body == fresh.request_body(list(grown), tools)
    # a compaction, a rewind, a new list: the kept body starts over and is still exact
    for replaced in ([full[0], Message.user("summary"), *full[-7:]], full[:9], [full[0]], list(full)):
        assert provider.request_body(replaced, TOOLS) == reference_anthropic_body(
            replaced, TOOLS, "claude-sonnet-4-5", 8192, seed % 2 == 0)


def test_a_lone_surrogate_gives_the_same_body_either_way() -> None:
    provider = AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9")
    messages = [Message.system("s"), Message.user("bad \udcff byte")]
    first = provider.request_body(messages, [])
    messages.append(Message(role="assistant", content="ok \ud800"))
    second = provider.request_body(messages, [])
    fresh = AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9")
    assert second == fresh.request_body(messages, [])
    assert "\ufffd" in json.loads(first)["messages"][0]["content"][0]["text"]


@pytest.mark.parametrize("seed", range(3))
def test_openai_bodies_grown_step_by_step_are_the_bodies_built_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    provider = OpenAIProvider("gpt-4o", KEY, "http://127.0.0.1:9")
    grown: list[Message] = []
    for message in conversation(rng, 40):
        grown.append(message)
        fresh = OpenAIProvider("gpt-4o", KEY, "http://127.0.0.1:9")
        assert provider.request_body(grown, TOOLS) == fresh.request_body(list(grown), TOOLS)


@pytest.mark.xdist_group("openai-anthropic-sdks")  # (see tests/providers/test_wire_oracle.py)
def test_the_anthropic_sdk_sends_what_we_send() -> None:
    """The official SDK's `messages.create`, given the params our body holds, sends the same
    JSON (its own key order aside) to the server that our request sends."""
    from anthropic import AsyncAnthropic

    messages = conversation(random.Random(11), 30)
    ours_provider = AnthropicProvider("claude-test", KEY, "http://127.0.0.1:9", stream=False)
    ours = json.loads(ours_provider.request_body(messages, TOOLS))

    async def through_sdk(base_url: str) -> None:
        client = AsyncAnthropic(api_key=KEY, base_url=base_url, max_retries=0)
        try:
            await client.messages.create(**ours)
        finally:
            await client.close()

    with FakeLLMServer([{"text": "ok"}]) as srv:
        asyncio.run(through_sdk(srv.anthropic_base_url))
    assert srv.requests[0].body == ours


@pytest.mark.xdist_group("openai-anthropic-sdks")  # (see tests/providers/test_wire_oracle.py)
def test_the_openai_sdk_sends_what_we_send() -> None:
    from openai import AsyncOpenAI

    messages = conversation(random.Random(12), 30)
    ours = json.loads(OpenAIProvider("gpt-test", KEY, "http://127.0.0.1:9", stream=False)
                      .request_body(messages, TOOLS))

    async def through_sdk(base_url: str) -> None:
        client = AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0)
        try:
            await client.chat.completions.create(**ours)
        finally:
            await client.close()

    with FakeLLMServer([{"text": "ok"}]) as srv:
        asyncio.run(through_sdk(srv.openai_base_url))
    assert srv.requests[0].body == ours


# -- compaction's estimate ----------------------------------------------------------------------


def small_tool_session(rng: random.Random, steps: int) -> list[Message]:
    """Many small tool calls and results, as a long agent session makes them."""
    out = [Message.system("You are a coding agent. Use the tools."), Message.user("fix the failing test")]
    for i in range(steps):
        calls = tuple(ToolCall(id=f"toolu_{rng.getrandbits(96):024x}",
                               name=rng.choice(["read_file", "run_shell", "search_files"]),
                               arguments=json.dumps(rng.choice([{"path": f"src/mod{i}.py"},
                                                                {"command": "pytest -q -x"},
                                                                {"pattern": "def main", "path": "."}])))
                      for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 3)))
        out.append(Message(role="assistant", content=rng.choice(["", "", "Let me check.", "Running it."]),
                           tool_calls=calls))
        out += [Message.tool_result(call, "\n".join(f"line {k}: ok" for k in range(rng.randint(1, 6))),
                                    is_error=rng.random() < 0.1) for call in calls]
    return out


PROVIDERS = [pytest.param(lambda: AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9"),
                          id="anthropic"),
             pytest.param(lambda: OpenAIProvider("gpt-4o", KEY, "http://127.0.0.1:9"), id="openai")]


@pytest.mark.parametrize("make", PROVIDERS)
def test_the_estimate_is_within_a_fifth_of_the_request_size(make: Any) -> None:
    """Small tool calls weigh what they weigh on the wire (ids, JSON structure, escaping), so
    the estimate of a session of them is the encoded request size / 4, within 20 %."""
    provider = make()
    for seed in range(4):
        messages = small_tool_session(random.Random(seed), 200)
        wire = len(provider.request_body(messages, [])) / 4
        assert 0.8 * wire <= estimate_tokens(messages, provider_size(provider)) <= 1.2 * wire
        assert 0.8 * wire <= estimate_tokens(messages) <= 1.2 * wire  # the provider-neutral measure


@pytest.mark.parametrize("make", PROVIDERS)
def test_the_estimate_from_a_reported_size_stays_within_a_fifth(make: Any) -> None:
    """Reported input tokens (here: the real body / 4 of that request) plus the messages since."""
    provider = make()
    messages = small_tool_session(random.Random(5), 120)
    index = max(i for i, m in enumerate(messages[:150]) if m.role == "assistant")
    tokens = len(provider.request_body(messages[:index], [])) // 4  # what the server counted
    messages[index] = replace(messages[index], usage=Usage(input_tokens=tokens, output_tokens=0))
    wire = len(provider.request_body(messages, [])) / 4
    assert 0.8 * wire <= estimate_tokens(messages, provider_size(provider)) <= 1.2 * wire


def test_the_verbatim_tail_is_sized_by_its_wire_weight() -> None:
    """The kept tail holds about `keep_tokens` of request, not 2–3 times as much."""
    provider = AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9")
    body = small_tool_session(random.Random(9), 400)[1:]
    keep = 3_000
    cut = choose_cut(body, keep_tokens=keep, keep_turns=3, size=provider_size(provider))
    kept = provider.request_body([Message.system("s"), *body[cut:]], [])
    assert len(kept) / 4 <= 1.2 * keep


def test_a_long_run_of_small_tool_calls_compacts_rarely(workspace: Path) -> None:
    """1,000 small steps against a server reporting the real request size: with the kept tail
    measured on the wire, a compaction frees most of the window, so few are needed (with the
    tail measured by its text alone, it kept 2–3 times too much and compacted 43 times)."""
    from recursive_cli import AgentRuntime, Settings
    from recursive_cli.core.events import CompactionDone
    from recursive_cli.core.provider import Completion

    steps, compactions = 1_000, []
    rng = random.Random(2)

    class Reporting(AnthropicProvider):
        async def _attempt(self, body: bytes, hooks: Any, deadline: float | None = None) -> Completion:
            usage = Usage(input_tokens=len(body) // 4, output_tokens=20)
            if b'"tools"' not in body:  # the summary request
                return Completion(Message(role="assistant", content="S" * 800, usage=usage), "end", usage)
            self.calls = getattr(self, "calls", 0) + 1
            if self.calls >= steps:
                return Completion(Message(role="assistant", content="done", usage=usage), "end", usage)
            call = ToolCall(id=f"toolu_{rng.getrandbits(96):024x}", name="read_file",
                            arguments=json.dumps({"path": "f.txt"}))
            return Completion(Message(role="assistant", tool_calls=(call,), usage=usage), "tool_calls", usage)

    class Collect:
        def emit(self, event: Any) -> None:
            if isinstance(event, CompactionDone):
                compactions.append(event)

    (workspace / "f.txt").write_text("one short line\n")
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace, max_steps=steps + 5))
               .provider(Reporting("claude-test", KEY, "http://127.0.0.1:9")).sink(Collect()).build())
    runtime.compactor.max_tokens = 30_000
    outcome = asyncio.run(runtime.run("read f.txt again and again"))
    assert outcome.text == "done"
    assert 1 <= len(compactions) <= 8


def test_message_tokens_count_the_structure_of_a_tool_call() -> None:
    call = ToolCall(id="toolu_01ABCDEFGHIJKLMNOPQRSTUV", name="read_file", arguments='{"path": "a.py"}')
    message = Message(role="assistant", tool_calls=(call,))
    assert message_tokens(message) == (json_size(message) + 3) // 4
    assert json_size(message) > len(call.id) + len(call.name) + len(call.arguments)


# -- interrupts -------------------------------------------------------------------------------------


def test_race_runs_the_work_in_the_callers_task() -> None:
    async def main() -> tuple[bool, int]:
        token = InterruptToken()
        caller = asyncio.current_task()

        async def work() -> bool:
            await asyncio.sleep(0)
            return asyncio.current_task() is caller

        same = await token.race(work())
        return same, len(asyncio.all_tasks())

    same, tasks = asyncio.run(main())
    assert same and tasks == 1


def test_an_interrupt_from_a_signal_handler_stops_the_work_and_leaves_the_caller_usable() -> None:
    async def main() -> list[str]:
        token, seen = InterruptToken(), []

        async def work() -> None:
            try:
                await asyncio.sleep(30)
            finally:
                seen.append("cleaned up")

        asyncio.get_running_loop().call_later(0.01, token.set, 15)
        try:
            await token.race(work())
        except Interrupted:
            seen.append("interrupted")
        await asyncio.sleep(0)  # the caller's task is not left cancelled
        task = asyncio.current_task()
        assert task is not None
        if hasattr(task, "cancelling"):
            assert task.cancelling() == 0
        with pytest.raises(Interrupted):  # a set token refuses new work at once
            await token.race(asyncio.sleep(30))
        seen.append(f"signal {token.signal}")
        return seen

    assert asyncio.run(main()) == ["cleaned up", "interrupted", "signal 15"]


def test_an_interrupt_set_by_the_work_itself_stops_it_at_its_next_wait() -> None:
    async def main() -> list[str]:
        token, seen = InterruptToken(), []

        async def work() -> None:
            token.set()  # e.g. a broken pipe noticed while writing the model's text
            seen.append("went on")
            await asyncio.sleep(30)
            seen.append("never")

        with pytest.raises(Interrupted):
            await token.race(work())
        await asyncio.sleep(0)
        return seen

    assert asyncio.run(main()) == ["went on"]


def test_an_interrupt_from_another_thread() -> None:
    async def main() -> bool:
        token = InterruptToken()
        threading.Timer(0.05, token.set).start()
        try:
            await token.race(asyncio.sleep(30))
        except Interrupted:
            return True
        return False

    assert asyncio.run(asyncio.wait_for(main(), 10))


def test_a_cancellation_that_is_not_the_tokens_is_not_taken_for_an_interrupt() -> None:
    async def main() -> str:
        token = InterruptToken()
        inner = asyncio.ensure_future(token.race(asyncio.sleep(30)))
        await asyncio.sleep(0.01)
        inner.cancel()
        try:
            await inner
        except asyncio.CancelledError:
            return "cancelled"
        except Interrupted:
            return "interrupted"
        return "finished"

    assert asyncio.run(main()) == "cancelled"


def test_nested_races_and_work_that_swallows_the_cancellation() -> None:
    async def main() -> list[str]:
        token, seen = InterruptToken(), []

        async def stubborn() -> str:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen.append("swallowed")
            return "result"

        async def outer() -> str:
            return await token.race(stubborn())

        asyncio.get_running_loop().call_later(0.01, token.set)
        with pytest.raises(Interrupted):
            await token.race(outer())
        await asyncio.sleep(0.01)  # nothing left pending on the caller
        seen.append("after")
        return seen

    assert asyncio.run(main()) == ["swallowed", "after"]


def test_a_timeout_inside_the_race_is_still_a_timeout() -> None:
    async def main() -> str:
        token = InterruptToken()
        try:
            await token.race(asyncio.wait_for(asyncio.sleep(30), 0.01))
        except asyncio.TimeoutError:
            return "timeout"
        return "no"

    assert asyncio.run(main()) == "timeout"


def test_work_given_to_a_set_token_never_starts() -> None:
    async def main() -> list[str]:
        token, seen = InterruptToken(), []
        token.set()

        async def work() -> None:
            seen.append("ran")

        with pytest.raises(Interrupted):
            await token.race(work())
        return seen

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert asyncio.run(main()) == []
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


# -- read_file ------------------------------------------------------------------------------------


@pytest.fixture
def call(tmp_path: Path, workspace: Path) -> Any:
    """Run one tool call through the registry, as the kernel does."""
    from recursive_cli.core.tool import ToolContext, ToolRegistry
    from recursive_cli.tools.catalog import core_tools
    from recursive_cli.tools.sandbox import WorkspaceSandbox

    registry = ToolRegistry(core_tools())
    ctx = ToolContext(sandbox=WorkspaceSandbox(workspace), home=tmp_path / "home")

    def run(name: str, /, **arguments: Any) -> Any:
        return asyncio.run(registry.execute(ToolCall(id="c1", name=name, arguments=json.dumps(arguments)), ctx))

    return run


def test_read_file_reads_files_around_the_probe_size_whole(call: Any, workspace: Path) -> None:
    """Files shorter than, as long as and longer than the binary probe read the same way, a
    character split across the probe's end included, line endings of every kind."""
    cases = {"under.txt": b"l\r\n" * 2730 + b"x", "exact.txt": b"ab\n" * 2730 + b"xy",
             "over.txt": b"a" * 8191 + "é".encode() + b"\rnext\r\nlast", "empty.txt": b""}
    for name, data in cases.items():
        (workspace / name).write_bytes(data)
        result = call("read_file", path=name, limit=100_000)
        if not data:
            assert result.content == f"{name} is empty"
            continue
        text = io.StringIO(data.decode("utf-8", "replace"), newline="")  # \n, \r and \r\n end lines
        lines = [line.rstrip("\r\n") for line in text]
        expected = [line[:2000] + ("… [line cut at 2000 characters]" if len(line) > 2000 else "")
                    for line in lines]
        shown = [line.split("\t", 1)[1] for line in result.content.split("\n") if "\t" in line]
        assert shown == expected[:len(shown)]
        assert len(shown) == len(expected) or "continues after line" in result.content


def test_read_file_refuses_what_it_refused_before(call: Any, workspace: Path, tmp_path: Path) -> None:
    (workspace / "d").mkdir()
    (workspace / "f.txt").write_text("x\n")
    (workspace / "bin").write_bytes(b"abc\x00def")
    (workspace / "late-nul").write_bytes(b"a" * 9000 + b"\x00")  # beyond the probe: read as text
    os.mkfifo(workspace / "pipe")
    (workspace / "out").symlink_to(tmp_path)
    expected = {"d": "d is a directory, not a file; use list_dir to see what it contains",
                "missing.txt": "missing.txt does not exist",
                "f.txt/below": "f.txt/below does not exist",
                "bin": "bin looks like a binary file (7 bytes); read_file only shows text files",
                "pipe": "pipe is a FIFO, not a regular file"}
    for path, message in expected.items():
        result = call("read_file", path=path)
        assert result.is_error and result.content.startswith(message), (path, result.content)
    assert "outside the workspace" in call("read_file", path="out/x").content
    assert not call("read_file", path="late-nul").is_error


def test_a_fifo_swapped_in_after_the_check_does_not_block(call: Any, workspace: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.tools.sandbox import WorkspaceSandbox

    os.mkfifo(workspace / "pipe")
    monkeypatch.setattr(WorkspaceSandbox, "resolve",  # as if the check ran before the swap
                        lambda self, path, write=False: workspace.resolve() / "pipe")
    result = call("read_file", path="swapped")
    assert result.is_error and "not a regular file" in result.content


def test_plain_paths_and_symlinked_paths_resolve_alike(workspace: Path, tmp_path: Path) -> None:
    from recursive_cli.tools.sandbox import WorkspaceSandbox

    (workspace / "real" / "sub").mkdir(parents=True)
    (workspace / "real" / "sub" / "f.txt").write_text("x")
    (workspace / "alias").symlink_to(workspace / "real", target_is_directory=True)
    sandbox = WorkspaceSandbox(workspace)
    base = workspace.resolve()
    assert sandbox.resolve("real/sub/f.txt") == base / "real" / "sub" / "f.txt"
    assert sandbox.resolve("alias/sub/f.txt") == base / "real" / "sub" / "f.txt"
    assert sandbox.resolve(str(base / "alias" / "sub")) == base / "real" / "sub"
    assert sandbox.resolve("real/missing/deeper") == base / "real" / "missing" / "deeper"
    assert sandbox.resolve("real//sub/./f.txt") == base / "real" / "sub" / "f.txt"
    assert sandbox.display(sandbox.resolve(str(base))) == "."


# -- resuming big sessions --------------------------------------------------------------------------


def write_session(folder: Path, steps: int) -> list[Message]:
    from recursive_cli.core.events import MessageAdded, TurnStarted
    from recursive_cli.features.sessions.meta import SessionMeta
    from recursive_cli.features.sessions.writer import JsonlSessionWriter

    conversation = [Message.user("go")]
    for step in range(steps):
        call = ToolCall(id=f"call_{step}", name="read_file", arguments=f'{{"path": "m{step}.py"}}')
        conversation += [Message(role="assistant", content="next", tool_calls=(call,),
                                 usage=Usage(input_tokens=10, output_tokens=2)),
                         Message.tool_result(call, "x" * 200)]
    writer = JsonlSessionWriter.create(folder, SessionMeta(id=folder.name, workspace="/w"))
    writer.emit(TurnStarted(turn=1, prompt="go"))
    for message in conversation:
        writer.emit(MessageAdded(message=message, turn=1))
    writer.close()
    return conversation


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_a_big_session_leaves_the_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    from recursive_cli.features.sessions.reader import load_session

    folder = tmp_path / "big"
    conversation = write_session(folder, 3_000)  # over the size from which the load is frozen
    (gc.enable if enabled else gc.disable)()
    try:
        loaded = load_session(folder)
        assert gc.isenabled() is enabled
    finally:
        gc.unfreeze()
        gc.enable()
    assert loaded.messages == conversation and not loaded.warnings


def test_a_failed_load_leaves_the_collector_on(tmp_path: Path) -> None:
    from recursive_cli.features.sessions.reader import load_session
    from recursive_cli.features.sessions.records import SessionSchemaError

    folder = tmp_path / "newer"
    write_session(folder, 10)
    path = folder / "transcript.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    path.write_text("\n".join([json.dumps({**header, "schema_version": 99}), *lines[1:]]) + "\n")
    with pytest.raises(SessionSchemaError):
        load_session(folder)
    assert gc.isenabled()


def test_torn_and_corrupt_lines_are_reported_as_before(tmp_path: Path) -> None:
    from recursive_cli.features.sessions.reader import load_session

    folder = tmp_path / "torn"
    write_session(folder, 5)
    path = folder / "transcript.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[3] = b'{"type": "message", "turn": 1, "message": {"role": "nobody"}, "time": "t"}'
    path.write_bytes(b"\n".join(lines).rstrip(b"\n") + b'\n{"type": "message", "tu\n\n  \n')
    assert load_session(folder).warnings == [
        "line 4 of transcript.jsonl is corrupt and was skipped (1 validation error for MessageRecord)",
        "ignored a torn last line in transcript.jsonl (23 bytes): the run that wrote it stopped mid-write",
        "dropped a tool result for unknown tool call 'call_0'"]  # its call was on the corrupt line


# -- unchanged snapshots ----------------------------------------------------------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


class GitLog:
    """The git subcommands the checkpointer runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from recursive_cli.features.checkpoints.git import ShadowGit

        self.commands: list[str] = []
        real = ShadowGit.run

        def run(git: ShadowGit, *args: str, **kwargs: Any) -> bytes:
            self.commands.append(next(a for a in args if not a.startswith("-") and "=" not in a))
            return real(git, *args, **kwargs)

        monkeypatch.setattr(ShadowGit, "run", run)

    def walked(self) -> bool:
        """Whether a `git ls-files` walk ran since the last call."""
        walked = "ls-files" in self.commands
        self.commands.clear()
        return walked


@pytest.fixture
def checkpointer(workspace: Path, isolated_home: Path) -> Any:
    from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer

    return GitCheckpointer(isolated_home, workspace, "s1")


def changed_paths(cp: Any, before: str, after: str) -> list[str]:
    return sorted(change.path for change in cp.changes(before, after))


@linux_only
def test_an_unchanged_workspace_is_snapshotted_without_a_walk(checkpointer: Any, workspace: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cp = checkpointer
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("a = 1\n")
    log = GitLog(monkeypatch)
    first = cp.snapshot(1, "before")
    second = cp.snapshot(1, "after")  # the second walk: from here on the folders are watched
    assert log.walked()
    third = cp.snapshot(2, "before")
    assert not log.walked()  # nothing changed: known without looking
    assert first.tree == second.tree == third.tree and third.files_changed == 0


@linux_only
def test_every_kind_of_change_is_seen_after_a_snapshot_without_a_walk(
        checkpointer: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After snapshots taken on the watch alone, each change is in the next snapshot — a
    rewrite keeping size and mtime, a file in a new folder, one in a folder holding only
    ignored files, a tracked file inside an ignored folder, a `.gitignore` that un-ignores."""
    cp = checkpointer
    (workspace / ".gitignore").write_text("*.log\nbuild/\n")
    (workspace / "logs").mkdir()
    (workspace / "logs" / "run.log").write_text("ignored\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "kept.txt").write_text("tracked before build/ was ignored\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("value = 1\n")
    (workspace / ".gitignore").write_text("*.log\n")
    cp.snapshot(1, "before")  # build/kept.txt is tracked
    (workspace / ".gitignore").write_text("*.log\nbuild/\n")
    tree = cp.snapshot(1, "after").tree
    log = GitLog(monkeypatch)

    def settle() -> str:
        """Snapshots until one is taken on the watch alone; its tree."""
        for _ in range(3):
            snap = cp.snapshot(9, "before")
            if not log.walked():
                return snap.tree
        raise AssertionError("every snapshot walked the workspace")

    def same_size_and_mtime(path: Path, text: str) -> None:
        info = path.stat()
        assert len(text.encode()) == info.st_size
        path.write_text(text)
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))

    changes: list[tuple[Any, list[str]]] = [
        (lambda: same_size_and_mtime(workspace / "src" / "a.py", "value = 2\n"), ["src/a.py"]),
        (lambda: (workspace / "new" / "deep").mkdir(parents=True) or
         (workspace / "new" / "deep" / "b.py").write_text("b\n"), ["new/deep/b.py"]),
        (lambda: (workspace / "logs" / "notes.txt").write_text("not ignored\n"), ["logs/notes.txt"]),
        (lambda: (workspace / "build" / "kept.txt").write_text("changed\n"), ["build/kept.txt"]),
        (lambda: (workspace / "build" / "new.o").write_text("ignored\n"), []),
        (lambda: (workspace / ".gitignore").write_text("*.log\n"), [".gitignore", "build/new.o"]),
        (lambda: (workspace / "build" / "later.txt").write_text("seen\n"), ["build/later.txt"]),
        (lambda: (workspace / "new" / "deep" / "b.py").unlink(), ["new/deep/b.py"]),
        (lambda: (workspace / "link").symlink_to("src"), ["link"]),
    ]
    for change, expected in changes:
        settled = settle()
        assert settled == tree
        change()
        after = cp.snapshot(9, "after").tree
        assert changed_paths(cp, tree, after) == expected, change
        tree = after


@linux_only
def test_a_workspace_that_cannot_be_watched_is_walked_every_time(
        checkpointer: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.features.checkpoints import watch

    monkeypatch.setattr(watch, "LOCAL_FILESYSTEMS", frozenset())  # as on NFS, SMB or FUSE
    (workspace / "a.txt").write_text("a")
    log = GitLog(monkeypatch)
    for turn in range(4):
        checkpointer.snapshot(turn, "before")
        assert log.walked()


@linux_only
def test_the_watch_is_trusted_for_a_while_only(checkpointer: Any, workspace: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.features.checkpoints import scan

    (workspace / "a.txt").write_text("a")
    log = GitLog(monkeypatch)
    for turn in range(3):
        checkpointer.snapshot(turn, "before")
    log.walked()
    monkeypatch.setattr(scan, "TRUST_SECONDS", -1.0)
    checkpointer.snapshot(5, "before")
    assert log.walked()
