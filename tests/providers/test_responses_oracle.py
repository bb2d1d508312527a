"""The openai SDK as the oracle of the Responses wire (`openai_responses.py`).

Requests: the same conversation (reasoning items, parallel calls, tool results, images), sent
through our provider and through `client.responses.create(...)` given the parameters our body
holds, arrives at a loopback server as the same bytes, at the same path, with the same headers
that matter. Streams: the same event stream (responses_streams.py, in the API's shapes), served
whole, byte by byte or in pieces, read by the SDK's stream classes and by our provider, comes
to the same text, calls, reasoning items, usage and stop, or fails alike.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from recursive_cli.core.messages import Image, Message, Reasoning
from recursive_cli.core.provider import Completion, NullHooks, ProviderError
from recursive_cli.providers.openai_responses import OpenAIResponsesProvider

from .conversations import KEY, TOOLS, conversation
from .oracle import CUT, first_attempt, sdk_http_client, sent_body
from .responses_streams import RESPONSES
from .test_stream_oracle import FIXTURES_ENV
from .wireserver import Answer, Received, WireServer

# (the SDKs' import cost: see test_wire_oracle.py)
pytestmark = pytest.mark.xdist_group("openai-anthropic-sdks")

OK_RESPONSE = {"id": "resp_ok", "object": "response", "created_at": 1, "model": "m", "status": "completed",
               "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
               "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
               "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                         "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens_details": {"reasoning_tokens": 0}}}
OK_STREAM = (f"event: response.completed\ndata: "
             f"{json.dumps({'type': 'response.completed', 'sequence_number': 0, 'response': OK_RESPONSE})}\n\n")
COMPARED = ("content-type", "accept", "authorization", "content-length", "openai-organization", "openai-project")


def with_reasoning(messages: list[Message]) -> list[Message]:
    """`messages` with reasoning items on every other assistant message (one without a summary,
    one without encrypted content, which cannot be sent back) and an image on the first prompt."""
    out: list[Message] = []
    for index, message in enumerate(messages):
        if message.role == "assistant" and index % 2:
            reasoning = (Reasoning(kind="reasoning", id=f"rs_{index}", text=f"Thinking {index} ☕",
                                   signature=f"gAAAA-{index}"),
                         Reasoning(kind="reasoning", id=f"rs_{index}b", signature=f"gAAAA-{index}b"),
                         Reasoning(kind="reasoning", id=f"rs_{index}c", text="not sendable"))
            message = replace(message, reasoning=reasoning)
        if message.role == "user" and not any(m.role == "user" for m in out):
            message = replace(message, images=(Image(media_type="image/png", data="iVBORw0KGgo="),))
        out.append(message)
    return out


def ours(base: str, messages: list[Message], stream: bool, **options: Any) -> bytes:
    async def main() -> bytes:
        return await sent_body(OpenAIResponsesProvider(options.pop("model", "gpt-5-oracle"), KEY, base + "/v1",
                                                       stream=stream, **options), messages, TOOLS)
    return asyncio.run(main())


def through_sdk(base: str, params: dict[str, Any]) -> None:
    async def main() -> None:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(api_key=KEY, base_url=base + "/v1", max_retries=0, timeout=30.0,
                             http_client=sdk_http_client("openai"))
        try:
            result = await client.responses.create(**params)
            if params.get("stream"):
                async for _ in result:  # type: ignore[union-attr]
                    pass
        finally:
            await client.close()
    asyncio.run(main())


def both(messages: list[Message], stream: bool, **options: Any) -> tuple[Received, Received]:
    """(the SDK's request, ours) for the same conversation."""
    answer = (Answer(body=OK_STREAM.encode(), content_type="text/event-stream") if stream
              else Answer(body=json.dumps(OK_RESPONSE).encode()))
    with WireServer(answer) as server:
        body = ours(server.url, messages, stream, **options)
        through_sdk(server.url, json.loads(body))
    ours_request, sdk_request = server.requests
    assert ours_request.body == body
    return sdk_request, ours_request


def relevant(request: Received) -> dict[str, str]:
    return {name: value for name, value in request.headers.items() if name in COMPARED}


OPTIONS = [{}, {"max_tokens": 512, "effort": "high", "session_id": "0f3c-session"},
           {"effort": "max"}, {"session_id": "s-☕", "model": "gpt-4.1-mini"}]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("seed", range(4))
def test_the_sdk_sends_our_body_byte_for_byte(stream: bool, seed: int) -> None:
    messages = with_reasoning(conversation(seed))
    for cut in (2, len(messages) // 2, len(messages)):
        sdk, ours_request = both(messages[:cut], stream, **OPTIONS[seed])
        assert ours_request.body == sdk.body
        assert ours_request.path == sdk.path == "/v1/responses"
        assert relevant(ours_request) == relevant(sdk)


def test_the_body_says_what_the_wire_promises() -> None:
    """Stateless, reasoning asked for and sent back without its id, calls and results as items."""
    messages = with_reasoning(conversation(1, 8))
    sdk, _ = both(messages, True, effort="max", session_id="sess-1")
    body = json.loads(sdk.body)
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "xhigh", "summary": "auto"}
    assert body["prompt_cache_key"] == "sess-1"
    kinds = {item.get("type", "message") for item in body["input"]}
    assert {"reasoning", "function_call", "function_call_output", "message"} <= kinds
    reasoning = [item for item in body["input"] if item.get("type") == "reasoning"]
    assert reasoning and all("id" not in item and item["encrypted_content"] for item in reasoning)
    assert {"type": "summary_text", "text": "Thinking 3 ☕"} in [s for item in reasoning for s in item["summary"]]
    assert body["input"][1]["content"][-1] == {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    assert body["tools"][0] == {"type": "function", "name": TOOLS[0].name, "description": TOOLS[0].description,
                                "parameters": TOOLS[0].parameters, "strict": False}


def test_models_that_do_not_reason_are_not_asked_for_reasoning() -> None:
    sdk, _ = both(conversation(0, 2), True, model="gpt-4.1-mini")
    assert "include" not in json.loads(sdk.body) and "reasoning" not in json.loads(sdk.body)


# -- streams --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    text: str = ""
    calls: tuple[tuple[str, str, Any], ...] = ()
    reasoning: tuple[tuple[str, str, str | None], ...] = ()  # id, summary, encrypted content
    usage: tuple[int, int, int, int] = (0, 0, 0, 0)  # input, output, cached, reasoning
    stop: str | None = None
    failure: str | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return CUT


def read_ours(data: bytes, piece: int) -> Outcome:
    with WireServer(Answer(200, data, "text/event-stream", piece=piece)) as server:
        async def main() -> Any:
            return await first_attempt(OpenAIResponsesProvider("gpt-5-oracle", "k", server.url + "/v1"))
        try:
            completion = asyncio.run(main())
        except ProviderError as err:
            incomplete = "without a response.completed" in err.reason
            return Outcome(failure="incomplete" if incomplete else "error", notes=(err.reason,))
    return _our_outcome(completion)


def _our_outcome(completion: Completion) -> Outcome:
    message, usage = completion.message, completion.usage
    return Outcome(message.content, tuple((c.id, c.name, _arguments(c.arguments)) for c in message.tool_calls),
                   tuple((r.id or "", r.text, r.signature) for r in message.reasoning or ()),
                   (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.reasoning_tokens or 0),
                   completion.reason)


def read_sdk(data: bytes, piece: int) -> Outcome:
    """The stream read by `client.responses.create(stream=True)`: the SDK's SSE decoder and its
    typed events; the outcome is the final event's response object, as the SDK types it."""
    with WireServer(Answer(200, data, "text/event-stream", piece=piece)) as server:
        async def main() -> Outcome:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0,
                                 http_client=sdk_http_client("openai"))
            final: Any = None
            try:
                async for event in await client.responses.create(model="gpt-5-oracle", input="hi", stream=True):
                    if event.type in ("error", "response.failed"):
                        return Outcome(failure="error", notes=(event.type,))
                    if event.type in ("response.completed", "response.incomplete"):
                        final = event.response
            finally:
                await client.close()
            return _sdk_outcome(final)
        return asyncio.run(main())


def _sdk_outcome(response: Any) -> Outcome:
    if response is None:
        return Outcome(failure="incomplete")
    refusal = "".join(part.refusal for item in response.output if item.type == "message"
                      for part in item.content if part.type == "refusal")
    calls = tuple((item.call_id, item.name, _arguments(item.arguments))
                  for item in response.output if item.type == "function_call")
    reasoning = tuple((item.id, "\n\n".join(s.text for s in item.summary), item.encrypted_content)
                      for item in response.output if item.type == "reasoning")
    usage = response.usage
    stop = ("refusal" if refusal else response.incomplete_details.reason if response.status == "incomplete"
            else response.status)
    return Outcome(response.output_text + refusal, calls, reasoning,
                   (usage.input_tokens, usage.output_tokens, usage.input_tokens_details.cached_tokens,
                    usage.output_tokens_details.reasoning_tokens), stop)


@pytest.mark.parametrize("name", list(RESPONSES))
@pytest.mark.parametrize("piece", [0, 1, 7], ids=["whole", "bytewise", "pieces"])
def test_our_streams_read_as_the_sdk_reads_them(name: str, piece: int) -> None:
    data = RESPONSES[name].encode()
    expected = read_sdk(data, piece)
    assert read_ours(data, piece) == expected, expected.notes


def test_the_cases_cover_what_they_are_meant_to() -> None:
    outcomes = {name: read_ours(text.encode(), 0) for name, text in RESPONSES.items()}
    assert outcomes["text"] == Outcome("Hello, world.", usage=(1200, 96, 1024, 64), stop="completed")
    two = outcomes["reasoning-then-two-calls"]
    assert two.calls == (("call_a", "run_shell", {"command": "pytest -q"}), ("call_b", "read_file", {"path": "src/a.py"}))
    assert two.reasoning == (("rs_1", "Run the tests first.", "gAAAAB-opaque-1"),)
    assert outcomes["incomplete-mid-call"].calls[0][2] == CUT
    assert outcomes["incomplete-mid-call"].stop == "max_output_tokens"
    assert outcomes["refusal"].stop == "refusal" and outcomes["refusal"].text == "I can't help with that."
    assert outcomes["failed"].failure == outcomes["error-event"].failure == "error"
    assert outcomes["ends-without-completed"].failure == "incomplete"
    assert outcomes["keepalives-and-crlf"].text == "two"
    assert outcomes["data-only-and-done"].text == "plain"
    assert outcomes["done-without-completed"].failure == "incomplete"


def final_response(stream: str) -> dict[str, Any] | None:
    """The response object the stream ends with (completed or incomplete), if any."""
    last = json.loads(stream.replace("data: [DONE]", "").rstrip().rpartition("data: ")[2])
    return last.get("response") if last["type"] in ("response.completed", "response.incomplete") else None


WHOLE = [name for name, text in RESPONSES.items() if final_response(text) is not None]


@pytest.mark.parametrize("name", WHOLE)
def test_our_whole_responses_read_as_the_sdk_reads_them(name: str) -> None:
    """The same response object, not streamed: `responses.create(...)` and our provider agree."""
    data = json.dumps(final_response(RESPONSES[name])).encode()
    with WireServer(Answer(body=data)) as server:
        async def both_read() -> tuple[Outcome, Outcome]:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0,
                                 http_client=sdk_http_client("openai"))
            provider = OpenAIResponsesProvider("gpt-5-oracle", "k", server.url + "/v1", stream=False)
            try:
                sdk = _sdk_outcome(await client.responses.create(model="gpt-5-oracle", input="hi"))
                completion = await provider._attempt(provider.request_body([Message.user("hi")], []), NullHooks())
            finally:
                await client.close()
                await provider.aclose()
            return sdk, _our_outcome(completion)
        sdk, mine = asyncio.run(both_read())
    assert mine == sdk


@pytest.mark.skipif(not os.environ.get(FIXTURES_ENV), reason=f"{FIXTURES_ENV} names no folder of SDK fixtures")
def test_the_sdks_recorded_responses_streams() -> None:
    """Any Responses stream under RECURSIVE_SDK_FIXTURES (as for the other wires: see
    test_stream_oracle.py) reads alike; openai-python records none today, hence our own."""
    root = Path(os.environ[FIXTURES_ENV])
    found = [p for p in sorted(root.rglob("*")) if p.is_file() and b'"type":"response.' in
             p.read_bytes()[:4096].replace(b'": "', b'":"')]
    if not found:
        pytest.skip(f"no Responses stream under {root}")
    differing = [f"{path.relative_to(root)} (pieces of {piece or 'all'})" for path in found for piece in (0, 7)
                 if read_ours(path.read_bytes(), piece) != read_sdk(path.read_bytes(), piece)]
    assert not differing, "\n".join(differing)
