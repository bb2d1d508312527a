"""Anthropic's Messages API, through our own client (`http_client.py`; the `anthropic` SDK is
the tests' oracle for the body, the headers, the stream and the retry rules).

Request shape: system messages are lifted out into `system`; consecutive messages that map to
the same Anthropic role are merged into one message, which groups consecutive tool results
into one user message of `tool_result` blocks; prompt-caching breakpoints go on the system
block, on the last block of the last message and on that of the user message before the last
reply (where the request before ended: see `_Turns`).

Hot path: as in the OpenAI provider, each immutable Message is encoded once (its content
blocks as JSON bytes, cached with `Message.wire`), and so is each merged message: a run of
same-role messages is joined once, when it is no longer one of the last three (`_Turns`), so a
step joins only those three runs and copies the bytes kept so far. The body's keys are in the
order the SDK's `messages.create` writes them, so the two send the same bytes.

Thinking (issue 30; `anthropic_thinking.py`): the `thinking` and `output_config` a request
asks for come from `--thinking-budget` and `--effort`; every `thinking` and `redacted_thinking`
block of a reply is kept (`Message.reasoning`, signature included) and sent back first in its
message, as it came. No temperature is ever sent (the API refuses one with thinking).

Stream: as the SDK's stream reads it, an event without an `event:` name, a `ping` and an
event without data are skipped; an `error` event ends the stream with the error it carries
(retried when it is a transient one: overloaded, rate limited, an API error, a timeout).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ..core.images import image_bytes_over
from ..core.messages import Image, Message, Reasoning, ToolCall, Usage
from ..core.provider import Completion, ProviderError, ProviderHooks, StopKind, ToolSpec, thinking_hook
from ..net.http_client import HttpStatusError, parse_json
from ..net.sse import Event
from .anthropic_thinking import read_block, reasoning_block, thinking_request
from .http_base import HttpProvider, as_count, as_dict, as_key, as_text, dumps, malformed, served_by
from .retry import ANTHROPIC_RULES, http_error, one_line
from .wire_cache import WirePrefix

WIRE_KEY = "anthropic"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_TIMEOUT = 600.0
DEFAULT_BASE_URL = "https://api.anthropic.com"
PATH = "/v1/messages"
# The API version the SDK (2.14) asks for; tests/providers checks that the SDK still says so.
API_VERSION = "2026-10-21"
# Extra headers, one `Name: value` a line, as the SDK (and Claude Code) read them.
CUSTOM_HEADERS_ENV = "ANTHROPIC_CUSTOM_HEADERS"
# The API rejects empty text blocks; an empty turn still has to say something.
EMPTY_TEXT = "(no content)"
# A tool_use block's input must be a JSON object; arguments that were not one are kept, wrapped.
INVALID_ARGUMENTS_KEY = "_invalid_json_arguments"

_CACHE_CONTROL = b',"cache_control":{"type":"ephemeral"}}'
_ENVELOPE = len(b'{"role":"","content":[]},')  # one message around its blocks, with its comma
# Any other stop_reason (`pause_turn`, none at all) leaves the reply not known to be whole.
_STOP: dict[str, StopKind] = {"end_turn": "end", "stop_sequence": "end", "tool_use": "tool_calls",
                              "max_tokens": "length", "model_context_window_exceeded": "length",
                              "refusal": "refusal"}
# Error events inside a 200 stream carry only a type; these are the transient ones.
_STREAM_ERROR_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500,
                        "timeout_error": 504}
_THINKING_WORDS = re.compile(r"thinking|effort|budget_tokens|output_config", re.IGNORECASE)

Blocks = tuple[bytes, ...]
Wire = tuple[str, Blocks]


def without_v1(base_url: str | None) -> str | None:
    """`https://host/v1` and `https://host` both name the API: the Messages path already starts
    with `/v1`, and the OpenAI-style spelling ending in `/v1` is what most examples show."""
    if base_url is None:
        return None
    trimmed = base_url.rstrip("/")
    return trimmed.removesuffix("/v1") if trimmed.endswith("/v1") else base_url


class AnthropicProvider(HttpProvider):
    """A ChatProvider for Anthropic's Messages API."""

    name = "anthropic"
    path = PATH
    default_base_url = DEFAULT_BASE_URL
    rules = ANTHROPIC_RULES

    def __init__(self, model: str, api_key: str | None, base_url: str | None, stream: bool = True,
                 max_tokens: int | None = DEFAULT_MAX_TOKENS, *, timeout: float = DEFAULT_TIMEOUT,
                 thinking_budget: int | None = None, effort: str | None = None) -> None:
        """Without `api_key`, `base_url` must name the (keyless) server. No key, token or
        credentials file is read from anywhere else. `thinking_budget` and `effort`: see
        `thinking_request`."""
        if not api_key and not base_url:
            raise ProviderError("no API key for the anthropic provider: "
                                "set RECURSIVE_API_KEY or ANTHROPIC_API_KEY")
        thinking = thinking_request(model, thinking_budget, effort)
        # What asked for thinking, named in a refusal of it (a model that takes no such thinking).
        self._asked_by = " and ".join(f"--{flag} {value}" for flag, value in
                                      (("thinking-budget", thinking_budget), ("effort", effort)) if value)
        super().__init__(model, stream, api_key, without_v1(base_url),
                         request_headers(api_key, thinking.betas), timeout)
        tokens = str(max(int(max_tokens or DEFAULT_MAX_TOKENS), thinking.min_max_tokens)).encode()
        self._head = b'{"max_tokens":' + tokens + b',"messages":'
        # (the SDK's order: output_config after model, thinking after system)
        config = b',"output_config":' + dumps({"effort": thinking.effort}) if thinking.effort else b""
        self._model = b',"model":' + dumps(model) + config + (b',"stream":true' if stream else b"")
        self._thinking = b',"thinking":' + dumps(thinking.thinking) if thinking.thinking else b""
        self._prefix: WirePrefix[Wire] = WirePrefix(WIRE_KEY, encode_message)
        self._turns = _Turns(0)

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> bytes:
        """The JSON request body, spliced from each message's cached blocks."""
        wires = self._prefix.wires(messages)
        turns = self._turns
        if turns.generation != self._prefix.generation:
            turns = self._turns = _Turns(self._prefix.generation)
        turns.extend(wires)
        parts: list[bytes | bytearray] = [self._head, *turns.messages(), self._model]
        if turns.system:
            parts += [b',"system":', _block_list(turns.system, cache=True)]
        if self._thinking:
            parts.append(self._thinking)
        if tools:
            parts += [b',"tools":', self.encoded_tools(tools, tool_wire)]
        parts.append(b"}")
        return b"".join(parts)

    def wire_size(self, message: Message) -> int:
        """Bytes `message` adds to a request body, encoded once: its blocks and their commas, and
        the message around them (which a run of tool results shares, so this counts it high)."""
        role, blocks = message.wire(WIRE_KEY, encode_message)
        size = sum(len(block) + 1 for block in blocks) + _ENVELOPE + len(role)
        return size - image_bytes_over(message) if message.images else size  # (an image: its token cost)

    def new_stream(self) -> _StreamState:
        return _StreamState(self._url)

    def parse_whole(self, data: object, hooks: ProviderHooks) -> Completion:
        """The Completion of a whole answer; any JSON that is not one is a malformed response."""
        body = as_dict(data)
        if not isinstance(body.get("content"), list):
            _, said = _error_fields(body) if "error" in body else (None, None)
            raise malformed(self._url, "no content in the response" + (f" (it says: {one_line(said)})" if said else ""))
        content = [block for block in body["content"] if isinstance(block, dict)]
        reasoning = tuple(r for r in map(read_block, content) if r is not None)
        on_thinking = thinking_hook(hooks)
        for item in reasoning:
            if item.text and on_thinking is not None:
                on_thinking(item.text)
        text = "".join(as_text(b.get("text")) for b in content if b.get("type") == "text")
        if text:
            hooks.on_text(text)
        calls = tuple(_tool_call(b.get("id"), b.get("name"), _input_json(b.get("input")))
                      for b in content if b.get("type") == "tool_use")
        return served_by(_completion(text, calls, as_text(body.get("stop_reason")) or None,
                                     _usage(body.get("usage"), {}), reasoning), body)

    def status_error(self, err: HttpStatusError) -> ProviderError:
        """The error; a 400 about thinking or effort says which of our flags asked for it."""
        _, message = _error_fields(err.body)
        error = http_error(err.status, self._url, message or _sdk_message(err), err.headers, rules=self.rules)
        if err.status == 400 and self._asked_by and _THINKING_WORDS.search(message or ""):
            error = ProviderError(f"HTTP 400 from {self._url}: bad request ({one_line(message or '')}); "
                                  f"{self._asked_by} asked for it: this model may take "
                                  "another kind of thinking, or none", status=400)
        return error


