"""An instant model server for benchmarks, OpenAI (both APIs) and Anthropic wire: answers before the client can blink.

Every `POST /v1/chat/completions` (OpenAI Chat Completions), `POST /v1/messages` (Anthropic
Messages) and `POST /v1/responses` (OpenAI Responses, the only wire Codex CLI speaks; a query
string such as `?beta=true` is ignored) gets a pre-encoded reply: a call of the tool `--tool`
(default `run_shell`) with `--arguments` (default `{"command": "true"}`) for requests
1 … N-1, then for request N (and after) the text `done` — or, with `--final-arguments`, one
more call of the tool with those arguments (how mini-swe-agent is told to stop). Whole JSON
or server-sent events, whichever the request's `"stream": true` asks for; a Responses stream
is `response.created`, `response.output_item.added` and `.done` (a `function_call` item, or a
`message` with the final text) and `response.completed` with usage, each a named event, which
is all Codex reads. HTTP/1.1 keep-alive, so the timed loop never pays for connection setup.
The only per-request work is reading the body and splicing a fixed-width call id into the
template (every place it appears: a Responses item names it more than once).

A request whose body does not name the tool (a client's side request: a title, a quota
probe, a token count) is answered with the text at once and logged apart, so only the
agent's own steps are counted.

    GET /stats   {"requests": n, "arrivals": [perf_counter seconds at which each step request was read],
                  "sizes": [body bytes of each], "paths": [...], "side": [[perf_counter, path, bytes], ...]}
    GET /first   the first step request body, verbatim (the raw baseline replays its shape)

`perf_counter` is CLOCK_MONOTONIC on Linux, the same clock in every process, so a client's
start time and the server's arrival times can be subtracted.

Run it as its own process so its CPU is not charged to the client being measured::

    python bench/instant_server.py --steps 500      # prints the port on the first line

or in a thread with `InstantServer(steps).start_thread()` for quick experiments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from typing import Any

OPENAI_PATH = b"/v1/chat/completions"
ANTHROPIC_PATH = b"/v1/messages"
RESPONSES_PATH = b"/v1/responses"
SHELL_ARGS: dict[str, Any] = {"command": "true"}
FINAL_TEXT = "done"
ID_MARK = "call_XXXXXXXX"  # replaced by `call_%08d`, same width, so Content-Length stays right


def _sse(data: object, event: str | None = None) -> bytes:
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


# -- OpenAI Chat Completions ------------------------------------------------------------------------


def _openai_usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _openai_call(call_id: str, tool: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}


def whole_body(call_id: str | None, tool: str = "run_shell", arguments: str = json.dumps(SHELL_ARGS)) -> bytes:
    """A non-streamed chat.completion: a tool call when `call_id` is given, else the final text."""
    message: dict[str, object] = {"role": "assistant", "content": None if call_id else FINAL_TEXT}
    if call_id:
        message["tool_calls"] = [_openai_call(call_id, tool, arguments)]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if call_id else "stop"}
    return json.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "created": 0,
                       "model": "bench", "choices": [choice], "usage": _openai_usage()}).encode()


def stream_body(call_id: str | None, tool: str = "run_shell", arguments: str = json.dumps(SHELL_ARGS)) -> bytes:
    """The same answer as server-sent events: role, content or tool call, finish, usage, [DONE]."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    parts = [chunk({"role": "assistant", "content": ""})]
    if call_id:
        parts.append(chunk({"tool_calls": [{"index": 0, **_openai_call(call_id, tool, arguments)}]}))
        parts.append(chunk({}, "tool_calls"))
    else:
        parts += [chunk({"content": FINAL_TEXT}), chunk({}, "stop")]
    parts += [_sse({**head, "choices": [], "usage": _openai_usage()}), b"data: [DONE]\n\n"]
    return b"".join(parts)


# -- Anthropic Messages -----------------------------------------------------------------------------


