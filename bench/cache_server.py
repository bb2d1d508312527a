"""A model server that bills prompt caching as the providers do, for `bench/prompt_cache.py`.

It answers a scripted session (each step a call of the agent's file-reading tool on the next
file of the workspace, or on the next `parallel` files at once, then a final text) and, for every request, counts the prompt's tokens
and which of them a real provider would have billed as cache reads, cache writes or plain
input, reporting them in the usage fields the provider uses:

Anthropic (`POST /v1/messages`, any query string): only prefixes ending at a block marked
`cache_control` are written to the cache (and at most 4 markers are allowed); the prompt is
tools, then system, then messages. A marked prefix is looked up at its marker and at up to
20 block boundaries before it; the longest prefix found is a cache read, the tokens from there
to the last marker are a cache write, the rest is `input_tokens`. A prefix shorter than 1024
tokens is never cached; entries live 5 minutes from their last use.

OpenAI (`POST /v1/chat/completions`, and `POST /v1/responses` answered whole, not streamed):
any prompt of 1024 tokens or more is cached
automatically, in steps of 128 tokens (1024, 1152, …); `prompt_tokens_details.cached_tokens`
is the longest cached prefix, the prompt being tools, then messages. Entries live 5 minutes.

Tokens: the prompt is rendered as text, each content block (or message) as its JSON with sorted
keys and without its `cache_control`, so what a tokenizer sees is what counts; a token is 4
bytes of that rendering. A prefix is "the same" when those bytes are: one changed byte early
in the prompt (a timestamp, a counter) loses the cache for everything after it.

Requests that are not the agent's steps (a title, a quota probe, a token count; any request
whose tools do not include the file-reading tool) are answered at once and billed apart.

    GET /stats    {"steps": [{"input": n, "cache_read": n, "cache_write": n, "total": n}, ...],
                   "side": [...the same for side requests...], "bodies": [step request bodies]}
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN_BYTES = 4
MIN_CACHED = 1024
OPENAI_STEP = 128
LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4
TTL_SECONDS = 300.0
READ_TOOLS = {"read_file": "path", "Read": "file_path"}  # ours, Claude Code's: the argument naming the file


@dataclass
class Bill:
    """One request's prompt, as the provider bills it (`total` = input + cache_read + cache_write)."""

    input: int
    cache_read: int
    cache_write: int
    total: int


