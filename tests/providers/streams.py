"""Our own recorded-style streams, in both formats, covering what the SDKs' recorded streams
cover (text, tool use with partial JSON, thinking, several blocks and calls, usage, refusals,
output limits, errors mid-stream, pings, unknown events) and the framing corners (CRLF, comments,
data over several lines, bytes after the end)."""

from __future__ import annotations

import json
from typing import Any


def sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


# -- Anthropic Messages -------------------------------------------------------------------------------


def _start(usage: dict[str, int] | None = None) -> str:
    usage = usage or {"input_tokens": 25, "cache_creation_input_tokens": 7, "cache_read_input_tokens": 400,
                      "output_tokens": 1}
    return sse({"type": "message_start", "message": {"id": "msg_ours_1", "type": "message", "role": "assistant",
                                                     "model": "claude-oracle", "content": [], "stop_reason": None,
                                                     "stop_sequence": None, "usage": usage}}, "message_start")


def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]], stop: bool = True) -> str:
    out = sse({"type": "content_block_start", "index": index, "content_block": block}, "content_block_start")
    out += "".join(sse({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
                   for d in deltas)
    if stop:
        out += sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    return out


def _text(index: int, *pieces: str) -> str:
    return _block(index, {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces])


def _tool(index: int, call_id: str, name: str, *pieces: str, stop: bool = True) -> str:
    return _block(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                  [{"type": "input_json_delta", "partial_json": p} for p in pieces], stop)


def _end(stop_reason: str, output_tokens: int = 42, **usage: Any) -> str:
    return (sse({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                 "usage": {"output_tokens": output_tokens, **usage}}, "message_delta")
            + sse({"type": "message_stop"}, "message_stop"))


PING = sse({"type": "ping"}, "ping")

ANTHROPIC: dict[str, str] = {
    "text": _start() + PING + _text(0, "Hello", " there", ", wörld ✓", "") + _end("end_turn"),
    "tool-use-partial-json": (
        _start() + _text(0, "I'll look.") + PING
        + _tool(1, "toolu_01", "read_file", "", '{"pa', 'th": "src/ü', 'nï.py", "li', 'mit": 3', "}")
        + _end("tool_use", 61)),
    "thinking-then-two-calls": (
        _start()
        + _block(0, {"type": "thinking", "thinking": "", "signature": ""},
                 [{"type": "thinking_delta", "thinking": "The user wants"},
                  {"type": "thinking_delta", "thinking": " the tests run."},
                  {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}])
        + _text(1, "Running both.")
        + _tool(2, "toolu_a", "run_shell", '{"command": ', '"pytest -q"}')
        + _tool(3, "toolu_b", "run_shell", '{"command": "ruff check ."}')
        + _end("tool_use", 90)),
    "redacted-thinking-and-thinking-tokens": (
        _start()
        + _block(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"}, [])
        + _block(1, {"type": "thinking", "thinking": "", "signature": ""},
                 [{"type": "thinking_delta", "thinking": "Next, the lint. Ünïcode ✓"},
                  {"type": "signature_delta", "signature": "ErUBCkYIBRgCIkB+/=="}])
        + _tool(2, "toolu_c", "run_shell", '{"command": "ruff check ."}')
        + _end("tool_use", 120, output_tokens_details={"thinking_tokens": 97})),
    "unknown-events-and-blocks": (
        _start() + ": a comment line\n\n"
        + sse({"type": "content_block_start", "index": 9, "note": "no event name: skipped"})
        + sse({"type": "message_annotation", "detail": "an event type of tomorrow"}, "message_annotation")
        + _text(0, "Answer") + _end("end_turn", 3)),
    "usage-updated-at-the-end": (
        _start({"input_tokens": 0, "output_tokens": 0}) + _text(0, "ok")
        + _end("end_turn", 12, input_tokens=30, cache_read_input_tokens=900, cache_creation_input_tokens=11)),
    "max-tokens-mid-call": (
        _start() + _text(0, "Writing the file.")
        + _tool(1, "toolu_cut", "write_file", '{"path": "notes.txt", "content": "line 1\\n', 'line 2',
                stop=False)
        + _end("max_tokens", 8192)),
    "refusal": _start() + _text(0) + _end("refusal", 0),
    "overloaded-mid-stream": (
        _start() + _text(0, "Partial")
        + sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error")),
    "ends-without-stop": _start() + _text(0, "cut off here"),
    "crlf": (_start() + _text(0, "carriage", " returns") + _end("end_turn")).replace("\n", "\r\n"),
}


# -- OpenAI Chat Completions ------------------------------------------------------------------------


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0,
           choices: list[dict[str, Any]] | None = None, **extra: Any) -> str:
    if choices is None:
        choices = [{"index": index, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
    return sse({"id": "chatcmpl-ours", "object": "chat.completion.chunk", "created": 1767225600,
                "model": "gpt-oracle", "system_fingerprint": "fp_ours", "choices": choices, **extra})


def _usage(prompt: int = 120, completion: int = 17, cached: int = 64) -> str:
    return _chunk(choices=[], usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion,
                                     "prompt_tokens_details": {"cached_tokens": cached}})


def _call(index: int, call_id: str | None = None, name: str | None = None, arguments: str = "") -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        fragment.update(id=call_id, type="function")
        fragment["function"]["name"] = name
    return {"tool_calls": [fragment]}


DONE = "data: [DONE]\n\n"
_ROLE = _chunk({"role": "assistant", "content": "", "refusal": None})

OPENAI: dict[str, str] = {
    "text": _ROLE + "".join(_chunk({"content": p}) for p in ["Hel", "lo, wö", "rld ✓"])
    + _chunk({}, "stop") + _usage() + DONE,
    "tool-calls-in-pieces": (
        _chunk({"role": "assistant", "content": None, "refusal": None})
        + _chunk(_call(0, "call_one", "read_file")) + _chunk(_call(0, arguments='{"pa'))
        + _chunk(_call(0, arguments='th": "ü.py"}'))
        + _chunk(_call(1, "call_two", "run_shell", '{"command"')) + _chunk(_call(1, arguments=': "ls"}'))
        + _chunk({}, "tool_calls") + _usage() + DONE),
    "refusal": (_chunk({"role": "assistant", "content": None, "refusal": ""})
                + "".join(_chunk({"refusal": p}) for p in ["I can't", " help with that."])
                + _chunk({}, "stop") + _usage(completion=5) + DONE),
    "length": _ROLE + _chunk({"content": "a long answer that"}) + _chunk({}, "length") + _usage() + DONE,
    "no-usage": _ROLE + _chunk({"content": "no usage chunk"}) + _chunk({}, "stop") + DONE,
    "error-mid-stream": _ROLE + _chunk({"content": "Part"}) + sse({"error": {"message": "The server had an error",
                                                                             "type": "server_error"}}),
    "ends-without-finish": _ROLE + _chunk({"content": "cut off"}),
    "bytes-after-done": _ROLE + _chunk({"content": "ok"}) + _chunk({}, "stop") + DONE + "data: {not json\n\n",
    "comments-crlf-and-multiline-data": (
        ": keep-alive\r\n\r\n" + _ROLE.replace("\n", "\r\n")
        + 'data: {"id":"chatcmpl-ours","object":"chat.completion.chunk","created":1767225600,\n'
          'data: "model":"gpt-oracle","choices":[{"index":0,"delta":{"content":"two lines"},\n'
          'data: "finish_reason":null}]}\n\n'
        + _chunk({}, "stop").replace("\n", "\r") + DONE),
    "two-choices": (
        _chunk(choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None},
                        {"index": 1, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        + _chunk({"content": "first"}, index=0) + _chunk({"content": "second"}, index=1)
        + _chunk({}, "stop", index=1) + _chunk({}, "stop", index=0) + _usage() + DONE),
}
