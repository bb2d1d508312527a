"""`-o stream-json` and `-o json`: Claude-Code-compatible JSON on stdout (SPEC §4)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from ..core.events import (
    AgentEvent,
    ApiRetry,
    MessageAdded,
    Notice,
    PermissionDenied,
    RunFinished,
    RunStarted,
    notice_fields,
)
from ..core.messages import Message

SCHEMA_VERSION = 1
# Characters that str.splitlines() and some JSON-lines readers take for line ends; JSON lets
# them stand raw inside strings, so they are escaped to keep one record on one line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def result_record(event: RunFinished) -> dict[str, Any]:
    """The `result` object: the last stream line and the whole of `-o json`."""
    record: dict[str, Any] = {
        "type": "result", "subtype": event.subtype, "is_error": event.is_error,
        "result": event.result, "session_id": event.session_id, "num_turns": event.num_turns,
        "num_steps": event.num_steps, "duration_ms": event.duration_ms,
        "usage": {"input_tokens": event.usage.input_tokens, "output_tokens": event.usage.output_tokens},
        "total_cost_usd": event.total_cost_usd, "finish_reason": event.finish_reason,
        "schema_version": SCHEMA_VERSION,
    }
    if event.error:
        record["error"] = event.error
    if event.goal is not None:
        record["goal"] = event.goal.model_dump(mode="json")
    if event.structured_output is not None:  # --output-schema's validated answer, as Claude Code names it
        record["structured_output"] = event.structured_output
    return record


def system_line(event: Notice, session_id: str) -> dict[str, Any]:
    """A driver's or feature's event as a stream-json `system` line."""
    return {"type": "system", "subtype": event.type, **notice_fields(event), "session_id": session_id}


def message_record(message: Message, session_id: str) -> dict[str, Any] | None:
    """An `assistant` or `user` (tool result) line for a transcript message, or None."""
    if message.role == "assistant":
        content: list[dict[str, Any]] = []
        if message.content:
            content.append({"type": "text", "text": message.content})
        for call in message.tool_calls:
            content.append({"type": "tool_use", "id": call.id, "name": call.name,
                            "input": _input(call.arguments)})
        return {"type": "assistant", "message": {"role": "assistant", "content": content},
                "session_id": session_id}
    if message.role == "tool":
        block = {"type": "tool_result", "tool_use_id": message.tool_call_id,
                 "content": message.content, "is_error": message.is_error}
        return {"type": "user", "message": {"role": "user", "content": [block]},
                "session_id": session_id}
    return None


def _ascii_only(out: TextIO) -> bool:
    """Whether `out` cannot take UTF-8 (`PYTHONIOENCODING=ascii`): JSON then escapes non-ASCII
    text as \\uXXXX, which loses nothing, rather than have it replaced."""
    encoding = (getattr(out, "encoding", None) or "utf-8").lower().replace("_", "-")
    return encoding not in ("utf-8", "utf8", "utf-16", "utf-32")


def _input(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except ValueError:
        return {"_raw": arguments}


class StreamJsonSink:
    """Writes one JSON object per line, flushed per line."""

    def __init__(self, out: TextIO, session_id: str) -> None:
        self._out = out
        self.session_id = session_id

    def emit(self, event: AgentEvent) -> None:
        record = self._record(event)
        if record is not None:
            line = json.dumps(record, ensure_ascii=_ascii_only(self._out))
            self._out.write(line.translate(_LINE_BREAKS) + "\n")
            self._out.flush()

    def _record(self, event: AgentEvent) -> dict[str, Any] | None:
        if isinstance(event, RunStarted):
            return {"type": "system", "subtype": "init", "schema_version": SCHEMA_VERSION,
                    "session_id": event.session_id, "cwd": event.cwd, "model": event.model,
                    "provider": event.provider, "tools": event.tools,
                    "permission_mode": event.permission_mode}
        if isinstance(event, MessageAdded):
            return message_record(event.message, self.session_id)
        if isinstance(event, ApiRetry):
            return {"type": "system", "subtype": "api_retry", "attempt": event.attempt,
                    "max_retries": event.max_retries, "retry_delay_ms": event.retry_delay_ms,
                    "error_status": event.error_status, "error": event.error,
                    "session_id": self.session_id}
        if isinstance(event, PermissionDenied):
            return {"type": "system", "subtype": "permission_denied", "tool_name": event.tool,
                    "tool_use_id": event.tool_use_id, "subject": event.subject,
                    "reason": event.reason, "session_id": self.session_id}
        if isinstance(event, Notice):
            return system_line(event, self.session_id)
        if isinstance(event, RunFinished):
            return result_record(event)
        return None


class JsonResultSink:
    """`-o json`: only the final result object."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, RunFinished):
            self._out.write(json.dumps(result_record(event), ensure_ascii=_ascii_only(self._out),
                                       indent=2) + "\n")
            self._out.flush()
