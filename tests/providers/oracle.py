"""What a stream comes to, read by the SDK's own stream classes and by our provider, in one shape
the tests compare: the answer text, the tool calls, the usage, the stop reason — or that the
stream failed, and how.

    Outcome(text, calls, usage, stop, thinking, thinking_tokens) | Outcome(failure="error" | "incomplete")

`calls` holds (id, name, arguments as parsed JSON); a call our provider keeps as text that
does not parse (a call the output limit cut) is ("cut") in place of its arguments on both
sides, since the SDK parses what it has of it partially and we keep the raw text. `thinking`
holds (type, thinking text or redacted data, signature) for each thinking block, in order.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import ssl
from dataclasses import dataclass, field
from typing import Any

from recursive_cli.core.messages import Message
from recursive_cli.core.provider import NullHooks, ProviderError
from recursive_cli.providers.anthropic_provider import AnthropicProvider
from recursive_cli.providers.openai_provider import OpenAIProvider

from .wireserver import Answer, WireServer

CUT = "cut"


@dataclass(frozen=True)
class Outcome:
    text: str = ""
    calls: tuple[tuple[str, str, Any], ...] = ()
    usage: tuple[int, int, int, int] = (0, 0, 0, 0)  # whole prompt, output, cache read, cache write
    stop: str | None = None
    thinking: tuple[tuple[str, str, str], ...] = ()
    thinking_tokens: int | None = None
    failure: str | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)


async def sent_body(provider: Any, messages: list[Message], tools: Any) -> bytes:
    """The body `provider` builds for `messages`, after one real request with it (then closed)."""
    try:
        body = provider.request_body(messages, tools)
        await provider.complete(messages, tools, NullHooks())
        return bytes(body)
    finally:
        await provider.aclose()


async def first_attempt(provider: Any) -> Any:
    """One attempt of `provider` on a one-message conversation, as the stream tests read it (then closed)."""
    try:
        return await provider._attempt(provider.request_body([Message.user("hi")], []), NullHooks())
    finally:
        await provider.aclose()


def sdk_http_client(kind: str) -> Any:
    """The HTTP client the SDK `kind` builds for itself (its own default class: timeouts,
    connection limits, redirects, proxies from the environment), but with a TLS context that
    loads no CA certificates. Every server here is plain http on loopback, so the certificates
    would verify nothing, and loading them is most of what building a client costs (≈ 25 ms,
    for each of hundreds of clients)."""
    module: Any = importlib.import_module(kind)
    return module.DefaultAsyncHttpxClient(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))


def serve(stream: bytes, piece: int) -> WireServer:
    return WireServer(Answer(200, stream, "text/event-stream", piece=piece))


def ours(kind: str, stream: bytes, piece: int) -> Outcome:
    """The stream read by our provider (one attempt: a failure is not retried here)."""
    with serve(stream, piece) as server:
        async def main() -> Any:
            return await first_attempt(AnthropicProvider("claude-oracle", "k", server.url) if kind == "anthropic"
                                       else OpenAIProvider("gpt-oracle", "k", server.url + "/v1"))
        try:
            completion = asyncio.run(main())
        except ProviderError as err:
            incomplete = "without a stop_reason" in err.reason or "without a finish_reason" in err.reason
            return Outcome(failure="incomplete" if incomplete else "error", notes=(err.reason,))
    message = completion.message
    calls = []
    for call in message.tool_calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            arguments = CUT
        calls.append((call.id, call.name, arguments))
    usage = completion.usage
    thinking = tuple((r.kind, r.text if r.kind == "thinking" else r.signature or "",
                      r.signature or "" if r.kind == "thinking" else "") for r in message.reasoning or ())
    return Outcome(message.content, tuple(calls), (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
                                                   usage.cache_write_tokens), completion.reason, thinking,
                   usage.reasoning_tokens)


def sdk(kind: str, stream: bytes, piece: int) -> Outcome:
    """The stream read by the SDK's streaming helpers (`messages.stream`, `chat.completions.stream`):
    its SSE decoder, its stream class and its accumulator of the final message."""
    with serve(stream, piece) as server:
        try:
            return asyncio.run(_anthropic_sdk(server.url) if kind == "anthropic" else _openai_sdk(server.url))
        except Exception as err:  # the SDK's own error classes
            return Outcome(failure="error", notes=(f"{type(err).__name__}: {err}",))


async def _anthropic_sdk(url: str) -> Outcome:
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(api_key="k", base_url=url, max_retries=0, http_client=sdk_http_client("anthropic"))
    try:
        async with client.messages.stream(model="claude-oracle", max_tokens=64,
                                          messages=[{"role": "user", "content": "hi"}]) as stream:
            message = await stream.get_final_message()
    finally:
        await client.close()
    if message.stop_reason is None:
        return Outcome(failure="incomplete")
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = tuple((block.id, block.name, block.input if message.stop_reason != "max_tokens"
                   or index != len(message.content) - 1 else CUT)
                  for index, block in enumerate(message.content) if block.type == "tool_use")
    usage = message.usage
    read, write = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
    thinking = tuple((block.type, block.thinking, block.signature) if block.type == "thinking"
                     else (block.type, block.data, "")
                     for block in message.content if block.type in ("thinking", "redacted_thinking"))
    details = usage.output_tokens_details
    return Outcome(text, calls, (usage.input_tokens + read + write, usage.output_tokens, read, write),
                   message.stop_reason, thinking, details.thinking_tokens if details is not None else None)


async def _openai_sdk(url: str) -> Outcome:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="k", base_url=url + "/v1", max_retries=0, http_client=sdk_http_client("openai"))
    try:
        async with client.chat.completions.stream(model="gpt-oracle",
                                                  messages=[{"role": "user", "content": "hi"}]) as stream:
            async for _ in stream:
                pass
            completion = stream.current_completion_snapshot  # (the final one would parse the content)
    finally:
        await client.close()
    choice = next(c for c in completion.choices if c.index == 0)
    if choice.finish_reason is None:
        return Outcome(failure="incomplete")
    message = choice.message
    calls = []
    for call in message.tool_calls or ():
        try:
            arguments = json.loads(call.function.arguments)
        except ValueError:
            arguments = CUT
        calls.append((call.id, call.function.name, arguments))
    usage = completion.usage
    prompt = usage.prompt_tokens if usage else 0
    cached = (usage.prompt_tokens_details.cached_tokens or 0) if usage and usage.prompt_tokens_details else 0
    return Outcome((message.content or "") + (message.refusal or ""), tuple(calls),
                   (prompt, usage.completion_tokens if usage else 0, cached, 0),
                   "refusal" if message.refusal else choice.finish_reason)
