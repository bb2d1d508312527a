"""The HTTP providers (our own client on both wire formats) against a loopback server that speaks them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from fakeserver import FakeLLMServer

from recursive_cli.core.messages import Message, ToolCall
from recursive_cli.core.provider import ChatProvider, Completion, ProviderError, RetryNotice, ToolSpec
from recursive_cli.providers import anthropic_provider, openai_provider
from recursive_cli.providers.anthropic_provider import AnthropicProvider
from recursive_cli.providers.openai_provider import OpenAIProvider
from recursive_cli.providers.retry import backoff_delay, call_with_retries, retry_after_seconds

T = TypeVar("T")

KEY = "sk-test-SECRET-0123456789"
SYSTEM = "You are a careful coding agent."
TOOLS = [
    ToolSpec("run_shell", "Run a shell command.",
             {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec("read_file", "Read a file.",
             {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
]
KINDS = ["openai", "anthropic"]
BOTH_MODES = [pytest.param(kind, stream, id=f"{kind}-{'stream' if stream else 'whole'}")
              for kind in KINDS for stream in (True, False)]


@pytest.fixture(autouse=True)
def _fast_and_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECURSIVE_RETRY_BASE_DELAY", "0.001")
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


class RecordingHooks:
    """Hooks that remember every text delta and retry notice."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.retries: list[RetryNotice] = []

    def on_text(self, delta: str) -> None:
        self.texts.append(delta)

    def on_retry(self, notice: RetryNotice) -> None:
        self.retries.append(notice)


def make_provider(kind: str, srv: FakeLLMServer, stream: bool = True) -> ChatProvider:
    if kind == "openai":
        return OpenAIProvider("gpt-4o", KEY, srv.openai_base_url, stream=stream)
    return AnthropicProvider("claude-sonnet-4-5", KEY, srv.anthropic_base_url, stream=stream)


def with_provider(kind: str, srv: FakeLLMServer, stream: bool,
                  body: Callable[[ChatProvider], Awaitable[T]]) -> T:
    """Run `body(provider)` in a fresh event loop and close the provider afterwards."""
    async def main() -> T:
        provider = make_provider(kind, srv, stream)
        try:
            return await body(provider)
        finally:
            await provider.aclose()
    return asyncio.run(main())


def ask(kind: str, srv: FakeLLMServer, stream: bool = True,
        hooks: RecordingHooks | None = None) -> Completion:
    """One request with a system and a user message."""
    hooks = hooks or RecordingHooks()
    messages = [Message.system(SYSTEM), Message.user("hello")]
    return with_provider(kind, srv, stream, lambda p: p.complete(messages, TOOLS, hooks))


