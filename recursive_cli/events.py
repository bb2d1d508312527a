"""The event vocabulary: everything a run reports, consumed by sinks (terminal, JSON stream, session).

Events are plain pydantic models with a literal `type`; sinks dispatch on the class.
"""

from __future__ import annotations

import enum
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from .messages import Message, ToolCall, Usage


class FinishReason(str, enum.Enum):
    """Why a turn (or a whole run) ended. Every ending is one of these, never an exception."""

    COMPLETED = "completed"
    PROVIDER_STOP = "provider_stop"
    MAX_STEPS = "max_steps"
    MAX_COST = "max_cost"
    MAX_DURATION = "max_duration"
    MAX_ITERATIONS = "max_iterations"
    TRANSCRIPT_LIMIT = "transcript_limit"
    STUCK = "stuck"
    INTERRUPTED = "interrupted"
    PERMISSION_DENIED = "permission_denied"
    PROVIDER_ERROR = "provider_error"
    IO_ERROR = "io_error"  # the run's own record (the session) could not be written
    GOAL_NOT_MET = "goal_not_met"


class RunStarted(BaseModel):
    type: Literal["run_started"] = "run_started"
    session_id: str
    cwd: str
    model: str
    provider: str
    tools: list[str]
    permission_mode: str


class TurnStarted(BaseModel):
    type: Literal["turn_started"] = "turn_started"
    turn: int
    prompt: str


class MessageAdded(BaseModel):
    """A message was appended to the transcript (user prompt, assistant reply or tool result)."""

    type: Literal["message"] = "message"
    message: Message
    turn: int


class ModelRequest(BaseModel):
    """The kernel is about to wait for the model (step is 1-based within the turn)."""

    type: Literal["model_request"] = "model_request"
    step: int


class TextDelta(BaseModel):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolStarted(BaseModel):
    type: Literal["tool_started"] = "tool_started"
    call: ToolCall
    subject: str


class ToolFinished(BaseModel):
    type: Literal["tool_finished"] = "tool_finished"
    call: ToolCall
    subject: str
    is_error: bool
    summary: str
    duration_s: float


class PermissionDenied(BaseModel):
    type: Literal["permission_denied"] = "permission_denied"
    tool: str
    subject: str
    reason: str
    tool_use_id: str


class ApiRetry(BaseModel):
    type: Literal["api_retry"] = "api_retry"
    attempt: int
    max_retries: int
    retry_delay_ms: int
    error_status: int | None
    error: str


class Notice(BaseModel):
    """An event of a driver or feature (loop, goal, checkpoints, compaction…), one shape for all.

    Stream-json prints it as `{"type":"system","subtype":<subtype>,…data}`; the session records
    it as `{"type":<subtype>,…data}` when `record` is set; the terminal prints `text` if any.
    """

    type: Literal["notice"] = "notice"
    subtype: str
    data: dict[str, Any] = {}
    text: str = ""
    record: bool = True


class TurnFinished(BaseModel):
    type: Literal["turn_finished"] = "turn_finished"
    turn: int
    finish_reason: FinishReason
    steps: int
    usage: Usage
    cost_usd: float | None
    detail: str = ""


class RunFinished(BaseModel):
    """The run's final result, in the shape of SPEC §4's result line."""

    type: Literal["result"] = "result"
    subtype: str
    is_error: bool
    exit_code: int
    result: str
    session_id: str
    num_turns: int
    num_steps: int
    duration_ms: int
    usage: Usage
    total_cost_usd: float | None
    finish_reason: str
    error: str = ""
    extra: dict[str, Any] = {}


AgentEvent = (RunStarted | TurnStarted | MessageAdded | ModelRequest | TextDelta | ToolStarted
              | ToolFinished | PermissionDenied | ApiRetry | Notice | TurnFinished | RunFinished)


class EventSink(Protocol):
    """Anything that consumes events: the terminal renderer, the JSON stream, the session writer."""

    def emit(self, event: AgentEvent) -> None: ...


class FanoutSink:
    """Sends each event to every sink in order."""

    def __init__(self, sinks: list[EventSink] | None = None) -> None:
        self.sinks: list[EventSink] = list(sinks or [])

    def add(self, sink: EventSink) -> None:
        self.sinks.append(sink)

    def emit(self, event: AgentEvent) -> None:
        for sink in self.sinks:
            sink.emit(event)


class NullSink:
    def emit(self, event: AgentEvent) -> None:
        pass
