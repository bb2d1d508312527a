"""Chat Completions, through our own client (`http_client.py`): OpenAI and any compatible server.
The `openai` SDK is the tests' oracle for the body, the headers, the stream and the retry rules.

Hot path: each immutable Message is serialised to JSON once (cached on it with
`Message.wire`) and the cached pieces are spliced into the request body, whose keys are in
the order the SDK's `chat.completions.create` writes them, so the two send the same bytes.

Stream: as the SDK's stream reads it, every event's data is a JSON chunk until one that
starts with `[DONE]` (the rest of the body is drained briefly, not read); a chunk that
carries an `error` ends the stream with that error, retried.

As the SDK client does, OPENAI_ORG_ID and OPENAI_PROJECT_ID become the `OpenAI-Organization`
and `OpenAI-Project` headers.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from ..core.images import image_bytes_over, image_note, takes_images
from ..core.messages import Image, Message, ToolCall, Usage
from ..core.provider import Completion, ProviderError, ProviderHooks, StopKind, ToolSpec
from ..net.http_client import HttpStatusError, parse_json
from ..net.sse import Event
from .http_base import (
    HttpProvider,
    StreamAssembler,
    as_count,
    as_dict,
    as_key,
    as_list,
    as_text,
    dumps,
    malformed,
    served_by,
)
from .local import printable
from .retry import OPENAI_RULES, http_error, one_line, stream_error
from .wire_cache import JoinedWires, WirePrefix

WIRE_KEY = "openai"
TEXT_WIRE_KEY = "openai-text"  # the wire form for a model that takes no images
DEFAULT_TIMEOUT = 600.0
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PATH = "/chat/completions"
# (environment variable, header), as the SDK client reads them.
ENV_HEADERS = (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project"))
# The SDK's words for a stream error without a message of its own.
STREAM_ERROR = "An error occurred during streaming"

# Every finish_reason the API defines; any other word (vLLM's "abort", DeepSeek's
# "insufficient_system_resource", none at all) leaves the reply not known to be whole.
_FINISH: dict[str, StopKind] = {"stop": "end", "tool_calls": "tool_calls", "function_call": "tool_calls",
                                "length": "length", "content_filter": "content_filter"}


class OpenAIProvider(HttpProvider):
    """A ChatProvider for the Chat Completions API of OpenAI or any compatible server."""

    name = "openai"
    path = PATH
    default_base_url = DEFAULT_BASE_URL
    rules = OPENAI_RULES
    wire_key: ClassVar[str] = WIRE_KEY  # (the Responses wire, a subclass, has its own forms)

    def __init__(self, model: str, api_key: str | None, base_url: str | None, stream: bool = True,
                 max_tokens: int | None = None, *, timeout: float = DEFAULT_TIMEOUT, effort: str | None = None) -> None:
        """Without `api_key`, `base_url` must name the (keyless) server; no key is read from the environment.
        `effort` (`--effort`, only when given) is Chat Completions' `reasoning_effort`."""
        if not api_key and not base_url:
            raise ProviderError("no API key for the openai provider: set RECURSIVE_API_KEY or OPENAI_API_KEY")
        super().__init__(model, stream, api_key, base_url, request_headers(api_key), timeout)
        self._head = b'{"model":' + dumps(model) + (b',"stream":true' if stream else b"") + b',"messages":['
        self._tail = _body_tail(stream, max_tokens, official=base_url is None or "api.openai.com" in base_url,
                                effort=effort)
        self._encode, self._tool_form = self.forms()
        self._wire_key = self.wire_key
        if self._encode is encode_message and not takes_images(model):  # (the chat wire, a text-only model)
            self._wire_key, self._encode = TEXT_WIRE_KEY, encode_text_only
        self._prefix: WirePrefix[bytes] = WirePrefix(self._wire_key, self._encode)
        self._joined = JoinedWires()

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> bytes:
        """The JSON request body; each message is serialised once and reused on later steps."""
        parts: list[bytes | bytearray] = [self._head, self._joined.extend(self._prefix, messages), self._tail]
        if tools:
            parts += [b',"tools":', self.encoded_tools(tools, self._tool_form)]
        parts.append(b"}")
        return b"".join(parts)

    def wire_size(self, message: Message) -> int:
        """Bytes `message` adds to a request body (with its comma), encoded once; an image counts
        as the tokens it costs, not its base64 text."""
        size = len(message.wire(self._wire_key, self._encode)) + 1
        return size - image_bytes_over(message) if message.images and self._wire_key != TEXT_WIRE_KEY else size

    def forms(self) -> tuple[Callable[[Message], bytes], Callable[[ToolSpec], dict[str, Any]]]:
        """How a message and a tool are written on this wire."""
        return encode_message, tool_wire

    def new_stream(self) -> StreamAssembler:
        return _StreamState(self._url)

    def parse_whole(self, data: object, hooks: ProviderHooks) -> Completion:
        """The Completion of a whole answer; any JSON that is not one is a malformed response."""
        body = as_dict(data)
        choices = as_list(body.get("choices"))
        choice = choices[0] if choices and isinstance(choices[0], dict) else None
        if choice is None:
            said = server_message(body, "") if "error" in body else ""
            raise malformed(self._url, "no choices in the response" + (f" (it says: {one_line(said)})" if said else ""))
        message = as_dict(choice.get("message"))
        text, refusal = as_text(message.get("content")), as_text(message.get("refusal"))
        for part in (text, refusal):
            if part:
                hooks.on_text(part)
        calls = tuple(tool_call(raw.get("id"), as_dict(raw.get("function")))
                      for raw in as_list(message.get("tool_calls")) if isinstance(raw, dict))
        return served_by(_completion(text, calls, as_text(choice.get("finish_reason")) or None,
                                     _usage(body.get("usage")), refusal), body)

    def status_error(self, err: HttpStatusError) -> ProviderError:
        return http_error(err.status, self._url, server_message(err.body, f"Error code: {err.status}"),
                          err.headers, code=error_code(err.body), rules=self.rules)

    async def served_models(self, within: float) -> list[str]:
        """The model ids the server lists (`GET …/models`, as OpenAI-compatible servers answer
        it), in its order; ProviderError when they cannot be had or the answer is no such list."""
        body = as_dict(await self.fetch("models", within))
        listed = body.get("data")
        if not isinstance(listed, list):
            raise malformed(f"{self._url}/models", "no model list (data) in the answer")
        return [printable(item["id"]) for item in listed
                if isinstance(item, dict) and isinstance(item.get("id"), str) and printable(item["id"])]


