"""`-o stream-json` and `-o json` (SPEC §4, schema_version 2): Claude Code's headless lines.

The one writer of these lines, for `recursive run|loop|goal|resume` (`whole_runs`: an `init`
line from the run's start, one `result` line from its end) and for the headless surface
(`recursive -p`, `--input-format stream-json`: an `init` and a `result` line per prompt, which
it writes itself). With `stream` off (`-o json`) only the result is written, on one line.

One compact JSON object per line, flushed per line, each with a fresh `uuid`. Fields Claude
Code defines mean what they mean there: `num_turns` counts model calls, `usage.input_tokens`
is the uncached part of the prompt (ours counts the whole prompt), `duration_api_ms` is the
time spent waiting for the model. The parts of a result that the events show (denials, API
time, the last reply's stop reason) are collected from the events of the turn or run; the
rest comes from the surface (`TurnResult`; for whole runs `run_result`, from `RunFinished`,
whose outcome `core/results.py` decides). With `partial`, the model's streamed text also goes
out as Anthropic stream events (`stream_event` lines). Driver and feature events (`Notice`s:
checkpoints, loop and goal progress, compaction) are `system` lines of their own subtype.

Tool calls are shown through a `Presenter`, so a surface can show them under Claude's tool
names and argument shapes (`run_shell {command}` as `Bash {command}`); by default they are
shown as the model made them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..core.events import (
    AgentEvent,
    ApiRetry,
    FinishReason,
    MessageAdded,
    ModelRequest,
    Notice,
    PermissionDenied,
    RunFinished,
    RunStarted,
    SubagentFinished,
    SubagentMessage,
    SubagentStarted,
    TextDelta,
    ThinkingDelta,
    ToolStarted,
    TurnStarted,
    notice_fields,
)
from ..core.messages import Message, Reasoning, ToolCall, Usage
from ..core.results import errors, stop_reason
from ..core.values import as_json

SCHEMA_VERSION = 2
# JSON lets these stand raw inside strings, but str.splitlines() and some JSON-lines readers
# take them for line ends: escaped, one record stays on one line.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}

Presenter = Callable[[ToolCall], tuple[str, dict[str, Any]]]
"""A tool call as the client should see it: its name and its input object."""
CostOf = Callable[[str, Usage], "float | None"]
"""The USD cost of `usage` on a model, None when the model has no price."""


def as_shown(call: ToolCall) -> tuple[str, dict[str, Any]]:
    """The call as the model made it; arguments that are not a JSON object are kept as `_raw`."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return call.name, {"_raw": call.arguments}
    return call.name, value if isinstance(value, dict) else {"_raw": call.arguments}


def compact(record: dict[str, Any], ascii_only: bool = False) -> str:
    """One record as one compact JSON line (without its newline); `ascii_only` escapes all
    non-ASCII text as \\uXXXX."""
    line = json.dumps(record, ensure_ascii=ascii_only, separators=(",", ":"))
    if ascii_only or line.isascii():
        return line
    # (str.translate walks a long non-ASCII line character by character — 0.6 s for 10 MB —
    # where three replaces of what is almost never there take milliseconds)
    for char, escaped in _LINE_BREAKS.items():
        if char in line:
            line = line.replace(char, escaped)
    return line


def _ascii_only(out: TextIO) -> bool:
    """Whether `out` cannot take UTF-8 (`PYTHONIOENCODING=ascii`): JSON then escapes non-ASCII
    text as \\uXXXX, which loses nothing, rather than have it replaced."""
    encoding = (getattr(out, "encoding", None) or "utf-8").lower().replace("_", "-")
    return encoding not in ("utf-8", "utf8", "utf-16", "utf-32")


def claude_usage(usage: Usage) -> dict[str, Any]:
    """Our usage in Claude's words: `input_tokens` leaves out the cached part of the prompt;
    the output's thinking tokens, when the provider counted them, in Anthropic's
    `output_tokens_details`."""
    uncached = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
    words: dict[str, Any] = {"input_tokens": uncached, "cache_creation_input_tokens": usage.cache_write_tokens,
                             "cache_read_input_tokens": usage.cache_read_tokens, "output_tokens": usage.output_tokens}
    if usage.reasoning_tokens is not None:
        words["output_tokens_details"] = {"thinking_tokens": usage.reasoning_tokens}
    return words


