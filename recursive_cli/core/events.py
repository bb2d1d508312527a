"""The event vocabulary: everything a run reports, consumed by sinks (terminal, JSON stream, session).

Events are standard dataclasses with a literal `type`; sinks dispatch on the class. The
events of drivers and features (loop, goal, checkpoints, compaction…) are `Notice`s: each
says whether the session records it and what the terminal shows, and `notice_fields` is the
one serialisation both the stream-json line and the session record are made from. Those no
sink tells apart are declared by their own module, loaded only with it: the loop's in
features/loop/notices.py, `LoopIteration` in drivers/event_loop.py, `GoalEvaluated` in
drivers/goal.py, the hooks' in features/hooks/notices.py (a class costs a run's start-up
≈ 0.5 ms to make).

An event is declared one way (no pydantic on a run's path: `values.py`):

    @dataclass(slots=True, kw_only=True, eq=False)
    class LoopIteration(Notice):
        # its docstring: what it says

        type: Literal["loop_iteration"] = "loop_iteration"
        recorded: ClassVar[bool] = True                     # the class's settings: ClassVar
        iteration: int
        jobs: list[str] = field(default_factory=list)        # never a bare `[]` or `{}`
        shown: str = hidden("")                              # the terminal's text, in no JSON

A changed copy is `dataclasses.replace(event, shown="…")`; its JSON body is `notice_fields(event)`.
Events are declared `eq=False`: each is something that happened once, equal only to itself
(compare their `as_json` forms for their content); it also spares every event class a
generated `__eq__`, which a run's start-up would pay for all of them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol
from uuid import uuid4

from .messages import Message, ToolCall, Usage
from .values import as_json, hidden

if TYPE_CHECKING:  # (only named in annotations: a run that is no goal makes none)
    from .event_models import GoalSummary, WorktreeInfo


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
    # The model's server stayed unavailable through every retry (429, 5xx, timeouts, refused
    # connections): worth running again later, unlike a PROVIDER_ERROR (400/401/404…).
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    INTERNAL_ERROR = "internal_error"  # a bug, or state of our own that cannot be read
    IO_ERROR = "io_error"  # the run's own record (the session) could not be written
    GOAL_NOT_MET = "goal_not_met"
    STRUCTURED_OUTPUT_INVALID = "structured_output_invalid"  # --output-schema not met, asked twice


@dataclass(slots=True, kw_only=True, eq=False)
class EventModel:
    """The base of every event."""


@dataclass(slots=True, kw_only=True, eq=False)
class RunStarted(EventModel):
    """A run began: its session and workspace."""

    type: Literal["run_started"] = "run_started"
    session_id: str
    cwd: str
    model: str
    provider: str
    tools: list[str]
    permission_mode: str
    # The configured MCP servers, as the init line's `mcp_servers`: [{"name", "status"}]
    # (status `connected` or `failed`; features/mcp).
    mcp_servers: list[dict[str, str]] = field(default_factory=list)


@dataclass(slots=True, kw_only=True, eq=False)
class TurnStarted(EventModel):
    """A turn began, with the prompt it answers."""

    type: Literal["turn_started"] = "turn_started"
    turn: int
    prompt: str


@dataclass(slots=True, kw_only=True, eq=False)
class MessageAdded(EventModel):
    """A message was appended to the transcript (user prompt, assistant reply or tool result)."""

    type: Literal["message"] = "message"
    message: Message
    turn: int
    # The message's id in the session and in Claude's stream and transcript lines (`uuid`):
    # one, so that a client can name the message later (`--resume-session-at`).
    uuid: str = field(default_factory=lambda: str(uuid4()))


@dataclass(slots=True, kw_only=True, eq=False)
class ModelRequest(EventModel):
    """The kernel is about to wait for the model (step is 1-based within the turn)."""

    type: Literal["model_request"] = "model_request"
    step: int


@dataclass(slots=True, kw_only=True, eq=False)
class ModelReplied(EventModel):
    """The model answered the call of `step`: on `model` (the one that answered, after any
    fallback), why it stopped (`stop`, the kernel's word; `reason`, the provider's), what the
    call used. Before the reply's `message` event; sinks that time calls (telemetry) end here."""

    type: Literal["model_reply"] = "model_reply"
    step: int
    model: str
    stop: str
    reason: str = ""
    usage: Usage
    tool_calls: int = 0
    response_model: str = ""  # the model the response named ("": it named none)
    response_id: str = ""


@dataclass(slots=True, kw_only=True, eq=False)
class SideCallStarted(EventModel):
    """A model call outside the conversation is about to be made: the goal judge's
    (`call` = "judge"), a compaction summary's ("compaction") or a subagent's ("subagent").
    Its request and answer are no message of the transcript, so the sinks of the conversation
    (stream-json, the session, the terminal) leave it out; telemetry makes it a model call's
    span (`core.kernel.side_call`)."""

    type: Literal["side_call_started"] = "side_call_started"
    call: str
    provider: str
    model: str


