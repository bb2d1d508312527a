"""The pieces of our client that a hostile server leans on (issue 36), one by one: a failed
attempt leaves nothing reachable, gzip inflates a step at a time, lines and events and whole
bodies stop at the cap, keep-alives do not keep a stream alive, redirects keep credentials at
home, no retry outlives the deadline, and the answer parsers take any JSON without raising
anything but a ProviderError. (The same defects through the CLI: tests/reliability/
test_hostile_http*.py.)"""

from __future__ import annotations

import asyncio
import gc
import json
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from recursive_cli.core.messages import Message
from recursive_cli.core.provider import Completion, DeadlineError, NullHooks, ProviderError, RetryNotice
from recursive_cli.net import http1, sse
from recursive_cli.net.http_client import ApiClient
from recursive_cli.providers.anthropic_provider import AnthropicProvider
from recursive_cli.providers.http_base import HttpProvider
from recursive_cli.providers.openai_provider import OpenAIProvider
from recursive_cli.providers.retry import call_with_retries, forget_frames

from . import streams
from .hostile import MIB, HostileServer, cut_line, gzip_bomb, gzipped_newlines, trickle


class _Watching(NullHooks):
    """Hooks that note the memory still allocated when each retry is announced."""

    def __init__(self) -> None:
        self.held: list[int] = []

    def on_retry(self, notice: RetryNotice) -> None:
        self.held.append(tracemalloc.get_traced_memory()[0])


def test_a_failed_attempt_leaves_nothing_reachable() -> None:
    """Streams cut off 16 MiB into a line, six times, with the collector off (a cycle would
    stay): when each retry is announced the memory is back where it was, not one attempt's
    buffers higher per attempt (as it was: 16, 32, 48… MiB)."""
    async def main(url: str, hooks: _Watching) -> None:
        provider = OpenAIProvider("m", "k", url + "/v1")
        try:
            await provider.complete([Message.user("hi")], [], hooks)
        finally:
            await provider.aclose()

    hooks = _Watching()
    with HostileServer(cut_line(16 * MIB)) as server:
        gc.collect()
        gc.disable()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            with pytest.raises(ProviderError, match="before the end of the answer"):
                asyncio.run(main(server.url, hooks))
            after = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
            gc.enable()
    assert len(hooks.held) == 5
    assert max(hooks.held) - before < 4 * MIB, [(held - before) // MIB for held in hooks.held]
    assert after - before < 4 * MIB


def test_forget_frames_drops_the_traceback_and_the_chain() -> None:
    def fail() -> None:
        buffer = b"x" * 1000  # noqa: F841 (held by the frame, so by the traceback)
        raise ValueError("inner")

    try:
        try:
            fail()
        except ValueError as inner:
            raise ProviderError("outer") from inner
    except ProviderError as err:
        kept = forget_frames(err)
    assert kept.__traceback__ is None and kept.__cause__ is None and kept.__context__ is None


def test_gzip_is_inflated_a_step_at_a_time() -> None:
    bomb = gzipped_newlines(64 * MIB)  # about 64 KB
    inflater = http1.content_decoder("gzip")
    assert inflater is not None
    tracemalloc.start()
    try:
        sizes = [len(piece) for start in range(0, len(bomb), 16384) for piece in inflater.pieces(bomb[start:start + 16384])]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sum(sizes) == 64 * MIB and max(sizes) <= http1.INFLATE_STEP
    assert peak < 4 * MIB  # (the old decoder made 16 MiB of a 16 KB read at once)


def test_corrupt_gzip_is_a_protocol_error() -> None:
    inflater = http1.content_decoder("gzip")
    assert inflater is not None
    with pytest.raises(http1.HttpProtocolError, match="gzip content is corrupt"):
        list(inflater.pieces(b"this is not gzip"))


def test_a_whole_body_stops_at_the_cap() -> None:
    async def main(url: str) -> object:
        client = ApiClient(url, {}, 5.0)
        try:
            return await client.post_json(client.url("v1/x"), b"{}")
        finally:
            await client.aclose()

    with HostileServer(gzip_bomb(80 * MIB, "application/json")) as server:
        with pytest.raises(http1.TooLarge, match="the answer's body is over 64 MiB"):
            asyncio.run(main(server.url))


def test_a_line_or_an_event_over_the_cap_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "LINE_CAP", 1024)
    decoder = sse.SseDecoder()
    assert decoder.feed(b"data: " + b"x" * 1000 + b"\n\n") == [(None, "x" * 1000)]  # under the cap: read
    with pytest.raises(sse.StreamTooLongError, match="a line of the event stream"):
        for _ in range(3):
            sse.SseDecoder().feed(b"data: " + b"x" * 1100)  # in pieces, no line end
    with pytest.raises(sse.StreamTooLongError, match="a line of the event stream"):
        sse.SseDecoder().feed(b"data: " + b"x" * 1100 + b"\n\n")  # whole, with its line end
    with pytest.raises(sse.StreamTooLongError, match="an event of the event stream"):
        sse.SseDecoder().feed(b"data: " + b"x" * 600 + b"\ndata: " + b"y" * 600 + b"\n")