def thinking_block(item: Reasoning) -> dict[str, Any]:
    """A kept thinking block as the Agent SDKs read it (`ThinkingBlock(thinking, signature)`),
    or a redacted one as Anthropic sends it."""
    if item.kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": item.signature or ""}
    return {"type": "thinking", "thinking": item.text, "signature": item.signature or ""}


def assistant_content(message: Message, present: Presenter = as_shown) -> list[dict[str, Any]]:
    """An assistant message's content blocks as Claude shows them: thinking, text, tool calls."""
    content: list[dict[str, Any]] = [thinking_block(item) for item in message.reasoning or ()
                                     if item.kind in ("thinking", "redacted_thinking")]
    if message.content:
        content.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        name, shown = present(call)
        content.append({"type": "tool_use", "id": call.id, "name": name, "input": shown})
    return content


def tool_result_block(message: Message) -> dict[str, Any]:
    """A tool result message as Claude's `tool_result` block."""
    return {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content,
            "is_error": message.is_error}


def _result_content(message: Message) -> str | list[dict[str, Any]]:
    """A tool result's `content` as Claude Code gives it: a string for its own tools, content
    blocks (text, then images) for an MCP tool's, as the server returned them (a refusal of the
    call is not the tool's: `_denied` keeps it a string)."""
    if not (message.tool_name or "").startswith("mcp__"):
        return message.content
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks += [{"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}
               for image in message.images or ()]
    return blocks


@dataclass(frozen=True)
class InitInfo:
    """What the `system` `init` line says about the run."""

    cwd: str
    model: str
    tools: list[str]
    permission_mode: str
    api_key_source: str = "none"
    mcp_servers: list[dict[str, str]] = field(default_factory=list)
    slash_commands: list[str] = field(default_factory=list)  # the MCP servers' prompts (`mcp__git__review`)
    extra: dict[str, Any] = field(default_factory=dict)  # fields of our own (`provider`, versions)


@dataclass(frozen=True)
class TurnResult:
    """How one turn ended, as the surface decides it; the sink adds what it saw of the turn."""

    subtype: str
    is_error: bool
    result: str
    finish_reason: str
    num_turns: int
    duration_ms: int
    usage: Usage
    total_cost_usd: float | None
    errors: list[str] = field(default_factory=list)
    stop_reason: str | None = None  # None: the stop of the turn's last reply
    structured_output: Any = None
    model_usage: dict[str, Usage] = field(default_factory=dict)  # `modelUsage`, per model
    extra: dict[str, Any] = field(default_factory=dict)


def run_result(event: RunFinished) -> TurnResult:
    """A whole run's result (`recursive run|loop|goal|resume`) as a result line's parts: the
    counts and usage of this command (`num_turns`: its model calls; `usage`: all its requests,
    a goal's judge included), the session's total cost (what `--max-cost` is checked against)."""
    reason = FinishReason(event.finish_reason)
    extra: dict[str, Any] = {"goal": event.goal.as_json()} if event.goal is not None else {}
    if event.worktree is not None:  # (a field of our own: Claude's result has no worktree)
        extra["worktree"] = as_json(event.worktree)
    usage = sum(event.model_usage.values(), Usage())
    return TurnResult(subtype=event.subtype, is_error=event.is_error, result=event.result,
                      finish_reason=event.finish_reason, num_turns=event.num_steps,
                      duration_ms=event.duration_ms, usage=usage, total_cost_usd=event.total_cost_usd,
                      errors=errors(event.exit_code, event.error, reason),
                      stop_reason=stop_reason(reason, event.error),
                      structured_output=event.structured_output, model_usage=event.model_usage, extra=extra)


@dataclass
class _Turn:
    """What the sink collects while one turn runs."""

    api_seconds: float = 0.0
    request_started: float | None = None
    stop_reason: str | None = None
    denials: list[dict[str, Any]] = field(default_factory=list)
    inputs: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    message_id: str = ""
    open_block: str | None = None  # the kind of streamed block open now: `text` or `thinking`
    blocks: int = 0  # streamed blocks of this reply so far (the next one's index)


_HOOK_EVENTS = frozenset({"hook_started", "hook_finished"})


class ClaudeStreamSink:
    """Writes Claude Code's stream-json lines to `out` (see the module docstring).

    `model` names the model now in use (it can change between turns; by default the one the
    run started with); `write_line` is the one way onto `out`, shared with the control messages
    of the protocol. `api_key_source` is the init line's `apiKeySource` for whole runs.
    """

    def __init__(self, out: TextIO, session_id: str, *, model: Callable[[], str] | None = None,
                 present: Presenter = as_shown, partial: bool = False, stream: bool = True,
                 cost_of: CostOf | None = None, whole_runs: bool = False,
                 api_key_source: str = "none", claude_mode: bool = False) -> None:
        self._out = out
        self.session_id = session_id
        self._started_model = ""  # the model RunStarted named
        self._model = model or (lambda: self._started_model)
        self._present = present
        self._partial = partial
        self._stream = stream  # False (`-o json`): only `write_result` writes, and only a record
        self._cost_of = cost_of
        # Claude-compatible mode (`recursive -p`, the SDKs): an unpriced model's `costUSD` is 0
        # with `costBasis: "unknown"` (SDK programs add them up) where `recursive run` says null,
        # and an MCP tool's result is content blocks where `recursive run` gives its text
        self._claude_mode = claude_mode
        self._api_key_source = api_key_source
        self._ascii = _ascii_only(out)
        self._turn = _Turn()
        # For `recursive run|loop|goal|resume -o stream-json|json`: the init line from the run's
        # start and one result line for the whole run, from its end (the headless surface writes
        # both per turn).
        self._whole_runs = whole_runs
        # hook_started / hook_finished lines (the user's hooks): only with --include-hook-events.
        self.include_hook_events = False
        # A subagent's text and thinking too, not only its tool calls (the SDK's initialize asks).
        self.forward_subagent_text = False
        self._handbacks: dict[str, dict[str, Any]] = {}  # task call id → its `tool_use_result`

    # -- writing -----------------------------------------------------------------------------

    def write_line(self, record: dict[str, Any]) -> None:
        """Write one record as a compact line and flush it."""
        self._out.write(compact(record, self._ascii) + "\n")
        self._out.flush()

    def _line(self, record: dict[str, Any], line_id: str | None = None) -> None:
        """A stream line; `line_id` its `uuid` when it shows a message (the message's own)."""
        if self._stream:
            self.write_line({**record, "session_id": self.session_id, "uuid": line_id or str(uuid.uuid4())})

    def write_init(self, info: InitInfo) -> None:
        """The `system` `init` line that opens a turn."""
        self._line({"type": "system", "subtype": "init", "schema_version": SCHEMA_VERSION,
                    "cwd": info.cwd, "model": info.model, "tools": info.tools,
                    "mcp_servers": info.mcp_servers, "permissionMode": info.permission_mode,
                    "apiKeySource": info.api_key_source, "slash_commands": info.slash_commands,
                    "output_style": "default", **info.extra})

    def write_api_error(self, text: str, fields: dict[str, Any]) -> None:
        """Claude Code's synthetic assistant message for a model request that failed the turn:
        the error as its text, model `<synthetic>`, and the error's `fields` (`api_error_status`, …)."""
        self._line({"type": "assistant", "message": {
            "id": str(uuid.uuid4()), "type": "message", "role": "assistant", "model": "<synthetic>",
            "content": [{"type": "text", "text": text}], "stop_reason": "stop_sequence", "stop_sequence": "",
            "usage": claude_usage(Usage())}, "parent_tool_use_id": None, **fields})

    def write_interrupted(self) -> None:
        """Claude Code's user line for a turn the client interrupted."""
        self._line({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user]"}]}, "parent_tool_use_id": None})

    def result_record(self, result: TurnResult) -> dict[str, Any]:
        """The `result` object of a turn: the last line of the turn, and the whole of `-o json`."""
        turn = self._turn
        record: dict[str, Any] = {
            "type": "result", "subtype": result.subtype, "is_error": result.is_error,
            "duration_ms": result.duration_ms, "duration_api_ms": int(turn.api_seconds * 1000),
            "num_turns": result.num_turns, "result": result.result,
            "stop_reason": result.stop_reason or turn.stop_reason, "session_id": self.session_id,
            "total_cost_usd": result.total_cost_usd, "usage": claude_usage(result.usage),
            "modelUsage": self.model_usage(result.model_usage), "permission_denials": list(turn.denials),
            "errors": list(result.errors), "uuid": str(uuid.uuid4()),
            "finish_reason": result.finish_reason, "schema_version": SCHEMA_VERSION,
        }
        if result.structured_output is not None:
            record["structured_output"] = result.structured_output
        record.update(result.extra)
        return record

    def write_result(self, result: TurnResult) -> dict[str, Any]:
        """Write the turn's `result` line (also with `stream` off) and return it."""
        record = self.result_record(result)
        self.write_line(record)
        return record

    def model_usage(self, by_model: dict[str, Usage]) -> dict[str, dict[str, Any]]:
        """Usage per model in Claude's camelCase shape, each with its cost (None: no price)."""
        shown: dict[str, dict[str, Any]] = {}
        for model, usage in by_model.items():
            words = claude_usage(usage)
            shown[model] = {
                "inputTokens": words["input_tokens"], "outputTokens": words["output_tokens"],
                "cacheReadInputTokens": words["cache_read_input_tokens"],
                "cacheCreationInputTokens": words["cache_creation_input_tokens"],
                "webSearchRequests": 0,
                "costUSD": self._cost_of(model, usage) if self._cost_of is not None else None,
            }
            if self._claude_mode and shown[model]["costUSD"] is None:
                shown[model].update(costUSD=0.0, costBasis="unknown")
        return shown

    # -- events ------------------------------------------------------------------------------

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, (SubagentStarted, SubagentFinished)):
            self._note_task(event)  # (and its `system` line below, as any notice's)
        if isinstance(event, TurnStarted) and not self._whole_runs:
            self._turn = _Turn()
        elif isinstance(event, RunStarted) and self._whole_runs:
            self._started_model = event.model
            self.write_init(InitInfo(cwd=event.cwd, model=event.model, tools=event.tools,
                                     permission_mode=event.permission_mode, api_key_source=self._api_key_source,
                                     mcp_servers=list(event.mcp_servers), extra={"provider": event.provider}))
        elif isinstance(event, RunFinished) and self._whole_runs:
            self.write_result(run_result(event))
        elif isinstance(event, ModelRequest):
            self._on_request()
        elif isinstance(event, TextDelta):
            self._on_delta("text", event.text)
        elif isinstance(event, ThinkingDelta):
            self._on_delta("thinking", event.text)
        elif isinstance(event, MessageAdded):
            self._on_message(event.message, event.uuid)
        elif isinstance(event, ToolStarted):
            self._turn.inputs[event.call.id] = self._present(event.call)
        elif isinstance(event, PermissionDenied):
            name, shown = self._turn.inputs.get(event.tool_use_id, (event.tool, {}))
            self._turn.denials.append({"tool_name": name, "tool_use_id": event.tool_use_id,
                                       "tool_input": shown})
        elif isinstance(event, ApiRetry):
            self._line({"type": "system", "subtype": "api_retry", "attempt": event.attempt,
                        "max_retries": event.max_retries, "retry_delay_ms": event.retry_delay_ms,
                        "error_status": event.error_status, "error": event.error})
        elif isinstance(event, SubagentMessage):
            self._on_subagent(event)
        elif isinstance(event, Notice):
            if event.type in _HOOK_EVENTS and not self.include_hook_events:
                return
            self._line({"type": "system", "subtype": event.type, **notice_fields(event)})

    def _on_request(self) -> None:
        turn = self._turn
        turn.request_started = time.monotonic()
        turn.message_id = f"msg_{uuid.uuid4().hex[:24]}"
        turn.open_block, turn.blocks = None, 0
        if self._partial:
            self._event({"type": "message_start", "message": {
                "id": turn.message_id, "type": "message", "role": "assistant", "model": self._model(),
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": claude_usage(Usage())}})

    def _on_delta(self, kind: str, text: str) -> None:
        """A streamed piece of text or thinking, as Anthropic streams it: a block of its kind
        opened first (the one before it closed), then the piece as its delta."""
        if not self._partial:
            return
        turn = self._turn
        if turn.open_block != kind:
            self._close_block()
            turn.open_block, turn.blocks = kind, turn.blocks + 1
            start = {"type": "text", "text": ""} if kind == "text" else {"type": "thinking", "thinking": "",
                                                                           "signature": ""}
            self._event({"type": "content_block_start", "index": turn.blocks - 1, "content_block": start})
        delta = {"type": "text_delta", "text": text} if kind == "text" else {"type": "thinking_delta",
                                                                             "thinking": text}
        self._event({"type": "content_block_delta", "index": turn.blocks - 1, "delta": delta})

    def _close_block(self) -> None:
        if self._turn.open_block is not None:
            self._event({"type": "content_block_stop", "index": self._turn.blocks - 1})
            self._turn.open_block = None

    def _on_message(self, message: Message, line_id: str) -> None:
        if message.role == "assistant":
            self._on_reply(message, line_id)
        elif message.role == "tool":
            self._turn.inputs.pop(message.tool_call_id or "", None)  # a denial comes before its result
            block = tool_result_block(message)
            if self._claude_mode and not self._denied(message):
                block["content"] = _result_content(message)
            record: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [block]},
                                      "parent_tool_use_id": None}
            handback = self._handbacks.pop(message.tool_call_id or "", None)
            if handback is not None:  # (an Agent call's result: what its subagent did, as Claude Code says it)
                record["tool_use_result"] = handback
            self._line(record, line_id)

    def _note_task(self, event: SubagentStarted | SubagentFinished) -> None:
        """Keep what the result line of a task call tells of its subagent (`tool_use_result`)."""
        if isinstance(event, SubagentStarted):
            self._handbacks[event.tool_use_id] = {
                "status": "running", "prompt": event.prompt, "agentId": event.task_id,
                "agentType": event.subagent_type, "resolvedModel": event.model}
            return
        handback = self._handbacks.get(event.tool_use_id)
        if handback is not None:
            handback.update(status=event.status, content=[{"type": "text", "text": event.summary}],
                            totalDurationMs=event.usage.get("duration_ms", 0),
                            totalTokens=event.usage.get("total_tokens", 0),
                            totalToolUseCount=event.usage.get("tool_uses", 0))

    def _denied(self, message: Message) -> bool:
        """Whether this tool result is a refusal (its text, not the tool's output)."""
        return any(denial["tool_use_id"] == message.tool_call_id for denial in self._turn.denials)

    def _on_reply(self, message: Message, line_id: str) -> None:
        turn = self._turn
        if turn.request_started is not None:
            turn.api_seconds += time.monotonic() - turn.request_started
            turn.request_started = None
        usage = message.usage or Usage()
        turn.stop_reason = "tool_use" if message.tool_calls else "end_turn"
        content = assistant_content(message, self._present)
        if self._partial:
            self._close_stream(content, usage)
        self._line({"type": "assistant", "message": {
            "id": turn.message_id or f"msg_{uuid.uuid4().hex[:24]}", "type": "message",
            "role": "assistant", "model": self._model(), "content": content,
            "stop_reason": turn.stop_reason, "stop_sequence": None, "usage": claude_usage(usage)},
            "parent_tool_use_id": None}, line_id)

    def _on_subagent(self, event: SubagentMessage) -> None:
        """A subagent's message, under the parent's task call, as Claude Code streams it: its
        prompt, its tool calls and their results; its text and thinking only with
        `forward_subagent_text` (the SDKs' `forward_subagent_text`)."""
        message = event.message
        about = {"parent_tool_use_id": event.parent_tool_use_id, "agent_id": event.agent_id,
                 "subagent_type": event.subagent_type}
        if message.role == "user":
            self._line({"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": message.content}]}, **about})
        elif message.role == "tool":
            self._line({"type": "user", "message": {"role": "user", "content": [tool_result_block(message)]},
                        **about})
        elif message.role == "assistant":
            content = [block for block in assistant_content(message, self._present)
                       if self.forward_subagent_text or block["type"] == "tool_use"]
            if content:
                self._line({"type": "assistant", "message": {
                    "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                    "model": event.model, "content": content,
                    "stop_reason": "tool_use" if message.tool_calls else "end_turn", "stop_sequence": None,
                    "usage": claude_usage(message.usage or Usage())}, **about})

    def _close_stream(self, content: list[dict[str, Any]], usage: Usage) -> None:
        """The rest of the reply's stream events: the open text or thinking block's end, the
        tool calls (which our providers do not stream, so each comes whole), the stop and the usage."""
        self._close_block()
        index = self._turn.blocks
        for block in content:
            if block["type"] != "tool_use":
                continue
            self._event({"type": "content_block_start", "index": index,
                         "content_block": {**block, "input": {}}})
            self._event({"type": "content_block_delta", "index": index,
                         "delta": {"type": "input_json_delta", "partial_json": compact(block["input"])}})
            self._event({"type": "content_block_stop", "index": index})
            index += 1
        self._event({"type": "message_delta", "delta": {"stop_reason": self._turn.stop_reason,
                                                        "stop_sequence": None},
                     "usage": claude_usage(usage)})
        self._event({"type": "message_stop"})

    def _event(self, event: dict[str, Any]) -> None:
        self._line({"type": "stream_event", "event": event, "parent_tool_use_id": None})
