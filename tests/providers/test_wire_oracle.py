"""The SDKs as the oracle of what goes on the wire: the same conversation, sent through the
official SDK client (`messages.create`, `chat.completions.create`, given the parameters our
body holds) and through our provider to a loopback server, arrives as the same bytes with
the same headers that matter (content type, accept, API version, credentials)."""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import replace
from typing import Any

import pytest

from recursive_cli.core.messages import Message, Reasoning
from recursive_cli.core.provider import NullHooks
from recursive_cli.providers.anthropic_provider import API_VERSION, AnthropicProvider
from recursive_cli.providers.anthropic_thinking import INTERLEAVED_THINKING_BETA
from recursive_cli.providers.openai_provider import OpenAIProvider

from .conversations import KEY, TOOLS, conversation
from .oracle import sdk_http_client, sent_body
from .wireserver import Answer, Received, WireServer

# The openai and anthropic SDKs cost ≈ 1.5 s of CPU to import: under pytest-xdist, every module
# that imports them in this process runs on one worker (`xdist_group`), so only that one pays.
pytestmark = pytest.mark.xdist_group("openai-anthropic-sdks")

# Answers the clients can read (the tests look at the requests only).
ANTHROPIC_OK = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                           "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                           "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
OPENAI_OK = json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
ANTHROPIC_SSE = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
                 b'"role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":1,'
                 b'"output_tokens":1}}}\n\nevent: message_delta\ndata: {"type":"message_delta","delta":'
                 b'{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\nevent: message_stop\n'
                 b'data: {"type":"message_stop"}\n\n')
OPENAI_SSE = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
              b'"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
# The headers both must send alike; the SDKs' own telemetry (x-stainless-*) and user agent aside.
COMPARED = ("content-type", "accept", "anthropic-version", "authorization", "x-api-key", "content-length",
            "openai-organization", "openai-project", "x-team")


def answer(kind: str, stream: bool) -> Answer:
    if kind == "anthropic":
        return Answer(body=ANTHROPIC_SSE, content_type="text/event-stream") if stream else Answer(body=ANTHROPIC_OK)
    return Answer(body=OPENAI_SSE, content_type="text/event-stream") if stream else Answer(body=OPENAI_OK)


def ours(kind: str, base: str, messages: list[Message], stream: bool, key: str | None = KEY,
         max_tokens: int | None = None, model: str = "claude-oracle", **options: Any) -> bytes:
    """Send `messages` through our provider (made with `options`); the body it built."""
    async def main() -> bytes:
        if kind == "anthropic":
            provider: Any = AnthropicProvider(model, key, base, stream=stream, **options,
                                              **({"max_tokens": max_tokens} if max_tokens else {}))
        else:
            provider = OpenAIProvider("gpt-oracle", key, base + "/v1", stream=stream, max_tokens=max_tokens)
        return await sent_body(provider, messages, TOOLS)
    return asyncio.run(main())


def through_sdk(kind: str, base: str, params: dict[str, Any], betas: list[str] | None = None) -> None:
    """Send `params` through the SDK's own create call, as a user of the SDK would (with
    `betas`, its beta create call, which says them in a header)."""
    async def main() -> None:
        if kind == "anthropic":
            from anthropic import AsyncAnthropic

            client: Any = AsyncAnthropic(api_key=KEY, base_url=base, max_retries=0, timeout=30.0,
                                         http_client=sdk_http_client(kind))
            create = client.messages.create
            if betas:
                create = functools.partial(client.beta.messages.create, betas=betas)
        else:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(api_key=KEY, base_url=base + "/v1", max_retries=0, timeout=30.0,
                                 http_client=sdk_http_client(kind))
            create = client.chat.completions.create
        try:
            result = await create(**params)
            if params.get("stream"):
                async for _ in result:
                    pass
        finally:
            await client.close()
    asyncio.run(main())


def both(kind: str, messages: list[Message], stream: bool, max_tokens: int | None = None) -> tuple[Received, Received]:
    """(the SDK's request, ours) for the same conversation."""
    with WireServer(answer(kind, stream)) as server:
        body = ours(kind, server.url, messages, stream, max_tokens=max_tokens)
        through_sdk(kind, server.url, json.loads(body))
    ours_request, sdk_request = server.requests
    assert ours_request.body == body
    return sdk_request, ours_request