def request_headers(api_key: str | None, betas: Sequence[str] = ()) -> dict[str, str]:
    """The headers of every request besides the common ones: the API version, the key (as the
    SDK sends it, a bearer token), the betas asked for (as the SDK's `betas=` sends them) and
    any from ANTHROPIC_CUSTOM_HEADERS, which win."""
    headers = {"anthropic-version": API_VERSION}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    for line in (os.environ.get(CUSTOM_HEADERS_ENV) or "").split("\n"):
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip()] = value.strip()
    return headers


def _sdk_message(err: HttpStatusError) -> str:
    """What the SDK's error said when the body holds no message: the body, or the status."""
    if err.body != err.text:
        return f"Error code: {err.status} - {err.body}"
    return err.text or f"Error code: {err.status}"


class _StreamState:
    """Assembles one streamed message from its events."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop: str | None = None
        self.start_usage: dict[str, Any] = {}
        self.end_usage: dict[str, Any] = {}
        self.message: dict[str, Any] = {}  # message_start's message: its `model` and `id`
        self.on_thinking: Callable[[str], None] | None = None
        self.hooked = False

    def add(self, sse: Event, hooks: ProviderHooks) -> bool:
        """Fold one server-sent event in, passing text deltas to `hooks.on_text`."""
        name, data = sse
        if name is None or name == "ping":
            return True
        if name == "error":
            raise self._stream_error(data)
        if not self.hooked:
            self.on_thinking, self.hooked = thinking_hook(hooks), True
        if data:
            self._add_event(parse_json(data), hooks)
        return True

    def _stream_error(self, data: str) -> ProviderError:
        """An `error` event inside a 200 stream: retried when its type is a transient one."""
        try:
            body: object = parse_json(data)
        except ValueError:
            body = data
        kind, message = _error_fields(body)
        status = _STREAM_ERROR_STATUS.get(kind or "")
        reason = f"error from {self.url} during the stream: {kind or 'error'}"
        if message:
            reason += f" ({one_line(message)})"
        return ProviderError(reason, status=status, retryable=status is not None)

    def _add_event(self, event: object, hooks: ProviderHooks) -> None:
        if not isinstance(event, dict):
            raise malformed(self.url, "a stream event is not a JSON object")
        kind = event.get("type")
        if kind == "message_start":
            self.message = as_dict(event.get("message"))
            self.start_usage = as_dict(self.message.get("usage"))
        elif kind == "content_block_start":
            self._start_block(as_key(event.get("index"), len(self.blocks)), as_dict(event.get("content_block")),
                              hooks)
        elif kind == "content_block_delta":
            self._add_delta(self.blocks.get(as_key(event.get("index"), -1)), as_dict(event.get("delta")), hooks)
        elif kind == "message_delta":
            self.stop = as_text(as_dict(event.get("delta")).get("stop_reason")) or self.stop
            self.end_usage = as_dict(event.get("usage"))

    def _start_block(self, index: int, block: dict[str, Any], hooks: ProviderHooks) -> None:
        if block.get("type") == "text":
            text = as_text(block.get("text"))
            self.blocks[index] = {"type": "text", "parts": [text]}
            if text:
                hooks.on_text(text)
        elif block.get("type") == "tool_use":
            self.blocks[index] = {"type": "tool_use", "id": block.get("id"), "name": block.get("name"),
                                  "parts": []}
        elif block.get("type") == "thinking":
            text = as_text(block.get("thinking"))
            self.blocks[index] = {"type": "thinking", "parts": [text], "signature": [as_text(block.get("signature"))]}
            if text and self.on_thinking is not None:
                self.on_thinking(text)
        elif block.get("type") == "redacted_thinking":
            self.blocks[index] = {"type": "redacted_thinking", "parts": [], "data": as_text(block.get("data"))}

    def _add_delta(self, block: dict[str, Any] | None, delta: dict[str, Any], hooks: ProviderHooks) -> None:
        if block is None:
            return  # a block type we do not keep
        kind = delta.get("type")
        if kind == "text_delta" and (text := as_text(delta.get("text"))):
            block["parts"].append(text)
            hooks.on_text(text)
        elif kind == "input_json_delta":
            block["parts"].append(as_text(delta.get("partial_json")))
        elif kind == "thinking_delta" and block["type"] == "thinking" and (text := as_text(delta.get("thinking"))):
            block["parts"].append(text)
            if self.on_thinking is not None:
                self.on_thinking(text)
        elif kind == "signature_delta" and block["type"] == "thinking":
            block["signature"].append(as_text(delta.get("signature")))

    def completion(self) -> Completion:
        """The finished message; raises a retryable error if the stream stopped early (no
        `message_delta` with a stop_reason): nothing of it was acted on, so asking again is safe."""
        if self.stop is None:
            raise malformed(self.url, "the stream ended without a stop_reason")
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        text = "".join("".join(b["parts"]) for b in blocks if b["type"] == "text")
        calls = tuple(_tool_call(b["id"], b["name"], "".join(b["parts"]) or "{}")
                      for b in blocks if b["type"] == "tool_use")
        reasoning = tuple(read_block({"type": b["type"], "thinking": "".join(b["parts"]), "data": b.get("data"),
                                      "signature": "".join(b.get("signature", ()))})
                          for b in blocks if b["type"] in ("thinking", "redacted_thinking"))
        return served_by(_completion(text, calls, self.stop, _usage(self.start_usage, self.end_usage),
                                     tuple(r for r in reasoning if r is not None)), self.message)


# -- wire forms -----------------------------------------------------------------------------------


def encode_message(message: Message) -> Wire:
    """A message's Anthropic role and its content blocks as JSON, ready to splice into a body."""
    role = {"tool": "user"}.get(message.role, message.role)
    return role, tuple(dumps(block) for block in message_blocks(message))