def fail(kind: str, srv: FakeLLMServer, stream: bool = True,
         hooks: RecordingHooks | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        ask(kind, srv, stream, hooks)
    return info.value


# -- answers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_plain_text_answer_with_usage(kind: str, stream: bool) -> None:
    hooks = RecordingHooks()
    reply = {"text": "Hello there, this is the answer.", "usage": {"input_tokens": 42, "output_tokens": 7}}
    with FakeLLMServer([reply]) as srv:
        completion = ask(kind, srv, stream, hooks)
    assert completion.message.role == "assistant"
    assert completion.message.content == "Hello there, this is the answer."
    assert completion.stop == "end"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (42, 7)
    assert completion.message.usage == completion.usage
    assert "".join(hooks.texts) == completion.message.content
    assert len(hooks.texts) > 1 if stream else len(hooks.texts) == 1
    body = srv.requests[0].body
    assert body["stream"] is True if stream else "stream" not in body


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_cached_prompt_tokens_are_reported(kind: str, stream: bool) -> None:
    reply = {"text": "ok", "usage": {"input_tokens": 1000, "output_tokens": 3, "cache_read_tokens": 800}}
    with FakeLLMServer([reply]) as srv:
        usage = ask(kind, srv, stream).usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (1000, 800, 3)


# The fake sends "content_filter" as Anthropic's nearest stop_reason, "refusal"; a raw value
# goes out as it is.
@pytest.mark.parametrize(("kind", "stop", "expected", "reason"), [
    ("openai", "length", "length", "length"),
    ("anthropic", "length", "length", "max_tokens"),
    ("anthropic", "model_context_window_exceeded", "length", "model_context_window_exceeded"),
    ("openai", "content_filter", "content_filter", "content_filter"),
    ("anthropic", "content_filter", "refusal", "refusal"),
    ("openai", "something_new", "other", "something_new"),
    ("anthropic", "something_new", "other", "something_new"),
])
def test_finish_reason_mapping(kind: str, stop: str, expected: str, reason: str) -> None:
    with FakeLLMServer([{"text": "cut off", "stop": stop}]) as srv:
        completion = ask(kind, srv)
    assert (completion.stop, completion.reason) == (expected, reason)
    assert not completion.whole


# -- replies that are not whole (issue 12) --------------------------------------------------------

CUT_CALLS = [{"name": "run_shell", "arguments": {"command": "ls"}, "id": "call_1"},
             {"name": "run_shell", "arguments": {"command": "touch HALF_EXECUTED"}, "id": "call_2"}]


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_a_reply_cut_mid_tool_call_says_length(kind: str, stream: bool) -> None:
    """The provider hands the cut reply over as it came, with its stop; the kernel does not run it."""
    with FakeLLMServer([{"text": "Two calls.", "tool_calls": CUT_CALLS, "cut": 14}]) as srv:
        completion = ask(kind, srv, stream)
    assert completion.stop == "length" and not completion.whole
    assert completion.reason == ("length" if kind == "openai" else "max_tokens")
    assert completion.message.content == "Two calls."
    first, second = completion.message.tool_calls
    assert first.parsed_arguments() == {"command": "ls"}
    if stream or kind == "openai":
        assert second.arguments == '{"command": "t'  # cut mid-JSON, as the server sent it
    else:
        assert second.parsed_arguments() == {}  # a whole Anthropic body can only hold an object


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_with_no_finish_reason_is_retried(kind: str) -> None:
    hooks = RecordingHooks()
    replies = [{"text": "x", "tool_calls": CUT_CALLS, "cut": 5, "no_finish": True}, {"text": "whole"}]
    with FakeLLMServer(replies) as srv:
        completion = ask(kind, srv, hooks=hooks)
    assert completion.message.content == "whole" and completion.message.tool_calls == ()
    (retry,) = hooks.retries
    assert "the stream ended without a " + ("finish_reason" if kind == "openai" else "stop_reason") \
        in retry.reason


@pytest.mark.parametrize("kind", KINDS)
def test_a_whole_body_with_no_finish_reason_is_not_whole(kind: str) -> None:
    with FakeLLMServer([{"tool_calls": CUT_CALLS, "no_finish": True}]) as srv:
        completion = ask(kind, srv, stream=False)
    assert completion.stop == "other" and not completion.whole
    assert completion.reason == ("no finish_reason" if kind == "openai" else "no stop_reason")
    assert len(completion.message.tool_calls) == 2


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_a_refusal_is_the_answer_text(kind: str, stream: bool) -> None:
    hooks = RecordingHooks()
    refusal = "I'm sorry, but I can't assist with that request."
    with FakeLLMServer([{"refusal": refusal}]) as srv:
        completion = ask(kind, srv, stream, hooks)
    assert (completion.stop, completion.reason) == ("refusal", "refusal")
    assert completion.message.content == refusal and "".join(hooks.texts) == refusal
    assert not completion.whole


@pytest.mark.parametrize("stream", [True, False])
def test_openai_null_refusal_is_no_refusal(stream: bool) -> None:
    """The API sends `"refusal": null` on ordinary replies (the fake does too)."""
    with FakeLLMServer([{"text": "fine"}]) as srv:
        completion = ask("openai", srv, stream)
    assert (completion.stop, completion.message.content) == ("end", "fine")


def test_openai_unknown_finish_with_calls_is_not_taken_for_tool_calls() -> None:
    """vLLM says "abort" when it drops a request: the calls it holds may be incomplete."""
    with FakeLLMServer([{"tool_calls": CUT_CALLS, "stop": "abort"},
                        {"tool_calls": CUT_CALLS, "stop": "end"}]) as srv:
        aborted, ollama_style = ask("openai", srv), ask("openai", srv)
    assert (aborted.stop, aborted.reason) == ("other", "abort")
    assert ollama_style.stop == "tool_calls"  # "stop" beside tool calls, as Ollama says it


def test_openai_stream_asks_for_usage() -> None:
    with FakeLLMServer([{"text": "ok"}]) as srv:
        ask("openai", srv)
    body = srv.requests[0].body
    assert body["model"] == "gpt-4o"
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "run_shell", "description": "Run a shell command.", "parameters": TOOLS[0].parameters}}


