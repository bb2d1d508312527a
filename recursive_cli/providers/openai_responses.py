"""The Responses API (`POST /responses`), the openai provider's other wire: the one OpenAI's
reasoning models keep their reasoning over, and the only one Codex CLI speaks.

Stateless: every request says `store: false` and carries the whole conversation as `input`
items, so a session resumes from our transcript alone. Each assistant message becomes its
`reasoning` items (their `encrypted_content`, asked for with `include`, sent back as the
API gave it, of any model but the GPT-4 family's, which do not reason; their ids are not
sent, since the server keeps nothing to find them by), then
its text as a message item, then one `function_call` item per call; a tool result is a
`function_call_output`. `--effort` is `reasoning.effort` (`max` is `xhigh`), the session id
the `prompt_cache_key`, so a session's requests reach the same cache.

As on the chat wire (`openai_provider.py`, whose headers, error reading and retry rules
this shares), each message is serialised once and spliced into a body whose keys are in the
order the SDK's `responses.create` writes them, so the two send the same bytes.

Stream: typed events. Text, refusal and call-argument deltas are folded into the item of
their `output_index`; `response.output_item.done` replaces it with the whole item. The stream
ends with `response.completed`, `response.incomplete` (cut off: `max_output_tokens` is the
output limit) or `response.failed`; an `error` event, or `response.failed`, is a retried
error, and a stream that ends without any of the three was cut off on the way (retried).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import Message, Reasoning, ToolCall, Usage
from ..core.provider import Completion, ProviderError, ProviderHooks, StopKind, ToolSpec, thinking_hook
from ..net.http_client import parse_json
from ..net.sse import Event
from .http_base import StreamAssembler, as_count, as_dict, as_list, as_text, dumps, malformed, served_by
from .openai_provider import DEFAULT_TIMEOUT, STREAM_ERROR, OpenAIProvider, server_message, tool_call
from .retry import one_line, stream_error

WIRE_KEY = "openai-responses"
PATH = "/responses"
# --effort's words as the API spells them.
EFFORTS = {"low": "low", "medium": "medium", "high": "high", "max": "xhigh"}
# Models that do not reason: they are not asked for encrypted reasoning (a field they have not).
NO_REASONING = ("gpt-4", "gpt-3.5", "chatgpt-4o")
# Why a response is incomplete, as a stop.
_INCOMPLETE: dict[str, StopKind] = {"max_output_tokens": "length", "content_filter": "content_filter"}


class OpenAIResponsesProvider(OpenAIProvider):
    """A ChatProvider for OpenAI's Responses API: the chat wire's request cycle and errors,
    its own body and answers."""

    path = PATH
    wire_key = WIRE_KEY

    def forms(self) -> tuple[Callable[[Message], bytes], Callable[[ToolSpec], dict[str, Any]]]:
        return encode_message, tool_wire

    def __init__(self, model: str, api_key: str | None, base_url: str | None, stream: bool = True,
                 max_tokens: int | None = None, *, effort: str | None = None, session_id: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        """Without `api_key`, `base_url` must name the (keyless) server."""
        super().__init__(model, api_key, base_url, stream, max_tokens, timeout=timeout)
        include = b"" if model.startswith(NO_REASONING) else b',"include":["reasoning.encrypted_content"]'
        self._head = b'{"model":' + dumps(model) + (b',"stream":true' if stream else b"") + include + b',"input":['
        self._tail = _body_tail(max_tokens, effort, session_id)

    def new_stream(self) -> StreamAssembler:
        return _StreamState(self._url)

    def parse_whole(self, data: object, hooks: ProviderHooks) -> Completion:
        """The Completion of a whole response object."""
        body = as_dict(data)
        if not isinstance(body.get("output"), list):
            said = server_message(body, "") if "error" in body else ""
            raise malformed(self._url, "no output in the response" + (f" (it says: {one_line(said)})" if said else ""))
        if body.get("status") == "failed":
            raise _failed(self._url, body)
        items = [_Item.of(raw) for raw in body["output"] if isinstance(raw, dict)]
        for item in items:
            for part in (item.joined_text, item.joined_refusal):
                if part:
                    hooks.on_text(part)
        return _completion(items, as_text(body.get("status")), body, _usage(body.get("usage")))


# -- the stream -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """One output item as it is assembled: a message, a function call or reasoning."""

    type: str
    id: str = ""
    call_id: str = ""
    name: str = ""
    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    encrypted: str | None = None

    @classmethod
    def of(cls, raw: dict[str, Any]) -> _Item:
        """The item as the server sent it whole (`output_item.added`/`done`, a response's `output`)."""
        item = cls(type=as_text(raw.get("type")), id=as_text(raw.get("id")), call_id=as_text(raw.get("call_id")),
                   name=as_text(raw.get("name")), encrypted=as_text(raw.get("encrypted_content")) or None)
        arguments = raw.get("arguments")
        if isinstance(arguments, dict):
            arguments = dumps(arguments).decode()
        if as_text(arguments):
            item.arguments.append(as_text(arguments))
        for piece in as_list(raw.get("content")):
            part = as_dict(piece)
            if part.get("type") == "output_text" and as_text(part.get("text")):
                item.text.append(as_text(part.get("text")))
            elif part.get("type") == "refusal" and as_text(part.get("refusal")):
                item.refusal.append(as_text(part.get("refusal")))
        item.summary += [as_text(as_dict(part).get("text")) for part in as_list(raw.get("summary"))]
        return item

    @property
    def joined_text(self) -> str:
        return "".join(self.text)

    @property
    def joined_refusal(self) -> str:
        return "".join(self.refusal)

    def call(self) -> ToolCall:
        return tool_call(self.call_id or self.id, {"name": self.name, "arguments": "".join(self.arguments)})

    def reasoning(self) -> Reasoning:
        return Reasoning(kind="reasoning", id=self.id or None, text="\n\n".join(s for s in self.summary if s),
                         signature=self.encrypted)


class _StreamState:
    """Assembles one streamed response from its events."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.items: dict[int, _Item] = {}
        self.status: str | None = None
        self.response: dict[str, Any] = {}
        self.usage = Usage()

    def add(self, sse: Event, hooks: ProviderHooks) -> bool:
        """Fold one event in, passing text deltas to `hooks.on_text`; False once the response ended."""
        if sse[1].startswith("[DONE]"):  # (the chat wire's end, which some servers send here too)
            return False
        event = parse_json(sse[1])
        if not isinstance(event, dict):
            raise malformed(self.url, "a stream event is not a JSON object")
        kind = as_text(event.get("type")) or sse[0] or ""
        if kind == "error":  # (the fields at the top, as OpenAI sends them, or in an `error` object)
            error = as_dict(event.get("error")) or event
            raise stream_error(self.url, as_text(error.get("message")) or STREAM_ERROR,
                               as_text(error.get("code")) or None)
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self._end(as_dict(event.get("response")), kind.rpartition(".")[2])
            return False
        self._add_event(kind, event, hooks)
        return True

    def _add_event(self, kind: str, event: dict[str, Any], hooks: ProviderHooks) -> None:
        index = event.get("output_index")
        if kind in ("response.output_item.added", "response.output_item.done"):
            self.items[_index(index, len(self.items))] = _Item.of(as_dict(event.get("item")))
            return
        item = self.items.get(index) if isinstance(index, int) else None
        delta = as_text(event.get("delta"))
        if item is None:
            return  # (a delta of an item never announced: nothing to fold it into)
        if kind == "response.output_text.delta" and delta:
            item.text.append(delta)
            hooks.on_text(delta)
        elif kind == "response.refusal.delta" and delta:
            item.refusal.append(delta)
            hooks.on_text(delta)
        elif kind == "response.function_call_arguments.delta" and delta:
            item.arguments.append(delta)
        elif kind == "response.function_call_arguments.done" and isinstance(event.get("arguments"), str):
            item.arguments = [event["arguments"]]
        elif kind == "response.reasoning_summary_text.delta" and delta:
            position = _index(event.get("summary_index"), 0)
            item.summary += [""] * (position + 1 - len(item.summary))
            item.summary[position] += delta
            on_thinking = thinking_hook(hooks)
            if on_thinking is not None:  # shown dimmed as Anthropic thinking is
                on_thinking(delta)

    def _end(self, response: dict[str, Any], status: str) -> None:
        if status == "failed":
            raise _failed(self.url, response)
        self.status, self.response = status, response
        self.usage = _usage(response.get("usage"))
        if not self.items:  # a server that sends the output only with the end
            self.items = {i: _Item.of(raw) for i, raw in enumerate(as_list(response.get("output")))
                          if isinstance(raw, dict)}

    def completion(self) -> Completion:
        """The finished completion; a stream that ended before the response did is retried."""
        if self.status is None:
            raise malformed(self.url, "the stream ended without a response.completed event")
        return _completion([item for _, item in sorted(self.items.items())], self.status, self.response,
                           self.usage)


def _index(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _failed(url: str, response: dict[str, Any]) -> ProviderError:
    """A response the server says failed: its error, retried unless it says the context overflowed."""
    error = as_dict(response.get("error"))
    return stream_error(url, as_text(error.get("message")) or STREAM_ERROR, as_text(error.get("code")) or None)


# -- answers --------------------------------------------------------------------------------------


def _completion(items: list[_Item], status: str, response: dict[str, Any], usage: Usage) -> Completion:
    """The Completion of a response's output items; a refusal (a content part of its own) is the answer."""
    text = "".join(item.joined_text for item in items if item.type == "message")
    refusal = "".join(item.joined_refusal for item in items if item.type == "message")
    calls = tuple(item.call() for item in items if item.type == "function_call")
    reasoning = tuple(item.reasoning() for item in items if item.type == "reasoning")
    if status == "incomplete":
        reason = as_text(as_dict(response.get("incomplete_details")).get("reason")) or "incomplete"
        stop: StopKind = _INCOMPLETE.get(reason, "other")
    elif status == "completed":
        reason, stop = "completed", "tool_calls" if calls else "end"
    else:
        reason, stop = status or "no status", "other"
    if refusal:
        stop, text, reason = "refusal", text + refusal, "refusal"
    message = Message(role="assistant", content=text, tool_calls=calls, usage=usage, reasoning=reasoning or None)
    return served_by(Completion(message=message, stop=stop, usage=usage, reason=reason), response)


def _usage(raw: object) -> Usage:
    """Usage as the server counted it, reasoning and cached tokens included."""
    usage = as_dict(raw)
    details = as_dict(usage.get("output_tokens_details"))
    return Usage(input_tokens=as_count(usage.get("input_tokens")),
                 output_tokens=as_count(usage.get("output_tokens")),
                 cache_read_tokens=as_count(as_dict(usage.get("input_tokens_details")).get("cached_tokens")),
                 reasoning_tokens=as_count(details.get("reasoning_tokens")) if "reasoning_tokens" in details else None)


# -- wire forms -----------------------------------------------------------------------------------


def encode_message(message: Message) -> bytes:
    """A message's input items, comma-joined, ready to splice into a request body."""
    return b",".join(dumps(item) for item in input_items(message))


def input_items(message: Message) -> list[dict[str, Any]]:
    """A message as Responses input items (never none)."""
    if message.role == "tool":  # (an image it returned, read_file's, goes as an input_image part of its output)
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": _content(message)}]
    if message.role != "assistant":
        return [{"role": message.role, "content": _content(message)}]
    items: list[dict[str, Any]] = [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": r.text}] if r.text else [],
         "encrypted_content": r.signature}
        for r in message.reasoning or () if r.kind == "reasoning" and r.signature]
    if message.content or not message.tool_calls:
        items.append({"role": "assistant", "content": message.content})
    items += [{"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}
              for call in message.tool_calls]
    return items


def _content(message: Message) -> str | list[dict[str, Any]]:
    """A message's content (a user's, a system's, a tool's output): its text, or input parts when
    it has images."""
    if not message.images:
        return message.content
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": message.content}] if message.content else []
    parts += [{"type": "input_image", "image_url": f"data:{image.media_type};base64,{image.data}"}
              for image in message.images]
    return parts


def tool_wire(spec: ToolSpec) -> dict[str, Any]:
    """A tool in the Responses shape (not strict: our schemas are not all strict-mode schemas)."""
    return {"type": "function", "name": spec.name, "description": spec.description,
            "parameters": spec.parameters, "strict": False}


def _body_tail(max_tokens: int | None, effort: str | None, session_id: str | None) -> bytes:
    """What follows the input, before the tools, in the SDK's order."""
    tail = b"]"
    if max_tokens is not None:
        tail += b',"max_output_tokens":' + str(int(max_tokens)).encode()
    if session_id:
        tail += b',"prompt_cache_key":' + dumps(session_id)
    if effort:
        tail += b',"reasoning":' + dumps({"effort": EFFORTS.get(effort, effort), "summary": "auto"})
    return tail + b',"store":false'