def test_blank_lines_alone_make_no_events_and_cost_little() -> None:
    decoder = sse.SseDecoder()
    assert decoder.feed(b"\n" * (8 * MIB)) == []
    assert decoder.feed(b"data: one\n\n\n\r\n\r\n") == [(None, "one")]


def test_keepalives_alone_time_a_stream_out() -> None:
    async def main(url: str) -> list[Any]:
        client = ApiClient(url, {}, 5.0)
        try:
            async with client.post_events(client.url("v1/x"), b"{}", idle=0.5) as events:
                return [event async for event in events]
        finally:
            await client.aclose()

    with HostileServer(trickle(0.05)) as server:
        started = time.monotonic()
        with pytest.raises(http1.RequestTimeout, match="without an event"):
            asyncio.run(main(server.url))
        assert time.monotonic() - started < 10  # it ended


HEADERS = {"Authorization": "Bearer k", "x-api-key": "k", "X-Team-Token": "t", "Cookie": "s=1",
           "Accept": "application/json", "Content-Type": "application/json", "User-Agent": "recursive-cli",
           "anthropic-version": "2026-10-21"}
PROTOCOL = {"Accept", "Content-Type", "User-Agent", "anthropic-version"}


@pytest.mark.parametrize(("url", "location", "kept"), [
    ("https://api.example/v1/messages", "/v2/messages", set(HEADERS)),  # the same origin
    ("https://api.example/v1/messages", "https://api.example:8443/v1", PROTOCOL),  # another port
    ("https://api.example/v1/messages", "https://other.example/v1", PROTOCOL),  # another host
    ("http://api.example/v1/messages", "https://api.example/v1", PROTOCOL),  # another scheme, even upwards
])
def test_a_redirect_carries_credentials_only_to_the_same_origin(url: str, location: str, kept: set[str]) -> None:
    hop = http1.Hop("POST", url, b"{}", HEADERS).redirected(307, location)
    assert (hop.method, hop.body) == ("POST", b"{}")
    assert set(hop.headers) == kept


def test_a_see_other_is_a_get_without_the_body() -> None:
    hop = http1.Hop("POST", "https://a.example/x", b"{}", HEADERS).redirected(303, "/y")
    assert (hop.method, hop.body, hop.url) == ("GET", b"", "https://a.example/y")
    assert "Content-Type" not in hop.headers and hop.headers["Authorization"] == "Bearer k"


@pytest.mark.parametrize(("location", "why"), [
    ("http://a.example/x", "it would send the request unencrypted"),
    ("ftp://a.example/x", "unsupported scheme 'ftp'"),
])
def test_redirects_that_are_refused(location: str, why: str) -> None:
    with pytest.raises(http1.RedirectRefused, match=why):
        http1.Hop("POST", "https://a.example/x", b"{}", HEADERS).redirected(307, location)