def test_anthropic_request_shape() -> None:
    with FakeLLMServer([{"text": "ok"}]) as srv:
        ask("anthropic", srv)
    body = srv.requests[0].body
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 8192
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]}]
    assert body["tools"][1] == {"name": "read_file", "description": "Read a file.",
                                "input_schema": TOOLS[1].parameters}


# -- a tool conversation ------------------------------------------------------------------------------

TOOL_REPLIES: list[dict[str, Any]] = [
    {"text": "Let me look.", "tool_calls": [
        {"name": "run_shell", "arguments": {"command": "ls -la"}, "id": "call_A"},
        {"name": "read_file", "arguments": '{"path": "README.md"}', "id": "call_B"}]},
    {"text": "There are two files."},
]


def run_tool_conversation(kind: str, stream: bool) -> tuple[FakeLLMServer, list[Completion]]:
    async def body(provider: ChatProvider) -> list[Completion]:
        hooks = RecordingHooks()
        messages = [Message.system(SYSTEM), Message.user("What is here?")]
        first = await provider.complete(messages, TOOLS, hooks)
        calls = first.message.tool_calls
        messages += [first.message, Message.tool_result(calls[0], "a.txt\nb.txt"),
                     Message.tool_result(calls[1], "no such file", is_error=True)]
        return [first, await provider.complete(messages, TOOLS, hooks)]

    with FakeLLMServer(TOOL_REPLIES) as srv:
        return srv, with_provider(kind, srv, stream, body)


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_tool_calls_are_assembled(kind: str, stream: bool) -> None:
    _, (first, second) = run_tool_conversation(kind, stream)
    assert first.stop == "tool_calls"
    assert first.message.content == "Let me look."
    calls = first.message.tool_calls
    assert [(c.id, c.name) for c in calls] == [("call_A", "run_shell"), ("call_B", "read_file")]
    assert [c.parsed_arguments() for c in calls] == [{"command": "ls -la"}, {"path": "README.md"}]
    assert second.stop == "end"
    assert second.message.content == "There are two files."
    assert second.message.tool_calls == ()


@pytest.mark.parametrize("stream", [True, False])
def test_openai_tool_conversation_request(stream: bool) -> None:
    srv, _ = run_tool_conversation("openai", stream)
    messages = srv.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assistant = messages[2]
    assert assistant["content"] == "Let me look."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_A", "call_B"]
    assert assistant["tool_calls"][0]["type"] == "function"
    assert assistant["tool_calls"][0]["function"]["name"] == "run_shell"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"command": "ls -la"}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_A", "content": "a.txt\nb.txt"}
    assert messages[4] == {"role": "tool", "tool_call_id": "call_B", "content": "no such file"}


@pytest.mark.parametrize("stream", [True, False])
def test_anthropic_tool_conversation_request(stream: bool) -> None:
    srv, _ = run_tool_conversation("anthropic", stream)
    body = srv.requests[1].body
    assert body["system"][0]["text"] == SYSTEM
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_A", "name": "run_shell", "input": {"command": "ls -la"}},
        {"type": "tool_use", "id": "call_B", "name": "read_file", "input": {"path": "README.md"}},
    ]
    assert messages[2]["content"] == [  # consecutive tool results grouped in one user message
        {"type": "tool_result", "tool_use_id": "call_A", "content": "a.txt\nb.txt"},
        {"type": "tool_result", "tool_use_id": "call_B", "content": "no such file", "is_error": True,
         "cache_control": {"type": "ephemeral"}},
    ]
    assert messages[0]["content"][-1]["cache_control"] == {"type": "ephemeral"}  # where the request before ended
    assert "cache_control" not in json.dumps([messages[0]["content"][:-1], messages[1]])


