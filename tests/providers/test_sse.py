"""The event-stream decoder: the same events however the bytes are split, every line ending,
and the specification's corners, checked against the SDKs' own decoders."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from recursive_cli.net.sse import SseDecoder

from . import streams

pytestmark = pytest.mark.xdist_group("openai-anthropic-sdks")  # (see test_wire_oracle.py)

STREAMS = {
    "lf": b"event: a\ndata: one\n\ndata: two\ndata: lines\n\n",
    "crlf": b"event: a\r\ndata: one\r\n\r\ndata: two\r\ndata: lines\r\n\r\n",
    "cr": b"event: a\rdata: one\r\rdata: two\rdata: lines\r\r",
    "mixed": b"event: a\r\ndata: one\n\r\ndata: two\rdata: lines\r\n\n",
    "comments-and-unknown-fields": b": hello\n\nfoo: bar\n\nevent: x\n: inside\ndata: y\n\n",
    "no-space-and-empty-values": b"data:tight\n\ndata\n\nevent:\ndata: z\n\n",
    "last-event-unfinished": b"data: whole\n\ndata: never dispatched\n",
    "id-kept-between-events": b"id: 7\ndata: a\n\n\nretry: 100\n\nretry: soon\n\n",
    "non-ascii": "data: wörld ✓ 😀\n\n".encode(),
    "anthropic-stream": streams.ANTHROPIC["thinking-then-two-calls"].encode(),
    "openai-stream": streams.OPENAI["comments-crlf-and-multiline-data"].encode(),
}


def ours(chunks: list[bytes]) -> list[tuple[str | None, str]]:
    decoder = SseDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)]


def sdks(chunks: list[bytes]) -> list[list[tuple[str | None, str]]]:
    """What each SDK's decoder makes of the same pieces."""
    from anthropic._streaming import SSEDecoder as AnthropicDecoder
    from openai._streaming import SSEDecoder as OpenAIDecoder

    async def pieces() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def read(decoder: OpenAIDecoder | AnthropicDecoder) -> list[tuple[str | None, str]]:
        return [(sse.event, sse.data) async for sse in decoder.aiter_bytes(pieces())]

    return [asyncio.run(read(OpenAIDecoder())), asyncio.run(read(AnthropicDecoder()))]


def splits(data: bytes) -> list[list[bytes]]:
    """The whole; byte by byte; and cut in two at every position."""
    out = [[data], [data[i:i + 1] for i in range(len(data))]]
    out += [[data[:i], data[i:]] for i in range(1, len(data))]
    return out


@pytest.mark.parametrize("name", list(STREAMS))
def test_every_split_gives_the_events_of_the_whole(name: str) -> None:
    data = STREAMS[name]
    whole = ours([data])
    for chunks in splits(data) if len(data) < 600 else [[data], [data[i:i + 1] for i in range(len(data))]]:
        assert ours(chunks) == whole, chunks


@pytest.mark.parametrize("name", list(STREAMS))
def test_the_events_are_the_sdks_events(name: str) -> None:
    data = STREAMS[name]
    for chunks in ([data], [data[i:i + 3] for i in range(0, len(data), 3)]):
        openai_events, anthropic_events = sdks(chunks)
        assert ours(chunks) == openai_events == anthropic_events


def test_what_the_events_are() -> None:
    assert ours([STREAMS["lf"]]) == [("a", "one"), (None, "two\nlines")]
    assert ours([STREAMS["comments-and-unknown-fields"]]) == [("x", "y")]
    assert ours([STREAMS["no-space-and-empty-values"]]) == [(None, "tight"), (None, ""), (None, "z")]
    assert ours([STREAMS["last-event-unfinished"]]) == [(None, "whole")]
    assert ours([STREAMS["id-kept-between-events"]]) == [(None, "a"), (None, ""), (None, ""), (None, "")]


def test_a_byte_that_is_not_utf8_is_an_error() -> None:
    with pytest.raises(UnicodeDecodeError):
        ours([b"data: \xff\n\n"])
