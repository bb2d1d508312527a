"""A loopback HTTP server that speaks the OpenAI Chat Completions and Responses and the Anthropic
Messages wire formats.

Provider tests drive our providers (our own HTTP client, as a run uses it) against it, so
request building, SSE parsing, error mapping and retries are all exercised over real HTTP::

    with FakeLLMServer([{"text": "hi"}]) as srv:
        provider = OpenAIProvider("gpt-4o", "sk-test", srv.openai_base_url)
        ...
        assert srv.requests[0].body["messages"][0]["role"] == "system"

Each POST to `/v1/chat/completions`, `/v1/responses` or `/v1/messages` pops the next scripted reply and answers
it in that endpoint's format, as server-sent events when the request body says
`"stream": true`. `GET /v1/models` lists `served` (by default the one model the replies
name, `model`), as OpenAI-compatible servers list theirs; `served=None` answers it 404. Replies use the scripted provider's format::

    {"text": "answer"}
    {"text": "optional", "tool_calls": [{"name": "run_shell", "arguments": {...} | "raw json",
                                         "id": "optional"}]}
    {"error": {"status": 429, "message": "slow down", "headers": {"retry-after": "0"}}}
    {"error": {"status": 400, "message": "...", "code": "context_length_exceeded"}}  (OpenAI's error.code)
    {"drop": true}        close the connection without answering
    {"drop": "mid"}       send the status line and half of the body, then close
    {"malformed": true}   a broken SSE chunk (streaming) or a truncated JSON body
    {"malformed": "utf8"} a stream chunk with a byte that is not UTF-8 inside valid JSON
    {"refusal": "I can't help with that."}  the model refuses: OpenAI's `refusal` field (streamed
                          as refusal deltas with `content` null, finish_reason "stop"); for
                          Anthropic the text with stop_reason "refusal"
    optional on any reply: "stop": "end" | "tool_calls" | "length" | "content_filter" | "refusal"
                          | raw value,
    "cut": n              the output limit struck n characters into the last tool call's
                          arguments: they stop there, and the stop is "length" (finish_reason
                          "length", stop_reason "max_tokens") unless "stop" says otherwise; an
                          Anthropic stream leaves that block without `content_block_stop`, as the
                          API does; a whole Anthropic body holds what the cut text parses to
    "no_finish": true     no finish reason at all: a stream ends cleanly after its last delta (no
                          finish chunk, usage chunk or `[DONE]`; no `message_delta` or
                          `message_stop`); a whole body says `null`
    "usage": {"input_tokens": n, "output_tokens": n, "cache_read_tokens": n, "reasoning_tokens": n},
    "reasoning": {"summary": "...", "encrypted": "..."}  (Responses) a `reasoning` item first
    "thinking": [{"thinking": "text", "signature": "sig"} | {"redacted": "data"}, ...]
                          Anthropic only: thinking (or redacted_thinking) blocks before the
                          text, streamed as thinking_delta and signature_delta events
    "delay": seconds before answering,
    "hold": a threading.Event: answer once the test sets it (at most 60 s), not before

On the Responses wire a cut reply is `incomplete` for `max_output_tokens`, a refusal a
`refusal` content part, and "no_finish" a stream with no `response.completed` (a whole body
`in_progress`).

`usage.input_tokens` counts the whole prompt, cached tokens included (as OpenAI reports it);
for Anthropic the server reports the uncached part in `input_tokens` and the rest in
`cache_read_input_tokens`, as the real API does.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
ANTHROPIC_PATH = "/v1/messages"
MODELS_PATH = "/v1/models"
DEFAULT_USAGE = {"input_tokens": 10, "output_tokens": 5}

_OPENAI_FINISH = {"end": "stop", "tool_calls": "tool_calls", "length": "length",
                  "content_filter": "content_filter"}
_ANTHROPIC_STOP = {"end": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
                   "content_filter": "refusal", "refusal": "refusal"}
_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                          403: "permission_error", 404: "not_found_error",
                          413: "request_too_large", 429: "rate_limit_error",
                          500: "api_error", 529: "overloaded_error"}
_OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error",
                       403: "permission_denied", 404: "not_found", 429: "rate_limit_exceeded"}


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: its path, lower-cased headers and JSON body (and
    the bytes it came as)."""

    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""


