"""Our own client on the run path: what only our client does (it no longer inherits it from an
SDK) is seen working from the outside. (That a real run imports no SDK: tests/test_startup_budget.py.)"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from recursive_cli.core.messages import Message
from recursive_cli.core.provider import NullHooks, ProviderError
from recursive_cli.providers.anthropic_provider import AnthropicProvider
from recursive_cli.providers.openai_provider import OpenAIProvider

from . import streams
from .wireserver import Answer, WireServer


def run_provider(kind: str, url: str, **options: Any) -> Any:
    async def main() -> Any:
        provider: Any = (AnthropicProvider("claude-x", "k", url, **options) if kind == "anthropic"
                         else OpenAIProvider("gpt-x", "k", url + "/v1", **options))
        try:
            return await provider.complete([Message.user("hi")], [], NullHooks())
        finally:
            await provider.aclose()
    return asyncio.run(main())


def test_after_done_the_rest_of_a_stream_is_not_waited_for() -> None:
    """A server that holds the connection open after `data: [DONE]` does not hold the answer
    (the SDK reads on for 0.1 s at most, to keep the connection, and so do we)."""
    data = streams.OPENAI["text"].encode()
    with WireServer(Answer(200, data, "text/event-stream", piece=64, linger=20)) as server:
        started = time.monotonic()
        completion = run_provider("openai", server.url)
        assert time.monotonic() - started < 10  # not the 20 s the server lingers
    assert completion.message.content == "Hello, wörld ✓"


def test_an_error_event_inside_an_anthropic_stream_is_retried_then_reported() -> None:
    data = streams.ANTHROPIC["overloaded-mid-stream"].encode()
    with WireServer(Answer(200, data, "text/event-stream", piece=16)) as server:
        with pytest.raises(ProviderError) as info:
            run_provider("anthropic", server.url)
        assert len(server.requests) == 6
    assert info.value.status == 529 and info.value.retryable
    assert info.value.reason == f"error from {server.url} during the stream: overloaded_error (Overloaded)"


def test_an_anthropic_stream_with_an_unknown_error_type_is_not_retried() -> None:
    data = streams.sse({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}, "error")
    with WireServer(Answer(200, data.encode(), "text/event-stream", piece=16)) as server:
        with pytest.raises(ProviderError, match="invalid_request_error"):
            run_provider("anthropic", server.url)
        assert len(server.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_whole_answer_that_is_not_json_is_retried_as_malformed(kind: str) -> None:
    with WireServer(Answer(200, b"<html>a proxy page</html>", "text/html")) as server:
        with pytest.raises(ProviderError, match="malformed response from .*: no (content|choices) in the response"):
            run_provider(kind, server.url, stream=False)
        assert len(server.requests) == 6


@pytest.mark.parametrize(("kind", "body", "message"), [
    ("openai", b'{"error": {"type": "server_error"}}', "Error code: 502"),
    ("anthropic", b'{"type": "error", "error": {"type": "api_error"}}',
     "Error code: 502 - {'type': 'error', 'error': {'type': 'api_error'}}"),
    ("openai", b"upstream connect error", "upstream connect error"),
    ("anthropic", b"", "Error code: 502"),
])
def test_an_error_body_without_a_message_is_worded_as_the_sdk_worded_it(kind: str, body: bytes,
                                                                       message: str) -> None:
    with WireServer(Answer(502, body, "application/json", headers={"x-should-retry": "false"})) as server:
        with pytest.raises(ProviderError) as info:
            run_provider(kind, server.url)
    assert info.value.reason == f"HTTP 502 from {server.url}{'/v1' if kind == 'openai' else ''}: bad gateway ({message})"


def test_gzip_answers_are_read() -> None:
    import gzip

    body = json.dumps({"id": "c", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "unzipped"}, "finish_reason": "stop"}]}).encode()
    with WireServer(Answer(200, gzip.compress(body), headers={"Content-Encoding": "gzip"})) as server:
        assert run_provider("openai", server.url, stream=False).message.content == "unzipped"
    assert "gzip" in server.requests[0].headers["accept-encoding"]
