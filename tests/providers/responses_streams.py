"""Responses API event streams, written in the shapes the API sends and openai-python's types
read (`response.created` … `response.completed`, each event naming its `type` twice: as the
SSE `event:` and in its data, with a `sequence_number`), for the stream oracle."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

USAGE = {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1024}, "output_tokens": 96,
         "output_tokens_details": {"reasoning_tokens": 64}, "total_tokens": 1296}
REASONING = {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Run the tests first."}],
             "encrypted_content": "gAAAAB-opaque-1"}
CALL_A = {"id": "fc_a", "type": "function_call", "status": "completed", "call_id": "call_a", "name": "run_shell",
          "arguments": '{"command": "pytest -q"}'}
CALL_B = {"id": "fc_b", "type": "function_call", "status": "completed", "call_id": "call_b", "name": "read_file",
          "arguments": '{"path": "src/a.py"}'}


def _response(status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None = None,
              **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1767225600, "model": "gpt-5-oracle",
            "status": status, "error": None, "incomplete_details": None, "instructions": None,
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": usage, **extra}


class _Stream:
    def __init__(self) -> None:
        self.numbers = count()
        self.events: list[str] = []

    def __call__(self, kind: str, **fields: Any) -> _Stream:
        data = json.dumps({"type": kind, "sequence_number": next(self.numbers), **fields})
        self.events.append(f"event: {kind}\ndata: {data}\n\n")
        return self

    def start(self) -> _Stream:
        self("response.created", response=_response("in_progress", []))
        return self("response.in_progress", response=_response("in_progress", []))

    def message(self, index: int, text: str, *pieces: str, kind: str = "output_text") -> dict[str, Any]:
        item_id = f"msg_{index}"
        ids = {"item_id": item_id, "output_index": index, "content_index": 0}
        done_part = ({"type": "output_text", "text": text, "annotations": [], "logprobs": []} if kind == "output_text"
                     else {"type": "refusal", "refusal": text})
        empty = {**done_part, kind if kind == "refusal" else "text": ""}
        item = {"id": item_id, "type": "message", "role": "assistant", "status": "completed", "content": [done_part]}
        self("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
        self("response.content_part.added", **ids, part=empty)
        for piece in pieces:
            self(f"response.{'output_text' if kind == 'output_text' else 'refusal'}.delta", **ids, delta=piece,
                 **({"logprobs": []} if kind == "output_text" else {}))
        if kind == "output_text":
            self("response.output_text.done", **ids, text=text, logprobs=[])
        else:
            self("response.refusal.done", **ids, refusal=text)
        self("response.content_part.done", **ids, part=done_part)
        self("response.output_item.done", output_index=index, item=item)
        return item

    def reasoning(self, index: int, item: dict[str, Any]) -> dict[str, Any]:
        ids = {"item_id": item["id"], "output_index": index}
        self("response.output_item.added", output_index=index, item={**item, "summary": [], "encrypted_content": None})
        text = item["summary"][0]["text"]
        self("response.reasoning_summary_part.added", **ids, summary_index=0, part={"type": "summary_text", "text": ""})
        for piece in (text[:7], text[7:]):
            self("response.reasoning_summary_text.delta", **ids, summary_index=0, delta=piece)
        self("response.reasoning_summary_text.done", **ids, summary_index=0, text=text)
        self("response.reasoning_summary_part.done", **ids, summary_index=0, part={"type": "summary_text", "text": text})
        self("response.output_item.done", output_index=index, item=item)
        return item

    def call(self, index: int, item: dict[str, Any], *, cut: int | None = None) -> dict[str, Any]:
        ids = {"item_id": item["id"], "output_index": index}
        arguments = item["arguments"] if cut is None else item["arguments"][:cut]
        self("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""})
        for start in range(0, len(arguments), 6):
            self("response.function_call_arguments.delta", **ids, delta=arguments[start:start + 6])
        if cut is not None:
            return {**item, "status": "incomplete", "arguments": arguments}
        self("response.function_call_arguments.done", **ids, arguments=arguments)
        self("response.output_item.done", output_index=index, item=item)
        return item

    def text(self) -> str:
        return "".join(self.events)


def _text() -> str:
    s = _Stream().start()
    item = s.message(0, "Hello, world.", "Hel", "lo, wo", "rld.")
    return s("response.completed", response=_response("completed", [item], USAGE)).text()


def _reasoning_then_two_calls() -> str:
    s = _Stream().start()
    output = [s.reasoning(0, REASONING), s.call(1, CALL_A), s.call(2, CALL_B)]
    return s("response.completed", response=_response("completed", output, USAGE)).text()


def _incomplete_mid_call() -> str:
    s = _Stream().start()
    output = [s.reasoning(0, REASONING), s.call(1, CALL_A, cut=11)]
    response = _response("incomplete", output, USAGE, incomplete_details={"reason": "max_output_tokens"})
    return s("response.incomplete", response=response).text()


def _refusal() -> str:
    s = _Stream().start()
    item = s.message(0, "I can't help with that.", "I can't ", "help with that.", kind="refusal")
    return s("response.completed", response=_response("completed", [item], USAGE)).text()


def _failed() -> str:
    s = _Stream().start()
    s.message(0, "Partial", "Part", "ial")
    error = {"code": "server_error", "message": "The server had an error while processing your request."}
    return s("response.failed", response=_response("failed", [], None, error=error)).text()


def _error_event() -> str:
    s = _Stream().start()
    return s("error", code="rate_limit_exceeded", message="Rate limit reached", param=None).text()


def _ends_without_completed() -> str:
    s = _Stream().start()
    s.message(0, "Hello", "Hel", "lo")
    return s.text()


def _keepalives_and_crlf() -> str:
    s = _Stream().start()
    item = s.message(0, "two", "t", "wo")
    text = s("response.completed", response=_response("completed", [item], USAGE)).text()
    return ": keep-alive\r\n\r\n" + text.replace("\n", "\r\n")


def _data_only_and_done() -> str:
    """Events with no `event:` field (their type in the data only), then the chat wire's `[DONE]`."""
    s = _Stream().start()
    item = s.message(0, "plain", "pla", "in")
    s("response.completed", response=_response("completed", [item], USAGE))
    events = [event.partition("\n")[2] for event in s.events]
    return "".join(events) + "data: [DONE]\n\n"


def _done_without_completed() -> str:
    s = _Stream().start()
    s.message(0, "cut", "cut")
    return s.text() + "data: [DONE]\n\n"


RESPONSES = {"text": _text(), "reasoning-then-two-calls": _reasoning_then_two_calls(),
             "incomplete-mid-call": _incomplete_mid_call(), "refusal": _refusal(), "failed": _failed(),
             "error-event": _error_event(), "ends-without-completed": _ends_without_completed(),
             "keepalives-and-crlf": _keepalives_and_crlf(), "data-only-and-done": _data_only_and_done(),
             "done-without-completed": _done_without_completed()}