@dataclass(slots=True, kw_only=True, eq=False)
class SideCallFinished(EventModel):
    """The side call of the last `SideCallStarted` answered (as `ModelReplied` says of a
    turn's call), or failed: `error` is then its kind ("interrupted", "provider_error")."""

    type: Literal["side_call_finished"] = "side_call_finished"
    call: str
    model: str
    stop: str = ""
    usage: Usage
    reason: str = ""
    response_model: str = ""
    response_id: str = ""
    error: str = ""
    detail: str = ""  # the failure's one line


@dataclass(slots=True, kw_only=True, eq=False)
class TextDelta(EventModel):
    """A piece of the model's reply text as it streams."""

    type: Literal["text_delta"] = "text_delta"
    text: str


@dataclass(slots=True, kw_only=True, eq=False)
class ThinkingDelta(EventModel):
    """A piece of the model's thinking as it streams (the whole of it is the reply's `reasoning`)."""

    type: Literal["thinking_delta"] = "thinking_delta"
    text: str


@dataclass(slots=True, kw_only=True, eq=False)
class ToolStarted(EventModel):
    """A tool call is about to run (after its permission check)."""

    type: Literal["tool_started"] = "tool_started"
    call: ToolCall
    subject: str


@dataclass(slots=True, kw_only=True, eq=False)
class ToolFinished(EventModel):
    """A tool call ended, with what it returned."""

    type: Literal["tool_finished"] = "tool_finished"
    call: ToolCall
    subject: str
    is_error: bool
    summary: str
    duration_s: float


@dataclass(slots=True, kw_only=True, eq=False)
class PermissionDenied(EventModel):
    """A tool call the permission rules, a hook or the user refused."""

    type: Literal["permission_denied"] = "permission_denied"
    tool: str
    subject: str
    reason: str
    tool_use_id: str


@dataclass(slots=True, kw_only=True, eq=False)
class ApiRetry(EventModel):
    """A model request failed and is tried again after a delay."""

    type: Literal["api_retry"] = "api_retry"
    attempt: int
    max_retries: int
    retry_delay_ms: int
    error_status: int | None
    error: str


@dataclass(slots=True, kw_only=True, eq=False)
class Notice(EventModel):
    """The base of every driver's and feature's event; its subclasses set a literal `type`.

    Stream-json prints one as `{"type":"system","subtype":<type>,…fields}`, the session
    records it as `{"type":<type>,…fields}` when `recorded` is set, the terminal prints
    `text()` when it is not empty. Fields named in `omitted_when_none` are left out while None.
    """

    recorded: ClassVar[bool] = True
    omitted_when_none: ClassVar[frozenset[str]] = frozenset()

    type: str

    def text(self) -> str:
        """The terminal line(s) for this event; '' shows nothing."""
        return ""


def notice_fields(event: Notice) -> dict[str, Any]:
    """The event's fields as JSON values, `type` aside: the body of both its outputs."""
    unset = {name for name in event.omitted_when_none if getattr(event, name) is None}
    return as_json(event, exclude=frozenset({"type", *unset}))


@dataclass(slots=True, kw_only=True, eq=False)
class SkippedPath(EventModel):
    """A path a checkpoint left out, and why."""

    path: str
    reason: str


@dataclass(slots=True, kw_only=True, eq=False)
class CheckpointTaken(Notice):
    """A snapshot of the workspace before or after a turn."""

    type: Literal["checkpoint"] = "checkpoint"
    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"files_changed", "skipped", "skipped_count"})

    turn: int
    phase: str
    commit: str
    files_changed: int | None = None
    skipped: list[SkippedPath] | None = None  # the first ones; None when nothing was skipped
    skipped_count: int | None = None
    shown: str = hidden("")  # the terminal's lines: new skips, changes

    def text(self) -> str:
        return self.shown


@dataclass(slots=True, kw_only=True, eq=False)
class CheckpointFailed(Notice):
    """A snapshot that could not be taken (or git is missing); the run goes on."""

    type: Literal["checkpoint"] = "checkpoint"
    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"enabled", "turn", "phase", "tool"})

    enabled: bool | None = None  # False: no git, no checkpoints in this run
    turn: int | None = None
    phase: str | None = None
    tool: str | None = None
    error: str
    shown: str = hidden("")  # the warning; only the first failure shows one

    def text(self) -> str:
        return self.shown


@dataclass(slots=True, kw_only=True, eq=False)
class CompactionDone(Notice):
    """Older messages were replaced by a summary to keep the context bounded."""

    type: Literal["compaction"] = "compaction"

    turn: int
    summary: str
    replaced: int
    kept: int
    tokens_before: int
    tokens_after: int

    def text(self) -> str:
        return (f"compacted {self.replaced} earlier messages into a summary "
                f"(~{self.tokens_before:,} → ~{self.tokens_after:,} tokens)")