def render(part: Any) -> bytes:
    """What a tokenizer sees of one block or message: its JSON, keys sorted, no cache_control."""
    return json.dumps(_without_cache_control(part), sort_keys=True, separators=(",", ":")).encode()


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def tokens(size: int) -> int:
    return -(-size // TOKEN_BYTES)


class PromptCache:
    """Prefix hashes → expiry time, as one provider's cache for one organisation."""

    def __init__(self) -> None:
        self._entries: dict[bytes, float] = {}
        self._lock = threading.Lock()

    def hit(self, key: bytes, now: float) -> bool:
        with self._lock:
            expiry = self._entries.get(key)
            if expiry is None or expiry < now:
                return False
            self._entries[key] = now + TTL_SECONDS
            return True

    def put(self, key: bytes, now: float) -> None:
        with self._lock:
            self._entries[key] = now + TTL_SECONDS


def anthropic_parts(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """The prompt as (rendered block, marked with cache_control) in the order the API caches it."""
    parts: list[tuple[bytes, bool]] = []
    for tool in body.get("tools") or []:
        parts.append((render(tool), "cache_control" in tool))
    system = body.get("system")
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else (system or [])
    parts += [(render(block), "cache_control" in block) for block in blocks]
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        rendered = [(render(block), "cache_control" in block) for block in blocks]
        if rendered:  # (the role is read with the message's first block: no block boundary of its own)
            rendered[0] = (message.get("role", "").encode() + rendered[0][0], rendered[0][1])
        parts += rendered
    return parts


def anthropic_bill(body: dict[str, Any], cache: PromptCache, now: float) -> Bill:
    parts = anthropic_parts(body)
    hasher = hashlib.sha256()
    ends: list[tuple[int, bytes]] = []  # (bytes so far, prefix hash) at each block's end
    size = 0
    for data, _ in parts:
        hasher.update(data)
        size += len(data)
        ends.append((size, hasher.copy().digest()))
    marks = [i for i, (_, marked) in enumerate(parts) if marked]
    if len(marks) > MAX_BREAKPOINTS:
        raise ValueError(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}.")
    total = tokens(size)
    read = 0
    for mark in marks:  # the longest cached prefix within each marker's look-back window
        for index in range(mark, max(mark - LOOKBACK_BLOCKS, -1), -1):
            length, key = ends[index]
            if tokens(length) >= MIN_CACHED and cache.hit(key, now):
                read = max(read, tokens(length))
                break
    written_to = read
    for mark in marks:
        length, key = ends[mark]
        if tokens(length) >= MIN_CACHED:
            cache.put(key, now)
            written_to = max(written_to, tokens(length))
    write = written_to - read
    return Bill(input=total - read - write, cache_read=read, cache_write=write, total=total)


def openai_text(body: dict[str, Any]) -> bytes:
    """Chat Completions' tools and messages, or the Responses API's tools, instructions and input items."""
    parts = [render(tool) for tool in body.get("tools") or []]
    if body.get("instructions"):
        parts.append(render(body["instructions"]))
    parts += [render(message) for message in body.get("messages") or body.get("input") or []]
    return b"".join(parts)


def openai_bill(body: dict[str, Any], cache: PromptCache, now: float) -> Bill:
    text = openai_text(body)
    total = tokens(len(text))
    cuts = range(MIN_CACHED, total + 1, OPENAI_STEP)
    keys = [hashlib.sha256(text[:cut * TOKEN_BYTES]).digest() for cut in cuts]
    read = 0
    for cut, key in zip(cuts, keys):
        if not cache.hit(key, now):
            break
        read = cut
    for key in keys:
        cache.put(key, now)
    return Bill(input=total - read, cache_read=read, cache_write=0, total=total)


class Script:
    """The session every agent is given: read file 1, 2, … N-1 of the workspace, then answer;
    with `parallel`, each step reads that many files at once (calls in one reply)."""

    def __init__(self, steps: int, workspace: str, parallel: int = 1) -> None:
        self.steps = steps
        self.workspace = workspace
        self.parallel = parallel

    def reply(self, step: int, tool_names: list[str]) -> list[tuple[str, dict[str, Any]]] | None:
        """The tool calls of step `step` (1-based), or None for the final answer."""
        if step >= self.steps:
            return None
        name = next(n for n in tool_names if n in READ_TOOLS)
        calls = []
        for number in range((step - 1) * self.parallel + 1, step * self.parallel + 1):
            path = f"{self.workspace}/file_{number:03d}.py" if name == "Read" else f"file_{number:03d}.py"
            calls.append((name, {READ_TOOLS[name]: path}))
        return calls


class CacheServer:
    """The billing server in a thread; `stats()` is what it counted."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.caches = {"anthropic": PromptCache(), "openai": PromptCache()}
        self.steps: list[Bill] = []
        self.side: list[Bill] = []
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.bench = self  # type: ignore[attr-defined]

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> CacheServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def stats(self) -> dict[str, Any]:
        return {"steps": [asdict(b) for b in self.steps], "side": [asdict(b) for b in self.side]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(200, self.server.bench.stats())  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        bench: CacheServer = self.server.bench  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        path = self.path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            self._json(200, {"input_tokens": tokens(len(render(body)))})
            return
        anthropic = path.endswith("/messages")
        responses = path.endswith("/responses")
        names = [t.get("name") or t.get("function", {}).get("name") for t in body.get("tools") or []]
        try:
            bill = (anthropic_bill if anthropic else openai_bill)(
                body, bench.caches["anthropic" if anthropic else "openai"], time.monotonic())
        except ValueError as exc:
            self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}})
            return
        step_request = any(n in READ_TOOLS for n in names)
        with bench.lock:
            (bench.steps if step_request else bench.side).append(bill)
            if step_request:
                bench.bodies.append(body)
            step = len(bench.steps)
        calls = bench.script.reply(step, names) if step_request else None
        answer = _anthropic_answer if anthropic else _responses_answer if responses else _openai_answer
        answer(self, body, bill, calls, f"{step:04d}")

    def _json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _events(self, events: list[str]) -> None:
        payload = "".join(events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _anthropic_answer(handler: _Handler, body: dict[str, Any], bill: Bill,
                      calls: list[tuple[str, dict[str, Any]]] | None, tag: str) -> None:
    usage = {"input_tokens": bill.input, "cache_read_input_tokens": bill.cache_read,
             "cache_creation_input_tokens": bill.cache_write, "output_tokens": 20}
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": "done"}] if calls is None else
        [{"type": "tool_use", "id": f"toolu_{tag}_{i}", "name": name, "input": arguments}
         for i, (name, arguments) in enumerate(calls)])
    stop = "end_turn" if calls is None else "tool_use"
    message = {"id": f"msg_{tag}", "type": "message", "role": "assistant", "model": body.get("model"),
               "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
    if not body.get("stream"):
        handler._json(200, message)
        return

    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events = [event("message_start", {"message": start})]
    for index, block in enumerate(blocks):
        text = block["type"] == "text"
        opened = {"type": "text", "text": ""} if text else {**block, "input": {}}
        delta = ({"type": "text_delta", "text": block["text"]} if text
                 else {"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
        events += [event("content_block_start", {"index": index, "content_block": opened}),
                   event("content_block_delta", {"index": index, "delta": delta}),
                   event("content_block_stop", {"index": index})]
    handler._events([*events, event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                                      "usage": {"output_tokens": 20}}),
                     event("message_stop", {})])


def _openai_answer(handler: _Handler, body: dict[str, Any], bill: Bill,
                   calls: list[tuple[str, dict[str, Any]]] | None, tag: str) -> None:
    usage = {"prompt_tokens": bill.total, "completion_tokens": 20, "total_tokens": bill.total + 20,
             "prompt_tokens_details": {"cached_tokens": bill.cache_read}}
    wire = None if calls is None else [{"id": f"call_{tag}_{i}", "type": "function",
                                        "function": {"name": name, "arguments": json.dumps(arguments)}}
                                       for i, (name, arguments) in enumerate(calls)]
    finish = "stop" if calls is None else "tool_calls"
    base = {"id": f"chatcmpl-{tag}", "created": 0, "model": body.get("model")}
    if not body.get("stream"):
        message = {"role": "assistant", "content": "done" if calls is None else None, "tool_calls": wire}
        handler._json(200, {**base, "object": "chat.completion", "usage": usage,
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
        return

    def chunk(delta: dict[str, Any], finish_reason: str | None, chunk_usage: Any = None) -> str:
        choices = [] if chunk_usage else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        return "data: " + json.dumps({**base, "object": "chat.completion.chunk", "choices": choices,
                                      "usage": chunk_usage}) + "\n\n"

    delta: dict[str, Any] = ({"role": "assistant", "content": "done"} if wire is None
                             else {"role": "assistant", "tool_calls": [{"index": i, **c} for i, c in enumerate(wire)]})
    handler._events([chunk(delta, None), chunk({}, finish), chunk({}, None, usage), "data: [DONE]\n\n"])


def _responses_answer(handler: _Handler, body: dict[str, Any], bill: Bill,
                      calls: list[tuple[str, dict[str, Any]]] | None, tag: str) -> None:
    """A whole Responses API answer (a stream is refused: run the agent with --no-stream)."""
    if body.get("stream"):
        handler._json(400, {"error": {"message": "the bench server answers /v1/responses whole: use --no-stream"}})
        return
    usage = {"input_tokens": bill.total, "input_tokens_details": {"cached_tokens": bill.cache_read},
             "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": bill.total + 20}
    output: list[dict[str, Any]] = (
        [{"type": "message", "id": f"msg_{tag}", "role": "assistant", "status": "completed",
          "content": [{"type": "output_text", "text": "done", "annotations": []}]}] if calls is None else
        [{"type": "function_call", "id": f"fc_{tag}_{i}", "call_id": f"call_{tag}_{i}", "name": name,
          "arguments": json.dumps(arguments), "status": "completed"} for i, (name, arguments) in enumerate(calls)])
    handler._json(200, {"id": f"resp_{tag}", "object": "response", "status": "completed", "model": body.get("model"),
                        "output": output, "usage": usage})