def request_headers(api_key: str | None) -> dict[str, str]:
    """The headers of every request besides the common ones: the key, organization and project."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    for variable, header in ENV_HEADERS:
        value = os.environ.get(variable)
        if value is not None:
            headers[header] = value
    return headers


class _StreamState:
    """Assembles one streamed completion from its chunks."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage = Usage()
        self.served: dict[str, Any] = {}  # the first chunk's `model` and `id`

    def add(self, sse: Event, hooks: ProviderHooks) -> bool:
        """Fold one server-sent event in, passing text deltas to `hooks.on_text`; False after `[DONE]`."""
        data = sse[1]
        if data.startswith("[DONE]"):
            return False
        chunk = parse_json(data)
        if isinstance(chunk, dict) and chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else None
            raise stream_error(self.url, message if isinstance(message, str) and message else STREAM_ERROR,
                               error_code(chunk))
        self._add_chunk(chunk, hooks)
        return True

    def _add_chunk(self, chunk: object, hooks: ProviderHooks) -> None:
        if not isinstance(chunk, dict):
            raise malformed(self.url, "a stream chunk is not a JSON object")
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        if not self.served.get("model") and chunk.get("model"):
            self.served = chunk
        for choice in as_list(chunk.get("choices")):
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._add_choice(choice, hooks)

    def _add_choice(self, choice: dict[str, Any], hooks: ProviderHooks) -> None:
        delta = as_dict(choice.get("delta"))
        for key, parts in (("content", self.text), ("refusal", self.refusal)):
            piece = as_text(delta.get(key))
            if piece:
                parts.append(piece)
                hooks.on_text(piece)
        for position, fragment in enumerate(as_list(delta.get("tool_calls"))):
            if isinstance(fragment, dict):
                self._add_call_fragment(fragment, position)
        self.finish = as_text(choice.get("finish_reason")) or self.finish

    def _add_call_fragment(self, fragment: dict[str, Any], position: int) -> None:
        """id and name arrive with a call's first fragment; argument text is appended."""
        call = self.calls.setdefault(as_key(fragment.get("index"), position), {"id": None, "name": "", "args": []})
        function = as_dict(fragment.get("function"))
        if not call["id"]:
            call["id"] = as_text(fragment.get("id")) or None
        if not call["name"]:
            call["name"] = as_text(function.get("name"))
        if arguments := as_text(function.get("arguments")):
            call["args"].append(arguments)

    def completion(self) -> Completion:
        """The finished completion; raises a retryable error if the stream stopped early.

        A stream that ends without a finish_reason was cut off on the way (a proxy, a dropped
        connection that closed cleanly): asking again is safe, since nothing of it was acted on.
        """
        if self.finish is None:
            raise malformed(self.url, "the stream ended without a finish_reason")
        calls = tuple(tool_call(call["id"], {"name": call["name"], "arguments": "".join(call["args"])})
                      for _, call in sorted(self.calls.items()))
        return served_by(_completion("".join(self.text), calls, self.finish, self.usage, "".join(self.refusal)),
                         self.served)