class FakeLLMServer:
    """A scripted LLM server on 127.0.0.1 in a daemon thread; use it as a context manager."""

    def __init__(self, replies: Iterable[dict[str, Any]] = (), *, model: str = "fake-model",
                 served: Iterable[str] | None = ()) -> None:
        self.replies: list[dict[str, Any]] = list(replies)
        self.requests: list[RecordedRequest] = []
        self.model = model
        self.served: list[str] | None = None if served is None else list(served) or [model]
        self._lock = threading.Lock()
        self._ids = count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> FakeLLMServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Bind a free port and serve in a daemon thread."""
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                        name="fake-llm", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # -- addresses ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`, no trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for the openai SDK (it appends `/chat/completions`)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the anthropic SDK (it appends `/v1/messages`)."""
        return self.url

    # -- script ------------------------------------------------------------------------------

    def add(self, *replies: dict[str, Any]) -> None:
        """Append replies to the script; safe while requests are being served."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self) -> dict[str, Any] | None:
        """Pop the next scripted reply, or None when the script is exhausted."""
        with self._lock:
            return self.replies.pop(0) if self.replies else None

    def record(self, request: RecordedRequest) -> None:
        """Remember a received request."""
        with self._lock:
            self.requests.append(request)

    def new_id(self, prefix: str) -> str:
        """A fresh id like `call_3` or `toolu_3`."""
        with self._lock:
            return f"{prefix}{next(self._ids)}"


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up on its answer (it timed out, or its process is gone) is part
        of the script, not a server fault: say nothing, or the traceback would land on the
        stderr of whatever command runs next in this process."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Answers one endpoint request per scripted reply."""

    protocol_version = "HTTP/1.1"
    timeout = 10  # seconds an idle keep-alive connection may hold a thread
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    @property
    def fake(self) -> FakeLLMServer:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.fake.record(RecordedRequest(path=self.path, headers=headers, body=None))
        if self.path != MODELS_PATH or self.fake.served is None:
            self._send_error(404, f"fake server: no route for GET {self.path}", {})
            return
        listed = {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "fake"}
                                             for name in self.fake.served]}
        payload = json.dumps(listed).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.path = self.path.split("?", 1)[0]  # (Claude Code asks `/v1/messages?beta=true`)
        self.fake.record(RecordedRequest(path=self.path, headers=headers, body=body, raw=raw))
        if self.path not in (OPENAI_PATH, RESPONSES_PATH, ANTHROPIC_PATH):
            self._send_error(404, f"fake server: no route for {self.path}", {})
            return
        reply = self.fake.next_reply()
        if reply is None:
            self._send_error(400, "fake server: script exhausted", {})
            return
        if reply.get("delay"):
            time.sleep(float(reply["delay"]))
        if reply.get("hold") is not None:
            reply["hold"].wait(60)
        self._answer(reply, streaming=isinstance(body, dict) and body.get("stream") is True)

    # -- dispatch ----------------------------------------------------------------------------

    @property
    def _is_openai(self) -> bool:
        """Either OpenAI wire (their errors and broken events look alike)."""
        return self.path in (OPENAI_PATH, RESPONSES_PATH)

    @property
    def _renderers(self) -> tuple[Any, Any]:
        """(whole body, events) for this endpoint."""
        if self.path == RESPONSES_PATH:
            return _responses_body, _responses_events
        return (_openai_body, _openai_events) if self._is_openai else (_anthropic_body, _anthropic_events)

    def _answer(self, reply: dict[str, Any], streaming: bool) -> None:
        if reply.get("drop") is True:
            self.close_connection = True
            return
        if "error" in reply:
            spec = reply["error"]
            self._send_error(int(spec.get("status", 500)), str(spec.get("message", "error")),
                             dict(spec.get("headers", {})), code=spec.get("code"))
            return
        if streaming:
            self._send_stream(reply)
        else:
            self._send_whole(reply)

    def _send_whole(self, reply: dict[str, Any]) -> None:
        if reply.get("malformed"):
            payload = b'{"id": "broken", "choices": [{"index": 0, "mess'
        else:
            render = self._renderers[0]
            payload = json.dumps(render(reply, self.fake)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if reply.get("drop") == "mid":
            self.wfile.write(payload[: len(payload) // 2])
            self._hang_up()
            return
        self.wfile.write(payload)

    def _send_stream(self, reply: dict[str, Any]) -> None:
        render = self._renderers[1]
        events = render(reply, self.fake)
        if reply.get("malformed") == "utf8":
            events = [*events[:1], _not_utf8_event(self._is_openai)]
        elif reply.get("malformed"):
            events = [*events[:1], _broken_event(self._is_openai)]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if reply.get("drop") == "mid":
            for event in events[: max(1, len(events) // 2)]:
                self._write_chunk(event)
            self._hang_up()
            return
        for event in events:
            self._write_chunk(event)
        self._write_chunk("")

    def _send_error(self, status: int, message: str, headers: dict[str, str], *,
                    code: str | None = None) -> None:
        body = _openai_error(status, message, code) if self._is_openai else _anthropic_error(status, message)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(payload)

    def _write_chunk(self, text: str | bytes) -> None:
        data = text if isinstance(text, bytes) else text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _hang_up(self) -> None:
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


# -- shared reply helpers ------------------------------------------------------------------------


def _pieces(text: str, parts: int = 3) -> list[str]:
    """Split `text` into up to `parts` non-empty pieces, so clients must reassemble it."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i:i + size] for i in range(0, len(text), size)]


def _arguments_text(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _arguments_object(call: dict[str, Any]) -> Any:
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return {}  # a non-streamed tool_use block can only carry an object


def _calls(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The reply's tool calls, the last one's arguments cut to `cut` characters if it says so."""
    calls = [dict(call) for call in reply.get("tool_calls", [])]
    if calls and "cut" in reply:
        calls[-1]["arguments"] = _arguments_text(calls[-1])[: int(reply["cut"])]
    return calls


def _stop(reply: dict[str, Any]) -> str | None:
    """The reply's stop in the scripted vocabulary; None for no finish reason at all."""
    if reply.get("no_finish"):
        return None
    if reply.get("stop"):
        return str(reply["stop"])
    if "cut" in reply:
        return "length"
    if reply.get("refusal"):
        return "refusal"
    return "tool_calls" if reply.get("tool_calls") else "end"


def _usage(reply: dict[str, Any]) -> dict[str, int]:
    return {**DEFAULT_USAGE, **reply.get("usage", {})}


def _sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def _not_utf8_event(openai: bool) -> bytes:
    if openai:
        return b'data: {"id": "chatcmpl-bad", "choices": [{"index": 0, "delta": {"content": "\xff"}}]}\n\n'
    return b'event: ping\ndata: {"type": "ping", "note": "\xff"}\n\n'


def _broken_event(openai: bool) -> str:
    if openai:
        return 'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"content": "x"\n\n'
    return 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta"\n\n'


# -- OpenAI Chat Completions ---------------------------------------------------------------------


def _openai_finish(reply: dict[str, Any]) -> str | None:
    stop = _stop(reply)
    if stop == "refusal":
        return "stop"  # OpenAI says a refusal in its own field and finishes normally
    return None if stop is None else _OPENAI_FINISH.get(stop, stop)


def _openai_usage(reply: dict[str, Any]) -> dict[str, Any]:
    usage = _usage(reply)
    return {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
            "prompt_tokens_details": {"cached_tokens": usage.get("cache_read_tokens", 0)}}


def _openai_tool_calls(reply: dict[str, Any], fake: FakeLLMServer) -> list[dict[str, Any]]:
    return [{"id": call.get("id") or fake.new_id("call_"), "type": "function",
             "function": {"name": call["name"], "arguments": _arguments_text(call)}}
            for call in _calls(reply)]


def _openai_body(reply: dict[str, Any], fake: FakeLLMServer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text") or None,
                               "refusal": reply.get("refusal") or None}
    calls = _openai_tool_calls(reply, fake)
    if calls:
        message["tool_calls"] = calls
    return {"id": fake.new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": fake.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": _openai_finish(reply)}],
            "usage": _openai_usage(reply)}


def _openai_events(reply: dict[str, Any], fake: FakeLLMServer) -> list[str]:
    head = {"id": fake.new_id("chatcmpl-"), "object": "chat.completion.chunk",
            "created": int(time.time()), "model": fake.model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**head, "choices": [choice]})

    refusal = reply.get("refusal") or ""
    # As the API starts a stream: `refusal` null, or "" with `content` null when it refuses.
    events = [chunk({"role": "assistant", "content": None if refusal else "",
                     "refusal": "" if refusal else None})]
    events += [chunk({"content": piece}) for piece in _pieces(reply.get("text", ""))]
    events += [chunk({"refusal": piece}) for piece in _pieces(refusal)]
    for index, call in enumerate(_openai_tool_calls(reply, fake)):
        function = call["function"]
        events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": {"name": function["name"], "arguments": ""}}]}))
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in _pieces(function["arguments"])]
    finish = _openai_finish(reply)
    if finish is None:
        return events  # the stream just ends
    events.append(chunk({}, finish))
    events.append(_sse({**head, "choices": [], "usage": _openai_usage(reply)}))
    events.append("data: [DONE]\n\n")
    return events


def _openai_error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    kind = _OPENAI_ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# -- OpenAI Responses ------------------------------------------------------------------------------


def _responses_usage(reply: dict[str, Any]) -> dict[str, Any]:
    usage = _usage(reply)
    return {"input_tokens": usage["input_tokens"],
            "input_tokens_details": {"cached_tokens": usage.get("cache_read_tokens", 0)},
            "output_tokens": usage["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
            "total_tokens": usage["input_tokens"] + usage["output_tokens"]}


def _responses_items(reply: dict[str, Any], fake: FakeLLMServer) -> list[dict[str, Any]]:
    """The output items: reasoning, the message (text or refusal), the function calls."""
    items: list[dict[str, Any]] = []
    if reply.get("reasoning"):
        reasoning = reply["reasoning"]
        summary = [{"type": "summary_text", "text": reasoning["summary"]}] if reasoning.get("summary") else []
        items.append({"id": fake.new_id("rs_"), "type": "reasoning", "summary": summary,
                      "encrypted_content": reasoning.get("encrypted")})
    parts: list[dict[str, Any]] = []
    if reply.get("text"):
        parts.append({"type": "output_text", "text": reply["text"], "annotations": [], "logprobs": []})
    if reply.get("refusal"):
        parts.append({"type": "refusal", "refusal": reply["refusal"]})
    if parts:
        items.append({"id": fake.new_id("msg_"), "type": "message", "role": "assistant",
                      "status": "completed", "content": parts})
    for call in _calls(reply):
        call_id = call.get("id") or fake.new_id("call_")
        items.append({"id": "fc_" + call_id, "type": "function_call", "status": "completed",
                      "call_id": call_id, "name": call["name"], "arguments": _arguments_text(call)})
    return items


def _responses_status(reply: dict[str, Any]) -> tuple[str, dict[str, str] | None]:
    stop = _stop(reply)
    if stop is None:
        return "in_progress", None
    if stop == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if stop == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def _response(fake: FakeLLMServer, response_id: str, status: str, output: list[dict[str, Any]],
              usage: dict[str, Any] | None, incomplete: dict[str, str] | None = None) -> dict[str, Any]:
    return {"id": response_id, "object": "response", "created_at": int(time.time()), "model": fake.model,
            "status": status, "error": None, "incomplete_details": incomplete, "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage}


def _responses_body(reply: dict[str, Any], fake: FakeLLMServer) -> dict[str, Any]:
    status, incomplete = _responses_status(reply)
    return _response(fake, fake.new_id("resp_"), status, _responses_items(reply, fake),
                     _responses_usage(reply), incomplete)


def _responses_events(reply: dict[str, Any], fake: FakeLLMServer) -> list[str]:
    """The event stream the API sends: created, each item added / its deltas / done, the end."""
    response_id = fake.new_id("resp_")
    numbers = count()
    events: list[str] = []

    def event(kind: str, **fields: Any) -> None:
        events.append(_sse({"type": kind, "sequence_number": next(numbers), **fields}, kind))

    event("response.created", response=_response(fake, response_id, "in_progress", [], None))
    items = _responses_items(reply, fake)
    status, incomplete = _responses_status(reply)
    for index, item in enumerate(items):
        cut = status == "incomplete" and index == len(items) - 1 and item["type"] == "function_call"
        _responses_item_events(event, index, item, cut)
    if status == "in_progress":
        return events  # the stream just ends
    event(f"response.{status}", response=_response(fake, response_id, status, items, _responses_usage(reply),
                                                   incomplete))
    return events


def _responses_item_events(event: Any, index: int, item: dict[str, Any], cut: bool) -> None:
    """One item's events; a call cut by the output limit gets no `done` events, as the API sends."""
    ids = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        event("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
        for position, part in enumerate(item["content"]):
            kind = "output_text" if part["type"] == "output_text" else "refusal"
            empty = {"type": kind, "text": "", "annotations": []} if kind == "output_text" else {"type": kind, "refusal": ""}
            event("response.content_part.added", **ids, content_index=position, part=empty)
            for piece in _pieces(part.get("text") or part.get("refusal") or ""):
                event(f"response.{'output_text' if kind == 'output_text' else 'refusal'}.delta", **ids,
                      content_index=position, delta=piece)
            event("response.content_part.done", **ids, content_index=position, part=part)
    elif item["type"] == "function_call":
        event("response.output_item.added", output_index=index,
              item={**item, "status": "in_progress", "arguments": ""})
        for piece in _pieces(item["arguments"]):
            event("response.function_call_arguments.delta", **ids, delta=piece)
        if cut:
            return
        event("response.function_call_arguments.done", **ids, arguments=item["arguments"])
    else:  # reasoning
        event("response.output_item.added", output_index=index,
              item={**item, "summary": [], "encrypted_content": None})
        for position, part in enumerate(item["summary"]):
            event("response.reasoning_summary_part.added", **ids, summary_index=position,
                  part={"type": "summary_text", "text": ""})
            for piece in _pieces(part["text"]):
                event("response.reasoning_summary_text.delta", **ids, summary_index=position, delta=piece)
            event("response.reasoning_summary_text.done", **ids, summary_index=position, text=part["text"])
    event("response.output_item.done", output_index=index, item=item)


# -- Anthropic Messages ----------------------------------------------------------------------------


def _anthropic_stop(reply: dict[str, Any]) -> str | None:
    stop = _stop(reply)
    return None if stop is None else _ANTHROPIC_STOP.get(stop, stop)


def _anthropic_usage(reply: dict[str, Any]) -> dict[str, int]:
    usage = _usage(reply)
    cached = usage.get("cache_read_tokens", 0)
    return {"input_tokens": usage["input_tokens"] - cached, "output_tokens": usage["output_tokens"],
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached}


def _anthropic_blocks(reply: dict[str, Any], fake: FakeLLMServer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {"type": "redacted_thinking", "data": item["redacted"]} if "redacted" in item
        else {"type": "thinking", "thinking": item["thinking"], "signature": item["signature"]}
        for item in reply.get("thinking", [])]
    text = (reply.get("text") or "") + (reply.get("refusal") or "")
    if text:
        blocks.append({"type": "text", "text": text})
    for call in _calls(reply):
        blocks.append({"type": "tool_use", "id": call.get("id") or fake.new_id("toolu_"),
                       "name": call["name"], "input": _arguments_object(call),
                       "_raw": _arguments_text(call)})
    return blocks


def _anthropic_message(fake: FakeLLMServer, content: list[dict[str, Any]], stop: str | None,
                       usage: dict[str, int]) -> dict[str, Any]:
    return {"id": fake.new_id("msg_"), "type": "message", "role": "assistant", "model": fake.model,
            "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}


def _anthropic_body(reply: dict[str, Any], fake: FakeLLMServer) -> dict[str, Any]:
    blocks = [{k: v for k, v in block.items() if k != "_raw"} for block in _anthropic_blocks(reply, fake)]
    return _anthropic_message(fake, blocks, _anthropic_stop(reply), _anthropic_usage(reply))


def _anthropic_events(reply: dict[str, Any], fake: FakeLLMServer) -> list[str]:
    usage = _anthropic_usage(reply)
    start_usage = {**usage, "output_tokens": 1}
    events = [_sse({"type": "message_start", "message": _anthropic_message(fake, [], None, start_usage)},
                   "message_start"),
              _sse({"type": "ping"}, "ping")]
    blocks = _anthropic_blocks(reply, fake)
    for index, block in enumerate(blocks):
        events += _anthropic_block_events(index, block)
    if "cut" in reply and blocks and blocks[-1]["type"] == "tool_use":
        events.pop()  # the API ends a block cut at max_tokens without its content_block_stop
    if _anthropic_stop(reply) is None:
        return events  # the stream just ends
    events.append(_sse({"type": "message_delta",
                        "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
                        "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta"))
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_block_events(index: int, block: dict[str, Any]) -> list[str]:
    start: dict[str, Any]
    if block["type"] == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
    elif block["type"] == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif block["type"] == "redacted_thinking":
        start, deltas = block, []
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _pieces(block["_raw"])]
    events = [_sse({"type": "content_block_start", "index": index, "content_block": start},
                   "content_block_start")]
    events += [_sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
               for delta in deltas]
    events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    return events


def _anthropic_error(status: int, message: str) -> dict[str, Any]:
    kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}
