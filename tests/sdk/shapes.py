"""SPEC §4 (schema_version 2): the fields each stdout line must have, with their JSON types."""

from __future__ import annotations

from typing import Any

_STR, _INT, _BOOL, _LIST, _DICT = str, int, bool, list, dict
_NUMBER = (int, float)
_NULLABLE_STR = (str, type(None))

INIT = {"type": _STR, "subtype": _STR, "schema_version": _INT, "session_id": _STR, "uuid": _STR,
        "cwd": _STR, "model": _STR, "tools": _LIST, "mcp_servers": _LIST, "permissionMode": _STR,
        "apiKeySource": _STR, "slash_commands": _LIST, "output_style": _STR}
# A subagent's lines carry the id of the parent's Agent (task) call; the main conversation's None.
_PARENT = (str, type(None))
ASSISTANT = {"type": _STR, "message": _DICT, "parent_tool_use_id": _PARENT, "session_id": _STR,
             "uuid": _STR}
ASSISTANT_MESSAGE = {"id": _STR, "type": _STR, "role": _STR, "model": _STR, "content": _LIST,
                     "stop_reason": _NULLABLE_STR, "usage": _DICT}
USER = {"type": _STR, "message": _DICT, "parent_tool_use_id": _PARENT, "session_id": _STR, "uuid": _STR}
TOOL_RESULT = {"type": _STR, "tool_use_id": _STR, "content": (str, list), "is_error": _BOOL}
STREAM_EVENT = {"type": _STR, "event": _DICT, "session_id": _STR, "uuid": _STR}
SYSTEM = {"type": _STR, "subtype": _STR, "session_id": _STR, "uuid": _STR}
RESULT = {"type": _STR, "subtype": _STR, "is_error": _BOOL, "result": _STR, "session_id": _STR,
          "uuid": _STR, "num_turns": _INT, "duration_ms": _INT, "duration_api_ms": _INT,
          "stop_reason": _NULLABLE_STR, "usage": _DICT, "modelUsage": _DICT,
          "total_cost_usd": (int, float, type(None)), "permission_denials": _LIST, "errors": _LIST,
          "finish_reason": _STR, "schema_version": _INT}
USAGE = {"input_tokens": _INT, "output_tokens": _INT, "cache_read_input_tokens": _INT,
         "cache_creation_input_tokens": _INT}
DENIAL = {"tool_name": _STR, "tool_use_id": _STR, "tool_input": _DICT}
CONTROL_RESPONSE = {"type": _STR, "response": _DICT}
CONTROL_REQUEST = {"type": _STR, "request_id": _STR, "request": _DICT}
TRANSCRIPT_MIRROR = {"type": _STR, "filePath": _STR, "entries": _LIST}  # --session-mirror


def has(record: dict[str, Any], shape: dict[str, Any], what: str) -> None:
    """Assert that `record` has every field of `shape`, each of its type."""
    for key, kind in shape.items():
        assert key in record, f"{what} line without {key!r}: {record}"
        value = record[key]
        assert isinstance(value, kind) and not (kind is _INT and isinstance(value, bool)), \
            f"{what} line: {key!r} is {value!r}: {record}"


def check_line(record: dict[str, Any]) -> None:
    """Check one stdout line against the shape SPEC §4 gives its type."""
    kind = record.get("type")
    if kind == "system" and record.get("subtype") == "init":
        has(record, INIT, "init")
        assert record["schema_version"] == 2
    elif kind == "system":
        has(record, SYSTEM, "system")
    elif kind == "assistant":
        has(record, ASSISTANT, "assistant")
        has(record["message"], ASSISTANT_MESSAGE, "assistant message")
        has(record["message"]["usage"], USAGE, "assistant usage")
        for block in record["message"]["content"]:
            assert block["type"] in ("text", "tool_use", "thinking", "redacted_thinking"), block
            if block["type"] == "tool_use":
                has(block, {"id": _STR, "name": _STR, "input": _DICT}, "tool_use")
            elif block["type"] == "thinking":
                has(block, {"thinking": _STR, "signature": _STR}, "thinking block")
            elif block["type"] == "redacted_thinking":
                has(block, {"data": _STR}, "redacted_thinking block")
            else:
                has(block, {"text": _STR}, "text block")
    elif kind == "user":
        has(record, USER, "user")
        if record.get("isReplay"):  # --replay-user-messages: the prompt as it came
            assert isinstance(record["message"]["content"], str)
            return
        for block in record["message"]["content"]:
            if block.get("type") == "text" and record["parent_tool_use_id"] is not None:
                has(block, {"text": _STR}, "subagent prompt")  # (a subagent's task, as its first message)
                continue
            if block["type"] == "text":  # Claude's `[Request interrupted by user]`
                assert block["text"] == "[Request interrupted by user]", block
                continue
            has(block, TOOL_RESULT, "tool_result")
            if isinstance(block["content"], list):  # an MCP tool's result, as content blocks
                assert all(part["type"] in ("text", "image") for part in block["content"]), block
    elif kind == "stream_event":
        has(record, STREAM_EVENT, "stream_event")
    elif kind == "result":
        has(record, RESULT, "result")
        has(record["usage"], USAGE, "result usage")
        assert record["schema_version"] == 2
        if record.get("terminal_reason") == "api_error":  # Claude's shape: the error is the `result`
            assert record["is_error"] and record["errors"] == [] and record["subtype"] == "success", record
        else:
            assert (record["errors"] == []) == (not record["is_error"]), record
        for denial in record["permission_denials"]:
            has(denial, DENIAL, "permission denial")
    elif kind == "control_response":
        has(record, CONTROL_RESPONSE, "control_response")
        assert record["response"]["subtype"] in ("success", "error")
    elif kind == "control_request":
        has(record, CONTROL_REQUEST, "control_request")
    elif kind == "control_cancel_request":
        assert isinstance(record.get("request_id"), str)
    elif kind == "transcript_mirror":
        has(record, TRANSCRIPT_MIRROR, "transcript_mirror")
        assert all(isinstance(entry, dict) and isinstance(entry.get("type"), str) for entry in record["entries"])
    elif kind == "conversation_reset":  # `/clear`, as Claude Code writes it
        assert all(isinstance(record.get(key), str) for key in ("new_conversation_id", "uuid", "session_id"))
    else:
        raise AssertionError(f"a line of a type SPEC §4 does not list: {record}")