# -- wire forms -----------------------------------------------------------------------------------


def encode_message(message: Message) -> bytes:
    """A message's Chat Completions JSON, ready to splice into a request body.

    A tool result with images is two messages: a tool message's content can only be text, so
    its images follow in a user message (as the API's vision guide does it).
    """
    wire = dumps(message_wire(message))
    if message.role == "tool" and message.images:
        wire += b"," + dumps({"role": "user", "content": [image_part(image) for image in message.images]})
    return wire


def encode_text_only(message: Message) -> bytes:
    """As `encode_message`, for a model that takes no images: each image is a line of text saying so."""
    if not message.images:
        return encode_message(message)
    notes = "\n".join(image_note(image) for image in message.images)
    return encode_message(replace(message, images=None,
                                          content=f"{message.content}\n{notes}".lstrip("\n")))


def image_part(image: Image) -> dict[str, Any]:
    """An image content part: the image inline, as a data URL."""
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def message_wire(message: Message) -> dict[str, Any]:
    """A message in the Chat Completions shape."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "user" and message.images:
        parts = [{"type": "text", "text": message.content}] if message.content else []
        return {"role": "user", "content": parts + [image_part(image) for image in message.images]}
    if message.role == "assistant" and message.tool_calls:
        return {"role": "assistant", "content": message.content or None,
                "tool_calls": [{"id": call.id, "type": "function",
                                "function": {"name": call.name, "arguments": call.arguments}}
                               for call in message.tool_calls]}
    return {"role": message.role, "content": message.content}


def tool_wire(spec: ToolSpec) -> dict[str, Any]:
    """A tool in the Chat Completions shape."""
    return {"type": "function",
            "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters}}


def _body_tail(stream: bool, max_tokens: int | None, official: bool, effort: str | None = None) -> bytes:
    """What follows the messages, before the tools: the output limit, the reasoning effort (the
    wire's levels stop at `high`: `max` is sent as that) and the stream options."""
    tail = b"]"
    if effort is not None:
        tail += b',"reasoning_effort":' + dumps("high" if effort == "max" else effort)
    if max_tokens is not None:
        # OpenAI's reasoning models only take the newer name; many compatible servers only the old.
        key = b"max_completion_tokens" if official else b"max_tokens"
        tail += b',"' + key + b'":' + str(int(max_tokens)).encode()
    if stream:
        tail += b',"stream_options":{"include_usage":true}'
    return tail



# -- answers --------------------------------------------------------------------------------------


def _completion(text: str, calls: tuple[ToolCall, ...], finish: str | None, usage: Usage,
                refusal: str = "") -> Completion:
    """The Completion; a refusal (its own field, beside finish_reason "stop") is the answer text."""
    stop = _FINISH.get(finish or "", "other")
    if refusal:
        stop, text = "refusal", text + refusal
    elif calls and stop == "end":
        stop = "tool_calls"  # some servers (Ollama) say "stop" when they call tools
    message = Message(role="assistant", content=text, tool_calls=calls, usage=usage)
    return Completion(message=message, stop=stop, usage=usage,
                      reason="refusal" if refusal else finish or "no finish_reason")


def tool_call(call_id: object, function: dict[str, Any]) -> ToolCall:
    """A call from its fields as the server sent them (anything not a string there is none;
    arguments sent as an object rather than its JSON text are taken as that text)."""
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        arguments = dumps(arguments).decode()
    return ToolCall(id=as_text(call_id) or f"call_{uuid.uuid4().hex[:24]}", name=as_text(function.get("name")),
                    arguments=as_text(arguments) or "{}")


def _usage(raw: object) -> Usage:
    """Usage as the server counted it (anything not a count there is 0)."""
    usage = as_dict(raw)
    details = as_dict(usage.get("prompt_tokens_details"))
    return Usage(input_tokens=as_count(usage.get("prompt_tokens")),
                 output_tokens=as_count(usage.get("completion_tokens")),
                 cache_read_tokens=as_count(details.get("cached_tokens")))


def error_code(body: object) -> str | None:
    """The `error.code` of an error body, as the SDK reads it, when it is a string."""
    if isinstance(body, dict):
        error = body.get("error", body)
        code = error.get("code") if isinstance(error, dict) else None
        return code if isinstance(code, str) else None
    return None


def server_message(body: object, fallback: str) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    if isinstance(body, str) and body.strip():
        return body
    return fallback