def message_blocks(message: Message) -> list[dict[str, Any]]:
    """A message's content blocks in the Messages API shape."""
    images = [image_block(image) for image in message.images or ()]
    if message.role == "tool":
        content: str | list[dict[str, Any]] = message.content
        if images:
            content = [{"type": "text", "text": message.content or EMPTY_TEXT}, *images]
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id,
                                 "content": content}
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    blocks += images
    if message.role == "assistant":
        blocks += [{"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call)}
                   for call in message.tool_calls]
    # (the thinking first, as it came; a reply of thinking alone still says something after it)
    thinking = [block for block in map(reasoning_block, message.reasoning or ()) if block]
    return thinking + (blocks or [{"type": "text", "text": EMPTY_TEXT}])


def image_block(image: Image) -> dict[str, Any]:
    """An image content block, the image inline in base64."""
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


def tool_input(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as the JSON object `tool_use.input` must be.

    When the model sent something that is not a JSON object, the raw text is kept under
    INVALID_ARGUMENTS_KEY: the request stays valid, and the model can still see what it
    sent next to the tool's error result.
    """
    try:
        parsed = call.parsed_arguments()
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {INVALID_ARGUMENTS_KEY: call.arguments}


def tool_wire(spec: ToolSpec) -> dict[str, Any]:
    """A tool in the Messages API shape."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


class _Turns:
    """The `messages` array (and the system blocks) of a growing conversation, kept between steps.

    Consecutive messages that map to the same role are merged into one message (the system
    messages are lifted out, so they do not split a run). A merged message is final once a
    message of the other role follows it, but the last three are encoded on every request: the
    last carries a cache breakpoint on its last block (and may still grow), and so does the
    user message before the last reply, where the request before this one ended. That one is
    read from the cache however many blocks the reply and its tool results added since (the
    API looks back only 20 blocks from a breakpoint for an earlier entry). Older messages are
    encoded once and appended to `closed`.
    """

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.folded = 0  # wires taken in so far
        self.system: list[bytes] = []
        self.closed = bytearray()  # the final merged messages but the last three, comma-separated
        self.tail: list[tuple[str, list[bytes]]] = []  # the last three merged messages: role, blocks

    def extend(self, wires: Sequence[Wire]) -> None:
        """Take in the wires added since the last call."""
        tail = self.tail
        for role, blocks in wires[self.folded:]:
            if role == "system":
                self.system.extend(blocks)
            elif tail and role == tail[-1][0]:
                tail[-1][1].extend(blocks)
            else:
                if len(tail) == 3:
                    old_role, old_blocks = tail.pop(0)
                    if self.closed:
                        self.closed += b","
                    self.closed += _message(old_role, old_blocks, cache=False)
                tail.append((role, list(blocks)))
        self.folded = len(wires)

    def messages(self) -> list[bytes | bytearray]:
        """The pieces of the JSON `messages` array: cache breakpoints on the very last block and
        on the last block of the user message before the last reply."""
        tail = self.tail
        if not tail:
            return [b"[]"]
        marked = {len(tail) - 1} | ({0} if len(tail) == 3 and tail[0][0] == "user" else set())
        recent = b",".join(_message(role, blocks, cache=i in marked) for i, (role, blocks) in enumerate(tail))
        return [b"[", self.closed, b",", recent, b"]"] if self.closed else [b"[", recent, b"]"]


def _message(role: str, blocks: Sequence[bytes], cache: bool) -> bytes:
    """One merged message of the `messages` array."""
    return b'{"role":"' + role.encode() + b'","content":' + _block_list(blocks, cache) + b"}"


def _block_list(blocks: Sequence[bytes], cache: bool) -> bytes:
    """A JSON array of encoded blocks; with `cache`, the last block becomes a cache breakpoint."""
    if cache and blocks:
        blocks = (*blocks[:-1], blocks[-1][:-1] + _CACHE_CONTROL)  # every block is a JSON object
    return b"[" + b",".join(blocks) + b"]"



# -- answers --------------------------------------------------------------------------------------


def _completion(text: str, calls: tuple[ToolCall, ...], stop_reason: str | None, usage: Usage,
                reasoning: tuple[Reasoning, ...] = ()) -> Completion:
    stop = _STOP.get(stop_reason or "", "other")
    if calls and stop == "end":
        stop = "tool_calls"
    message = Message(role="assistant", content=text, tool_calls=calls, usage=usage, reasoning=reasoning or None)
    return Completion(message=message, stop=stop, usage=usage, reason=stop_reason or "no stop_reason")


def _tool_call(call_id: object, name: object, arguments: str) -> ToolCall:
    """A call from its fields as the server sent them (anything not a string there is none)."""
    return ToolCall(id=as_text(call_id) or f"toolu_{uuid.uuid4().hex[:24]}", name=as_text(name), arguments=arguments)


def _input_json(value: object) -> str:
    """A whole answer's `tool_use.input` as the arguments' JSON text (`{}` when it has none)."""
    try:
        return json.dumps(value or {})
    except (ValueError, RecursionError):  # (a value `json.loads` made can always be dumped, but deep)
        return "{}"


def _usage(start: object, end: object) -> Usage:
    """Usage from `message_start` and `message_delta` (later counts win).

    Our `input_tokens` is the whole prompt, as OpenAI counts it: Anthropic's uncached input
    plus cache reads plus cache writes.
    """
    merged = {**as_dict(start), **{k: v for k, v in as_dict(end).items() if v is not None}}
    uncached = as_count(merged.get("input_tokens"))
    cache_read = as_count(merged.get("cache_read_input_tokens"))
    cache_write = as_count(merged.get("cache_creation_input_tokens"))
    thinking = as_dict(merged.get("output_tokens_details")).get("thinking_tokens")
    return Usage(input_tokens=uncached + cache_read + cache_write,
                 output_tokens=as_count(merged.get("output_tokens")),
                 cache_read_tokens=cache_read, cache_write_tokens=cache_write,
                 reasoning_tokens=None if thinking is None else as_count(thinking))


def _error_fields(body: object) -> tuple[str | None, str | None]:
    """The error type and message from an Anthropic error body."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            kind, message = error.get("type"), error.get("message")
            return (kind if isinstance(kind, str) else None, message if isinstance(message, str) else None)
    if isinstance(body, str) and body.strip():
        return None, body
    return None, None
