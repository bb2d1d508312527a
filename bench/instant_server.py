"""An instant OpenAI-compatible server for benchmarks: answers before the client can blink.

Every `POST /v1/chat/completions` gets a pre-encoded reply — a `run_shell` call of `true` for
requests 1 … N-1, then a final text for request N (and after). Whole JSON or server-sent
events, whichever the request's `"stream": true` asks for. HTTP/1.1 keep-alive, so the
timed loop never pays for connection setup. The only per-request work is reading the body
and splicing a fixed-width call id into the template.

    GET /stats   {"requests": n, "arrivals": [perf_counter seconds at which each request was read],
                  "sizes": [body bytes of each request]}
    GET /first   the first request body, verbatim (the raw baseline replays its shape)

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

PATH = b"/v1/chat/completions"
SHELL_ARGS = json.dumps({"command": "true"})
FINAL_TEXT = "done"


def _sse(data: object) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _call(call_id: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": "run_shell", "arguments": SHELL_ARGS}}


def whole_body(call_id: str | None) -> bytes:
    """A non-streamed chat.completion: a tool call when `call_id` is given, else the final text."""
    message: dict[str, object] = {"role": "assistant", "content": None if call_id else FINAL_TEXT}
    if call_id:
        message["tool_calls"] = [_call(call_id)]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if call_id else "stop"}
    return json.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "created": 0,
                       "model": "bench", "choices": [choice], "usage": _usage()}).encode()


def stream_body(call_id: str | None) -> bytes:
    """The same answer as server-sent events: role, content or tool call, finish, usage, [DONE]."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    parts = [chunk({"role": "assistant", "content": ""})]
    if call_id:
        parts.append(chunk({"tool_calls": [{"index": 0, **_call(call_id)}]}))
        parts.append(chunk({}, "tool_calls"))
    else:
        parts += [chunk({"content": FINAL_TEXT}), chunk({}, "stop")]
    parts += [_sse({**head, "choices": [], "usage": _usage()}), b"data: [DONE]\n\n"]
    return b"".join(parts)


def http_response(body: bytes, content_type: bytes) -> bytes:
    """Status line, headers and body in one buffer, written with one call."""
    return (b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\nConnection: keep-alive\r\n\r\n" + body)


ID_MARK = "call_XXXXXXXX"  # replaced by `call_%08d`, same width, so Content-Length stays right


class InstantServer:
    """Pre-encoded replies and a request log; `serve()` runs it on an asyncio loop."""

    def __init__(self, steps: int, port: int = 0) -> None:
        self.steps = steps
        self.port = port
        self.arrivals: list[float] = []
        self.sizes: list[int] = []
        self.first_body = b""
        self._tool = {False: http_response(whole_body(ID_MARK), b"application/json"),
                      True: http_response(stream_body(ID_MARK), b"text/event-stream")}
        self._final = {False: http_response(whole_body(None), b"application/json"),
                       True: http_response(stream_body(None), b"text/event-stream")}
        self.ready = threading.Event()

    def reply(self, body: bytes) -> bytes:
        """The bytes to send for the request just received."""
        self.arrivals.append(time.perf_counter())
        self.sizes.append(len(body))
        n = len(self.arrivals)
        if n == 1:
            self.first_body = body
        streaming = b'"stream":true' in body or b'"stream": true' in body
        if n >= self.steps:
            return self._final[streaming]
        return self._tool[streaming].replace(ID_MARK.encode(), b"call_%08d" % n, 1)

    def stats(self) -> bytes:
        return json.dumps({"requests": len(self.arrivals), "arrivals": self.arrivals, "sizes": self.sizes}).encode()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path = head.split(b" ", 2)[:2]
                length = _content_length(head)
                body = await reader.readexactly(length) if length else b""
                writer.write(self._route(method, path, body))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _route(self, method: bytes, path: bytes, body: bytes) -> bytes:
        if method == b"POST" and path == PATH:
            return self.reply(body)
        if path == b"/stats":
            return http_response(self.stats(), b"application/json")
        if path == b"/first":
            return http_response(self.first_body, b"application/json")
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
    parser.add_argument("--steps", type=int, default=500, help="request number that gets the final text")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = InstantServer(args.steps, args.port)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        await asyncio.to_thread(server.ready.wait)
        print(server.port, flush=True)
        await task

    asyncio.run(run())


if __name__ == "__main__":
    main()