def _anthropic_block(call_id: str | None, tool: str, arguments: str) -> dict[str, object]:
    if call_id:
        return {"type": "tool_use", "id": call_id, "name": tool, "input": json.loads(arguments)}
    return {"type": "text", "text": FINAL_TEXT}


def anthropic_whole(call_id: str | None, tool: str = "run_shell", arguments: str = json.dumps(SHELL_ARGS)) -> bytes:
    """A non-streamed Messages reply: one tool_use block when `call_id` is given, else the final text."""
    return json.dumps({"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench",
                       "content": [_anthropic_block(call_id, tool, arguments)],
                       "stop_reason": "tool_use" if call_id else "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": 10, "output_tokens": 5}}).encode()


def anthropic_stream(call_id: str | None, tool: str = "run_shell", arguments: str = json.dumps(SHELL_ARGS)) -> bytes:
    """The same answer as the Messages event stream: message_start, one block, message_delta, message_stop."""
    start = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench", "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    if call_id:
        block: dict[str, object] = {"type": "tool_use", "id": call_id, "name": tool, "input": {}}
        delta: dict[str, object] = {"type": "input_json_delta", "partial_json": arguments}
    else:
        block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": FINAL_TEXT}
    return b"".join([
        _sse({"type": "message_start", "message": start}, "message_start"),
        _sse({"type": "content_block_start", "index": 0, "content_block": block}, "content_block_start"),
        _sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
        _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        _sse({"type": "message_delta", "delta": {"stop_reason": "tool_use" if call_id else "end_turn",
                                                 "stop_sequence": None}, "usage": {"output_tokens": 5}},
             "message_delta"),
        _sse({"type": "message_stop"}, "message_stop"),
    ])


# -- OpenAI Responses (the only wire Codex CLI speaks) -----------------------------------------------


def _responses_item(call_id: str | None, tool: str, arguments: str) -> dict[str, object]:
    if call_id:
        return {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": tool,
                "arguments": arguments, "status": "completed"}
    return {"type": "message", "id": "msg_bench", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]}


def _response(status: str, output: list[dict[str, object]]) -> dict[str, object]:
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    return {"id": "resp_bench", "object": "response", "created_at": 0, "model": "bench", "status": status,
            "output": output, "usage": usage if status == "completed" else None}


def responses_whole(call_id: str | None, tool: str = "run_shell", arguments: str = json.dumps(SHELL_ARGS)) -> bytes:
    """A non-streamed Responses answer: one `function_call` item when `call_id` is given, else a `message`."""
    return json.dumps(_response("completed", [_responses_item(call_id, tool, arguments)])).encode()


def responses_stream(call_id: str | None, tool: str = "run_shell", arguments: str = json.dumps(SHELL_ARGS)) -> bytes:
    """The same answer as the Responses event stream: created, the item added and done, completed with usage."""
    item = _responses_item(call_id, tool, arguments)
    events: list[dict[str, object]] = [
        {"type": "response.created", "sequence_number": 0, "response": _response("in_progress", [])},
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
         "item": {**item, "status": "in_progress"}},
        {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item},
        {"type": "response.completed", "sequence_number": 3, "response": _response("completed", [item])},
    ]
    return b"".join(_sse(event, str(event["type"])) for event in events)