def test_anthropic_keeps_invalid_arguments_valid() -> None:
    provider = AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9")
    bad = ToolCall(id="toolu_1", name="run_shell", arguments="{not json")
    messages = [Message.system(SYSTEM), Message.user("go"),
                Message(role="assistant", content="", tool_calls=(bad,)),
                Message.tool_result(bad, "invalid JSON arguments", is_error=True)]
    body = json.loads(provider.request_body(messages, TOOLS))
    tool_use = body["messages"][1]["content"]
    assert tool_use == [{"type": "tool_use", "id": "toolu_1", "name": "run_shell",
                         "input": {anthropic_provider.INVALID_ARGUMENTS_KEY: "{not json"}}]
    asyncio.run(provider.aclose())


@pytest.mark.parametrize("kind", KINDS)
def test_each_message_is_encoded_once(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module: Any = openai_provider if kind == "openai" else anthropic_provider
    encoded: list[Message] = []
    real = module.encode_message

    def counting(message: Message) -> Any:
        encoded.append(message)
        return real(message)

    monkeypatch.setattr(module, "encode_message", counting)
    provider = (OpenAIProvider("gpt-4o", KEY, "http://127.0.0.1:9") if kind == "openai"
                else AnthropicProvider("claude-sonnet-4-5", KEY, "http://127.0.0.1:9"))
    messages = [Message.system(SYSTEM)] + [Message.user(f"message {i}") for i in range(50)]
    first = provider.request_body(messages, TOOLS)
    messages.append(Message.user("one more"))
    second = provider.request_body(messages, TOOLS)
    assert len(encoded) == 52
    assert json.loads(second)["messages"][-1]["content"] != json.loads(first)["messages"][-1]["content"]
    asyncio.run(provider.aclose())


# -- failures and retries ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_429_with_retry_after_is_retried_once(kind: str) -> None:
    hooks = RecordingHooks()
    replies: list[dict[str, Any]] = [
        {"error": {"status": 429, "message": "slow down", "headers": {"retry-after": "0"}}},
        {"text": "ok now"}]
    with FakeLLMServer(replies) as srv:
        completion = ask(kind, srv, hooks=hooks)
    assert completion.message.content == "ok now"
    assert len(hooks.retries) == 1
    notice = hooks.retries[0]
    assert (notice.attempt, notice.status) == (1, 429)
    assert 0 < notice.delay_seconds <= 0.001  # as in the SDKs, a wait of 0 is none asked for: the backoff
    assert "429" in notice.reason and "slow down" in notice.reason
    assert len(srv.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_503_three_times_then_success(kind: str) -> None:
    hooks = RecordingHooks()
    replies: list[dict[str, Any]] = [{"error": {"status": 503, "message": "busy"}}] * 3
    replies.append({"text": "finally"})
    with FakeLLMServer(replies) as srv:
        completion = ask(kind, srv, hooks=hooks)
    assert completion.message.content == "finally"
    assert [n.attempt for n in hooks.retries] == [1, 2, 3]
    assert {n.status for n in hooks.retries} == {503}


def test_anthropic_overloaded_529_is_retried() -> None:
    hooks = RecordingHooks()
    with FakeLLMServer([{"error": {"status": 529, "message": "Overloaded"}}, {"text": "ok"}]) as srv:
        assert ask("anthropic", srv, hooks=hooks).message.content == "ok"
    assert [n.status for n in hooks.retries] == [529]
    assert "overloaded" in hooks.retries[0].reason.lower()


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_dropped_connection_is_retried(kind: str, stream: bool) -> None:
    hooks = RecordingHooks()
    with FakeLLMServer([{"drop": True}, {"text": "ok"}]) as srv:
        assert ask(kind, srv, stream, hooks).message.content == "ok"
    assert len(hooks.retries) == 1
    assert hooks.retries[0].status is None
    assert "connection" in hooks.retries[0].reason


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_response_cut_off_midway_is_retried(kind: str, stream: bool) -> None:
    hooks = RecordingHooks()
    replies: list[dict[str, Any]] = [{"text": "this answer will be cut off halfway", "drop": "mid"},
                                     {"text": "whole"}]
    with FakeLLMServer(replies) as srv:
        assert ask(kind, srv, stream, hooks).message.content == "whole"
    assert len(hooks.retries) == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("status", "message"), [(400, "messages.0.content: field required"),
                                                 (401, "invalid x-api-key")])
def test_client_errors_fail_fast(kind: str, status: int, message: str) -> None:
    hooks = RecordingHooks()
    with FakeLLMServer([{"error": {"status": status, "message": message}}, {"text": "never"}]) as srv:
        error = fail(kind, srv, hooks=hooks)
    assert error.status == status and not error.retryable
    assert "\n" not in error.reason
    assert error.reason.startswith(f"HTTP {status} from http://127.0.0.1:")
    assert message in error.reason
    assert hooks.retries == []
    assert len(srv.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_exhausted_script_is_a_client_error(kind: str) -> None:
    with FakeLLMServer([]) as srv:
        error = fail(kind, srv)
    assert error.status == 400 and "script exhausted" in error.reason


@pytest.mark.parametrize(("kind", "stream"), BOTH_MODES)
def test_malformed_response_is_retried(kind: str, stream: bool) -> None:
    hooks = RecordingHooks()
    with FakeLLMServer([{"malformed": True}, {"text": "clean"}]) as srv:
        assert ask(kind, srv, stream, hooks).message.content == "clean"
    assert len(hooks.retries) == 1
    assert "malformed" in hooks.retries[0].reason


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_responses_give_up_after_max_retries(kind: str) -> None:
    hooks = RecordingHooks()
    with FakeLLMServer([{"malformed": True}] * 6 + [{"text": "too late"}]) as srv:
        error = fail(kind, srv, hooks=hooks)
    assert error.retryable and "malformed" in error.reason
    assert len(hooks.retries) == 5
    assert len(srv.requests) == 6


@pytest.mark.parametrize("kind", KINDS)
def test_api_key_only_travels_in_the_auth_header(kind: str) -> None:
    replies: list[dict[str, Any]] = [
        {"text": "ok"}, {"error": {"status": 401, "message": f"Incorrect API key provided: {KEY}"}}]
    with FakeLLMServer(replies) as srv:
        ask(kind, srv)
        error = fail(kind, srv)
    assert KEY not in error.reason and KEY not in str(error)
    assert error.__cause__ is None and error.__suppress_context__  # the SDK's message echoes the key
    for request in srv.requests:
        assert KEY not in json.dumps(request.body)
        carriers = {name for name, value in request.headers.items() if KEY in value}
        assert carriers and carriers <= {"authorization", "x-api-key"}


# -- the retry loop itself -----------------------------------------------------------------------------


def test_retry_loop_waits_with_backoff_then_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECURSIVE_RETRY_BASE_DELAY")
    hooks, slept = RecordingHooks(), []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def always_busy() -> None:
        raise ProviderError("HTTP 503", status=503, retryable=True)

    with pytest.raises(ProviderError):
        asyncio.run(call_with_retries(always_busy, hooks, max_retries=3, base_delay=1.0, sleep=sleep))
    assert [n.delay_seconds for n in hooks.retries] == slept
    assert [1.0 * 0.75 <= slept[0] <= 1.0, 1.5 <= slept[1] <= 2.0, 3.0 <= slept[2] <= 4.0] == [True] * 3


def test_retry_loop_does_not_retry_permanent_errors() -> None:
    hooks, calls = RecordingHooks(), []

    async def bad_request() -> None:
        calls.append(1)
        raise ProviderError("HTTP 400", status=400)

    with pytest.raises(ProviderError):
        asyncio.run(call_with_retries(bad_request, hooks))
    assert calls == [1] and hooks.retries == []


def test_server_retry_after_wins_but_is_capped() -> None:
    assert backoff_delay(1, 1.0, 60.0, retry_after=7.5) == 7.5  # (the cap of a server's wait: tests/providers)
    assert backoff_delay(10, 1.0, 60.0) <= 60.0


def test_retry_after_header_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