@dataclass(slots=True, kw_only=True, eq=False)
class LoopWaiting(Notice):
    """The loop sleeps until a wakeup is due or a job ends (shown and streamed, not recorded)."""

    type: Literal["loop_waiting"] = "loop_waiting"
    recorded: ClassVar[bool] = False

    wakeup_due: str | None
    running_jobs: list[str]
    countdown_to: float | None  # the wakeup's due time, epoch seconds: the terminal counts down
    shown: str = hidden("")

    def text(self) -> str:
        return self.shown


@dataclass(slots=True, kw_only=True, eq=False)
class QueueDelivered(Notice):
    """A message left by `recursive queue` was taken from the session folder; the user message
    of the turn it starts follows it in the session (resume delivers again one that has none)."""

    type: Literal["queue_delivered"] = "queue_delivered"

    id: str
    message: str

    def text(self) -> str:
        return f"✉ queued message {self.id} delivered"


@dataclass(slots=True, kw_only=True, eq=False)
class ToolCallsNotRun(Notice):
    """A reply that was not whole (cut off, filtered, a refusal) lost its tool calls."""

    type: Literal["tool_calls_not_run"] = "tool_calls_not_run"

    stop_reason: str
    tool_calls: list[ToolCall]
    shown: str = hidden("")

    def text(self) -> str:
        return self.shown


@dataclass(slots=True, kw_only=True, eq=False)
class SubagentStarted(Notice):
    """A `task` call started a sub-conversation (stream-json: Claude Code's `task_started`)."""

    type: Literal["task_started"] = "task_started"

    task_id: str
    tool_use_id: str  # the parent's task call
    description: str
    subagent_type: str
    prompt: str
    model: str
    task_type: str = "local_agent"
    is_backgrounded: bool = False

    def text(self) -> str:
        return f"▶ subagent {self.subagent_type}: {self.description}"


@dataclass(slots=True, kw_only=True, eq=False)
class SubagentMessage(Notice):
    """A message of a sub-conversation: recorded in the session under the parent's task call,
    streamed as an `assistant` or `user` line whose `parent_tool_use_id` is that call's id."""

    type: Literal["subagent_message"] = "subagent_message"

    parent_tool_use_id: str
    agent_id: str
    subagent_type: str
    model: str
    message: Message


@dataclass(slots=True, kw_only=True, eq=False)
class SubagentFinished(Notice):
    """A sub-conversation ended (stream-json: Claude Code's `task_notification`)."""

    type: Literal["task_notification"] = "task_notification"

    task_id: str
    tool_use_id: str
    status: Literal["completed", "failed", "stopped"]
    summary: str
    finish_reason: str
    output_file: str = ""
    usage: dict[str, int] = field(default_factory=dict)  # Claude's `total_tokens`, `tool_uses`, `duration_ms`
    subagent_type: str = ""  # (ours, as on `task_started`)
    description: str = ""

    def text(self) -> str:
        why = "" if self.status == "completed" else f" ({self.finish_reason})"
        return f"◀ subagent {self.subagent_type} {self.status}{why}: {self.description}"


@dataclass(slots=True, kw_only=True, eq=False)
class TurnFinished(EventModel):
    """A turn ended: why, its steps, usage and cost."""

    type: Literal["turn_finished"] = "turn_finished"
    turn: int
    finish_reason: FinishReason
    steps: int
    usage: Usage
    cost_usd: float | None
    detail: str = ""


@dataclass(slots=True, kw_only=True, eq=False)
class RunFinished(EventModel):
    """The run's final result: what SPEC §4's result line is made of (`sinks/claude_stream.py`
    turns it into Claude's words) and what the session records of the run's end."""

    type: Literal["result"] = "result"
    subtype: str
    is_error: bool
    exit_code: int
    result: str
    session_id: str
    num_turns: int  # the session's turns so far (resumes included)
    num_steps: int  # model calls of this command's turns: the result line's `num_turns`
    duration_ms: int
    usage: Usage  # the session's totals (resumes, judge and compaction requests included)
    total_cost_usd: float | None
    finish_reason: str
    error: str = ""
    goal: GoalSummary | None = None  # a goal run's summary (the result line's `goal` object)
    answer: str = ""  # the model's final answer, also when the run failed after giving one
    structured_output: Any = None  # the answer parsed as JSON, when --output-schema asked for it
    # This command's requests per model (judge and compaction included): the result line's
    # `usage` is their sum, its `modelUsage` is this.
    model_usage: dict[str, Usage] = field(default_factory=dict)
    worktree: WorktreeInfo | None = None  # the session's own git worktree (-w), the result line's `worktree`


# The notices sinks tell apart by class; those of the loop, goal and hooks (declared by
# their own modules, loaded with them) are any `Notice`.
AnyNotice = (CheckpointTaken | CheckpointFailed | CompactionDone | LoopWaiting | QueueDelivered
             | ToolCallsNotRun | SubagentStarted | SubagentMessage | SubagentFinished | Notice)
AgentEvent = (RunStarted | TurnStarted | MessageAdded | ModelRequest | ModelReplied | SideCallStarted
              | SideCallFinished | TextDelta | ThinkingDelta | ToolStarted
              | ToolFinished | PermissionDenied | ApiRetry | AnyNotice | TurnFinished | RunFinished)



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