def relevant(request: Received) -> dict[str, str]:
    return {name: value for name, value in request.headers.items() if name in COMPARED}


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("seed", range(4))
def test_the_sdk_sends_our_body_byte_for_byte(kind: str, stream: bool, seed: int) -> None:
    messages = conversation(seed)
    for cut in (2, len(messages) // 2, len(messages)):  # a first request, mid-session, the whole session
        sdk, ours_request = both(kind, messages[:cut], stream, max_tokens=[None, 512][seed % 2])
        assert ours_request.body == sdk.body
        assert ours_request.path == sdk.path
        assert relevant(ours_request) == relevant(sdk)


def with_thinking(messages: list[Message]) -> list[Message]:
    """`messages`, every assistant message with the thinking blocks a thinking model gives."""
    out = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            kept = (Reasoning(kind="thinking", text=f"step {index}: look first ✓\n", signature=f"Eq{index}+/sig=="),)
            if index % 3 == 0:
                kept += (Reasoning(kind="redacted_thinking", signature=f"EmwK{index}redacted"),)
            message = replace(message, reasoning=kept)
        out.append(message)
    return out


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(("model", "options", "asked"), [
    ("claude-sonnet-4-5", {"thinking_budget": 16000}, {"thinking": {"type": "enabled", "budget_tokens": 16000}}),
    ("claude-opus-4-6", {"effort": "high"}, {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}),
    ("claude-opus-4-5", {"thinking_budget": 2048, "effort": "low"},
     {"thinking": {"type": "enabled", "budget_tokens": 2048}, "output_config": {"effort": "low"}}),
], ids=["budget", "effort", "both"])
def test_thinking_requests_are_the_sdks_byte_for_byte(stream: bool, model: str, options: dict[str, Any],
                                                      asked: dict[str, Any]) -> None:
    """The thinking parameters and the kept thinking blocks (signatures, redacted data) go out
    as `messages.create(thinking=…, output_config=…)` sends them; never a temperature."""
    messages = with_thinking(conversation(3))
    with WireServer(answer("anthropic", stream)) as server:
        body = ours("anthropic", server.url, messages, stream, model=model, **options)
        through_sdk("anthropic", server.url, json.loads(body))
    ours_request, sdk_request = server.requests
    assert ours_request.body == sdk_request.body
    sent = json.loads(body)
    assert {key: sent[key] for key in asked} == asked and "temperature" not in sent
    budget = asked["thinking"].get("budget_tokens", 0)
    assert sent["max_tokens"] > budget
    replies = [m for m in sent["messages"] if m["role"] == "assistant"]
    assert replies and all(m["content"][0]["type"] == "thinking" for m in replies)
    assert replies[0]["content"][0]["signature"].startswith("Eq")
    assert relevant(ours_request) == relevant(sdk_request)


def test_manual_thinking_asks_for_interleaved_thinking_as_the_sdks_betas_do() -> None:
    messages = with_thinking(conversation(1, 6))
    with WireServer(answer("anthropic", True)) as server:
        body = ours("anthropic", server.url, messages, True, thinking_budget=4096)
        through_sdk("anthropic", server.url, json.loads(body), betas=[INTERLEAVED_THINKING_BETA])
        ours("anthropic", server.url, messages, True, effort="medium")  # adaptive: interleaved already
    ours_request, sdk_request, adaptive = server.requests
    assert ours_request.headers["anthropic-beta"] == sdk_request.headers["anthropic-beta"] == INTERLEAVED_THINKING_BETA
    assert "anthropic-beta" not in adaptive.headers


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_the_credential_travels_as_the_sdk_sends_it(kind: str) -> None:
    sdk, ours_request = both(kind, conversation(0, 3), True)
    assert sdk.headers["authorization"] == ours_request.headers["authorization"] == f"Bearer {KEY}"
    if kind == "anthropic":
        import anthropic._constants as constants

        assert ours_request.headers["anthropic-version"] == API_VERSION == constants.ANTHROPIC_API_VERSION


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_without_a_key_no_credential_header_is_sent(kind: str) -> None:
    with WireServer(answer(kind, True)) as server:
        ours(kind, server.url, conversation(1, 3), True, key=None)
    (request,) = server.requests
    assert not {"authorization", "x-api-key"} & set(request.headers)
    assert request.headers["content-type"] == "application/json"


def test_anthropic_custom_headers_from_the_environment_as_the_sdk_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Team: blue\nnot a header\nanthropic-version: 2099-01-01")
    sdk, ours_request = both("anthropic", conversation(2, 3), True)
    assert ours_request.headers["x-team"] == "blue" and ours_request.headers["anthropic-version"] == "2099-01-01"
    assert relevant(ours_request) == relevant(sdk)


def test_openai_organization_and_project_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_9")
    sdk, ours_request = both("openai", conversation(2, 3), False)
    assert (ours_request.headers["openai-organization"], ours_request.headers["openai-project"]) == ("org-123", "proj_9")
    assert relevant(ours_request) == relevant(sdk)


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("base", ["{url}", "{url}/", "{url}/proxy/base"])
def test_the_endpoint_is_joined_to_the_base_url_as_the_sdk_joins_it(kind: str, base: str) -> None:
    with WireServer(answer(kind, False)) as server:
        root = base.format(url=server.url)
        sdk_base = root + "/v1" if kind == "openai" else root

        async def main() -> None:
            provider: Any = (AnthropicProvider("m", KEY, root, stream=False) if kind == "anthropic"
                             else OpenAIProvider("m", KEY, sdk_base, stream=False))
            try:
                await provider.complete([Message.user("hi")], [], NullHooks())
            finally:
                await provider.aclose()
        asyncio.run(main())
        params: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        if kind == "anthropic":
            params["max_tokens"] = 5
        through_sdk(kind, root, params)
    assert server.requests[0].path == server.requests[1].path


def test_the_sdk_constants_we_follow_are_still_the_sdks() -> None:
    """The wire facts copied from the SDK versions this was written against: when an SDK
    update changes one, this says which."""
    import anthropic._constants as anthropic_constants
    import openai._constants as openai_constants

    from recursive_cli.providers import retry

    for constants in (openai_constants, anthropic_constants):
        assert (constants.INITIAL_RETRY_DELAY, constants.MAX_RETRY_DELAY) == (retry.INITIAL_RETRY_DELAY,
                                                                              retry.MAX_RETRY_DELAY)
    assert openai_constants.MAX_RETRY_AFTER_DELAY == retry.OPENAI_RULES.longest_wait


@pytest.mark.parametrize(("model", "budget", "effort", "thinking", "effort_sent"), [
    ("claude-sonnet-4-5-20250929", None, "high", {"type": "enabled", "budget_tokens": 10000}, None),
    ("anthropic.claude-sonnet-4-20250514-v1:0", None, "max", {"type": "enabled", "budget_tokens": 24000}, None),
    ("claude-3-7-sonnet-latest", None, "low", {"type": "enabled", "budget_tokens": 2048}, None),
    ("claude-opus-4-5@20251101", None, "medium", {"type": "enabled", "budget_tokens": 4096}, "medium"),
    ("claude-opus-4-6-v1", None, "max", {"type": "adaptive"}, "max"),
    ("claude-sonnet-5", None, "low", {"type": "adaptive"}, "low"),
    ("claude-opus-4-7", 8000, None, {"type": "enabled", "budget_tokens": 8000}, None),
    ("claude-opus-4-1", None, None, None, None),
])
def test_what_each_model_is_asked_for(model: str, budget: int | None, effort: str | None,
                                      thinking: dict[str, Any] | None, effort_sent: str | None) -> None:
    """Adaptive thinking and the effort parameter on every model but the closed list of those
    from before them, which get the effort's budget instead."""
    from recursive_cli.providers.anthropic_thinking import thinking_request

    asked = thinking_request(model, budget, effort)
    assert (asked.thinking, asked.effort) == (thinking, effort_sent)
    assert asked.betas == ((INTERLEAVED_THINKING_BETA,) if thinking and thinking["type"] == "enabled" else ())