def http_response(body: bytes, content_type: bytes) -> bytes:
    """Status line, headers and body in one buffer, written with one call."""
    return (b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\nConnection: keep-alive\r\n\r\n" + body)


JSON, SSE = b"application/json", b"text/event-stream"


class InstantServer:
    """Pre-encoded replies and a request log; `serve()` runs it on an asyncio loop."""

    def __init__(self, steps: int, port: int = 0, tool: str = "run_shell",
                 arguments: dict[str, Any] | None = None, final_arguments: dict[str, Any] | None = None) -> None:
        self.steps = steps
        self.port = port
        self.tool = tool
        self.arrivals: list[float] = []
        self.sizes: list[int] = []
        self.paths: list[str] = []
        self.side: list[tuple[float, str, int]] = []
        self.first_body = b""
        self._tool_mark = (b'"name":"%s"' % tool.encode(), b'"name": "%s"' % tool.encode())
        args = json.dumps(SHELL_ARGS if arguments is None else arguments)
        final = json.dumps(final_arguments) if final_arguments is not None else None
        openai = {False: (whole_body, JSON), True: (stream_body, SSE)}
        anthropic = {False: (anthropic_whole, JSON), True: (anthropic_stream, SSE)}
        responses = {False: (responses_whole, JSON), True: (responses_stream, SSE)}
        self._tool: dict[tuple[bytes, bool], bytes] = {}
        self._final: dict[tuple[bytes, bool], bytes] = {}
        self._text: dict[tuple[bytes, bool], bytes] = {}
        for path, forms in ((OPENAI_PATH, openai), (ANTHROPIC_PATH, anthropic), (RESPONSES_PATH, responses)):
            for streaming, (render, kind) in forms.items():
                key = (path, streaming)
                self._tool[key] = http_response(render(ID_MARK, tool, args), kind)
                self._text[key] = http_response(render(None, tool, args), kind)
                self._final[key] = (http_response(render(ID_MARK, tool, final), kind) if final is not None
                                    else self._text[key])
        self.ready = threading.Event()

    def reply(self, path: bytes, body: bytes) -> bytes:
        """The bytes to send for the request just received."""
        now = time.perf_counter()
        streaming = b'"stream":true' in body or b'"stream": true' in body
        key = (path, streaming)
        if not any(mark in body for mark in self._tool_mark):  # a side request, not a step
            self.side.append((now, path.decode(), len(body)))
            return self._text[key]
        self.arrivals.append(now)
        self.sizes.append(len(body))
        self.paths.append(path.decode())
        n = len(self.arrivals)
        if n == 1:
            self.first_body = body
        template = self._final[key] if n >= self.steps else self._tool[key]
        return template.replace(ID_MARK.encode(), b"call_%08d" % n)

    def stats(self) -> bytes:
        return json.dumps({"requests": len(self.arrivals), "arrivals": self.arrivals, "sizes": self.sizes,
                           "paths": self.paths, "side": self.side}).encode()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path = head.split(b" ", 2)[:2]
                length = _content_length(head)
                body = await reader.readexactly(length) if length else b""
                writer.write(self._route(method, path.split(b"?", 1)[0], body))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _route(self, method: bytes, path: bytes, body: bytes) -> bytes:
        if method == b"POST" and path in (OPENAI_PATH, ANTHROPIC_PATH, RESPONSES_PATH):
            return self.reply(path, body)
        if path == b"/stats":
            return http_response(self.stats(), JSON)
        if path == b"/first":
            return http_response(self.first_body, JSON)
        if method == b"POST":  # e.g. /v1/messages/count_tokens: something harmless
            self.side.append((time.perf_counter(), path.decode(), len(body)))
            return http_response(b'{"input_tokens": 10}', JSON)
        return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"

    async def serve(self) -> None:
        """Listen on 127.0.0.1 and serve until cancelled; `self.port` holds the bound port."""
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, limit=1 << 24)
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        async with server:
            await server.serve_forever()

    def start_thread(self) -> InstantServer:
        """Serve from a daemon thread; returns once the port is bound."""
        threading.Thread(target=asyncio.run, args=(self.serve(),), daemon=True).start()
        self.ready.wait()
        return self


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            return int(line[15:])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="request number that gets the final reply")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tool", default="run_shell", help="the tool every step calls")
    parser.add_argument("--arguments", type=json.loads, default=None, help='JSON; default {"command": "true"}')
    parser.add_argument("--final-arguments", type=json.loads, default=None,
                        help="JSON: the last reply calls the tool with these instead of answering in text")
    args = parser.parse_args()
    server = InstantServer(args.steps, args.port, args.tool, args.arguments, args.final_arguments)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        await asyncio.to_thread(server.ready.wait)
        print(server.port, flush=True)
        await task

    asyncio.run(run())


if __name__ == "__main__":
    main()