def test_no_retry_outlives_the_deadline() -> None:
    slept: list[float] = []

    async def busy() -> None:
        raise ProviderError("HTTP 503 from there: busy", status=503, retryable=True, retry_after=3.0)

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def main(deadline: float) -> None:
        await call_with_retries(busy, NullHooks(), deadline=deadline, sleep=sleep)

    with pytest.raises(DeadlineError, match="no time left to retry HTTP 503 from there: busy"):
        asyncio.run(main(time.monotonic() + 1.0))
    assert slept == []  # (the wait would have ended past the deadline: not begun)
    with pytest.raises(ProviderError, match="busy") as last:
        asyncio.run(main(time.monotonic() + 100.0))
    assert not isinstance(last.value, DeadlineError) and slept == [3.0] * 5  # room for every retry


# -- any JSON in place of any field ---------------------------------------------------------------

ODD: list[Any] = [None, True, -1, 2.5, 1e308, "x", "", [], {}, [1], {"a": 1}, [[]]]
OPENAI_WHOLE = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "refusal": None,
                                                     "tool_calls": [{"id": "c1", "type": "function",
                                                                     "function": {"name": "f", "arguments": "{}"}}]},
                             "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 1}}}
ANTHROPIC_WHOLE = {"content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t1", "name": "f",
                                                                "input": {"a": 1}}],
                   "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 2,
                                                        "cache_read_input_tokens": 1}}


def variants(value: Any) -> Iterator[Any]:
    """`value` with one of its parts (itself included) replaced by each odd value."""
    yield from ODD
    if isinstance(value, dict):
        for key, part in value.items():
            for odd in variants(part):
                yield {**value, key: odd}
    elif isinstance(value, list):
        for index, part in enumerate(value):
            for odd in variants(part):
                yield [*value[:index], odd, *value[index + 1:]]


def providers() -> list[HttpProvider]:
    return [OpenAIProvider("m", "k", "http://127.0.0.1:9/v1"), AnthropicProvider("m", "k", "http://127.0.0.1:9")]


def read_or_refuse(read: Any) -> None:
    """`read()` gives a Completion or raises a ProviderError, nothing else."""
    try:
        assert isinstance(read(), Completion)
    except ProviderError:
        pass


@pytest.mark.parametrize("provider", providers(), ids=["openai", "anthropic"])
def test_any_whole_answer_is_a_completion_or_a_provider_error(provider: HttpProvider) -> None:
    whole = OPENAI_WHOLE if isinstance(provider, OpenAIProvider) else ANTHROPIC_WHOLE
    for data in variants(whole):
        read_or_refuse(lambda data=data: provider.parse_whole(data, NullHooks()))


@pytest.mark.parametrize("provider", providers(), ids=["openai", "anthropic"])
def test_any_stream_event_is_folded_or_a_provider_error(provider: HttpProvider) -> None:
    openai = isinstance(provider, OpenAIProvider)
    names = ("text", "tool-calls-in-pieces") if openai else ("text", "tool-use-partial-json")
    for name in names:
        text = (streams.OPENAI if openai else streams.ANTHROPIC)[name]
        events = [event for event in sse.SseDecoder().feed(text.encode()) if event[1] and event[1] != "[DONE]"]
        for position, (kind, data) in enumerate(events):
            for odd in variants(json.loads(data)):
                changed = [*events[:position], (kind, json.dumps(odd)), *events[position + 1:]]
                read_or_refuse(lambda changed=changed: fold(provider, changed))


def fold(provider: HttpProvider, events: list[tuple[str | None, str]]) -> Completion:
    state = provider.new_stream()
    for event in events:
        if not state.add(event, NullHooks()):
            break
    return state.completion()
