"""The run's events as OpenTelemetry spans and metrics, named by the GenAI semantic conventions.

One trace per run: a root `invoke_agent recursive` span; under it a `turn N` span per turn;
under each turn a `chat MODEL` span per model call (kind CLIENT) and an `execute_tool NAME`
span per tool call. The model calls made outside the conversation are `chat MODEL` spans too,
with `recursive.call` saying whose (`SideCallStarted`): a compaction's summary under the turn
it was made in, the goal judge's under the turn it judged. A subagent's model and tool calls
are under the `execute_tool task` span of the call that started it (told apart by the
subagent the code works for, `core.agent_scope`: the calls of one reply run at once).
The model call's span carries what the call answered (`ModelReplied`):
`gen_ai.response.model`, `gen_ai.response.finish_reasons` (the provider's own word),
`gen_ai.usage.*` tokens and our `recursive.cost_usd`; every span the session id
(`gen_ai.conversation.id`, `session.id`). Metrics: `gen_ai.client.token.usage` and
`gen_ai.client.operation.duration` histograms, and a `recursive.cost.usage` counter in USD.
No prompt, answer, tool argument or result leaves the process: names, ids, counts and times.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.metrics import Counter, Histogram, Meter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ...core.agent_scope import current_agent
from ...core.events import (
    AgentEvent,
    ApiRetry,
    ModelReplied,
    ModelRequest,
    Notice,
    PermissionDenied,
    RunFinished,
    RunStarted,
    SideCallFinished,
    SideCallStarted,
    SubagentFinished,
    SubagentMessage,
    SubagentStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
    notice_fields,
)
from ...core.messages import Usage

AGENT = "recursive"
# The bucket boundaries the semantic conventions advise for these two histograms.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_STOP_WORDS = {"end": "stop", "tool_calls": "tool_calls", "length": "length", "content_filter": "content_filter",
               "refusal": "refusal"}


@dataclass(slots=True)
class RunFacts:
    """What the sink asks of the runtime: the session, the mode, and (read at each event, as
    the model may change mid-run) the provider's name and model and a call's cost."""

    session_id: str
    mode: str
    provider: Callable[[], str]
    model: Callable[[], str]
    cost: Callable[[str, Usage], float | None]


class Instruments:
    """The run's metric instruments."""

    def __init__(self, meter: Meter) -> None:
        self.tokens: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per model call, by gen_ai.token.type",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Time of a model call, retries included",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self.cost: Counter = meter.create_counter(
            "recursive.cost.usage", unit="USD", description="Cost of the model calls (priced models only)")


@dataclass(slots=True)
class _Call:
    """A model call in flight: its span, when it started, what it asked."""

    span: Span
    started: float
    attributes: dict[str, Any]


class OtelSink:
    """An EventSink that turns a run's events into spans and metrics; `finish` (called once,
    at the run's result) hands them to the exporters with a bounded wait."""

    def __init__(self, tracer: Tracer, instruments: Instruments, facts: RunFacts,
                 finish: Callable[[], None], warn: Callable[[str], None]) -> None:
        self._tracer = tracer
        self._warn = warn
        self._metrics = instruments
        self._facts = facts
        self._finish = finish
        self._root = tracer.start_span(f"invoke_agent {AGENT}", kind=SpanKind.INTERNAL, attributes={
            **self._common("invoke_agent"), "gen_ai.agent.name": AGENT, "recursive.mode": facts.mode})
        self._turn: Span | None = None
        self._judged: Span | None = None  # the turn that ended last: what a goal judge judges
        self._call: _Call | None = None
        self._sides: dict[str, _Call] = {}  # side calls in flight: the main conversation's (""), each subagent's
        self._tools: dict[str, Span] = {}
        self._agents: dict[str, Span] = {}  # a running subagent's id → its task call's span
        self._done = False
        self._handlers: dict[type, Callable[[Any], None]] = {
            RunStarted: self._on_run_started, TurnStarted: self._on_turn_started,
            ModelRequest: self._on_request, ModelReplied: self._on_reply, ApiRetry: self._on_retry,
            SideCallStarted: self._on_side_started, SideCallFinished: self._on_side_finished,
            ToolStarted: self._on_tool_started, PermissionDenied: self._on_denied,
            ToolFinished: self._on_tool_finished, TurnFinished: self._on_turn_finished,
            SubagentStarted: self._on_subagent_started, SubagentFinished: self._on_subagent_finished,
            SubagentMessage: lambda event: None,  # (a message: no text of the run leaves)
            RunFinished: self._on_run_finished,
        }

    def emit(self, event: AgentEvent) -> None:
        """Record `event`; a failure here (a bug, the SDK's) ends the run's telemetry with one
        warning, never the run."""
        if self._done:
            return
        handler = self._handlers.get(type(event))
        if handler is None and isinstance(event, Notice):
            handler = self._on_notice
        if handler is None:
            return
        try:
            handler(event)
        except Exception as exc:
            self._done = True
            self._warn(f"the run's telemetry stopped here ({type(exc).__name__}: {exc}); the run goes on")

    # -- spans -------------------------------------------------------------------------------

    def _common(self, operation: str) -> dict[str, Any]:
        return {"gen_ai.operation.name": operation, "gen_ai.provider.name": self._facts.provider(),
                "gen_ai.conversation.id": self._facts.session_id, "session.id": self._facts.session_id}

    def _child(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Span:
        parent = self._agent_span() or (self._turn if self._turn is not None else self._root)
        return self._tracer.start_span(name, context=trace.set_span_in_context(parent), kind=kind,
                                       attributes=attributes)

    def _on_run_started(self, event: RunStarted) -> None:
        self._root.set_attributes({"gen_ai.request.model": event.model, "gen_ai.provider.name": event.provider,
                                   "recursive.permission_mode": event.permission_mode,
                                   "recursive.tools": len(event.tools)})

    def _on_turn_started(self, event: TurnStarted) -> None:
        self._end_turn("a new turn started")
        parent = trace.set_span_in_context(self._root)
        self._turn = self._tracer.start_span(f"turn {event.turn}", context=parent, kind=SpanKind.INTERNAL,
                                             attributes={"recursive.turn": event.turn,
                                                         "gen_ai.conversation.id": self._facts.session_id,
                                                         "session.id": self._facts.session_id})

    def _on_request(self, event: ModelRequest) -> None:
        self._end_call("error", "a new model call started")
        model = self._facts.model()
        attributes = {**self._common("chat"), "gen_ai.request.model": model}
        span = self._child(f"chat {model}", SpanKind.CLIENT, {**attributes, "recursive.step": event.step})
        self._call = _Call(span, time.monotonic(), attributes)

    def _on_reply(self, event: ModelReplied) -> None:
        call, self._call = self._call, None
        if call is not None:
            call.span.set_attribute("recursive.tool_calls", event.tool_calls)
            self._answered(call, event)

    def _answered(self, call: _Call, event: ModelReplied | SideCallFinished) -> None:
        """End a model call's span with what it answered, and measure it."""
        usage = event.usage
        cost = self._facts.cost(event.model, usage)
        answered = event.response_model or event.model
        call.span.set_attributes({**_usage_attributes(usage), "gen_ai.response.model": answered,
                                  "gen_ai.response.finish_reasons": [_finish_reason(event)]})
        if event.response_id:
            call.span.set_attribute("gen_ai.response.id", event.response_id)
        if cost is not None:
            call.span.set_attribute("recursive.cost_usd", cost)
        call.span.end()
        measured = {**call.attributes, "gen_ai.response.model": answered}
        self._metrics.duration.record(time.monotonic() - call.started, measured)
        self._metrics.tokens.record(usage.input_tokens, {**measured, "gen_ai.token.type": "input"})
        self._metrics.tokens.record(usage.output_tokens, {**measured, "gen_ai.token.type": "output"})
        if cost is not None:
            self._metrics.cost.add(cost, measured)

    def _agent_span(self) -> Span | None:
        """The task call's span of the subagent the code running now works for (None: the main conversation)."""
        scope = current_agent()
        return self._agents.get(scope.agent_id) if scope is not None else None

    def _on_side_started(self, event: SideCallStarted) -> None:
        """A judge's, a compaction's or a subagent's model call: under the subagent's task
        call, else the turn under way, else (a judge, after the turn) the turn it judges, else
        the run."""
        self._end_side("error", "a new side call started")
        parent = (self._agent_span() or self._turn or (self._judged if event.call == "judge" else None)
                  or self._root)
        attributes = {**self._common("chat"), "gen_ai.provider.name": event.provider,
                      "gen_ai.request.model": event.model, "recursive.call": event.call}
        span = self._tracer.start_span(f"chat {event.model}", context=trace.set_span_in_context(parent),
                                       kind=SpanKind.CLIENT, attributes=attributes)
        self._sides[_scope_key()] = _Call(span, time.monotonic(), attributes)

    def _on_side_finished(self, event: SideCallFinished) -> None:
        if event.error:
            self._end_side(event.error, event.detail)
            return
        call = self._sides.pop(_scope_key(), None)
        if call is not None:
            self._answered(call, event)

    def _on_subagent_started(self, event: SubagentStarted) -> None:
        span = self._tools.get(event.tool_use_id)
        if span is None:
            return
        span.set_attributes({"recursive.subagent.type": event.subagent_type, "recursive.subagent.id": event.task_id,
                             "gen_ai.request.model": event.model})
        self._agents[event.task_id] = span

    def _on_subagent_finished(self, event: SubagentFinished) -> None:
        self._end_side(event.finish_reason, event.summary if event.status != "completed" else "", event.task_id)
        span = self._agents.pop(event.task_id, None)
        if span is not None:
            span.set_attributes({"recursive.subagent.status": event.status,
                                 "recursive.finish_reason": event.finish_reason,
                                 **{f"recursive.subagent.{key}": value for key, value in event.usage.items()}})

    def _on_retry(self, event: ApiRetry) -> None:
        call = self._sides.get(_scope_key()) or self._call
        if call is not None:
            call.span.add_event("api_retry", {"attempt": event.attempt, "error": event.error[:200],
                                              **({"http.response.status_code": event.error_status}
                                                 if event.error_status is not None else {})})

    def _on_tool_started(self, event: ToolStarted) -> None:
        name = event.call.name
        self._tools[event.call.id] = self._child(f"execute_tool {name}", SpanKind.INTERNAL, {
            **self._common("execute_tool"), "gen_ai.tool.name": name, "gen_ai.tool.call.id": event.call.id,
            "gen_ai.tool.type": "extension" if name.startswith("mcp__") else "function"})

    def _on_denied(self, event: PermissionDenied) -> None:
        span = self._tools.get(event.tool_use_id)
        if span is not None:
            span.set_attributes({"recursive.permission.denied": True, "recursive.permission.reason": event.reason})

    def _on_tool_finished(self, event: ToolFinished) -> None:
        span = self._tools.pop(event.call.id, None)
        if span is None:
            return
        if event.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, event.summary[:200]))
        span.end()

    def _on_turn_finished(self, event: TurnFinished) -> None:
        reason = event.finish_reason.value
        self._end_call(reason, event.detail)
        self._end_sides(reason, event.detail)
        self._end_tools(reason)
        if self._turn is None:
            return
        self._turn.set_attributes({**_usage_attributes(event.usage), "recursive.finish_reason": reason,
                                   "recursive.steps": event.steps})
        if event.cost_usd is not None:
            self._turn.set_attribute("recursive.cost_usd", event.cost_usd)
        if reason != "completed":
            self._turn.set_status(Status(StatusCode.ERROR, event.detail[:200] or reason))
        self._turn.end()
        self._judged, self._turn = self._turn, None

    def _on_notice(self, event: Notice) -> None:
        """A driver's or feature's notice (checkpoint, compaction, goal verdict…): an event on
        the span it happened in, with its numbers and yes/no fields (no text of the run)."""
        fields = {key: value for key, value in notice_fields(event).items()
                  if isinstance(value, (bool, int, float)) and value is not None}
        (self._turn if self._turn is not None else self._root).add_event(event.type, fields)

    def _on_run_finished(self, event: RunFinished) -> None:
        self._end_sides(event.finish_reason, event.error)
        self._end_call(event.finish_reason, event.error)
        self._end_tools(event.finish_reason)
        self._end_turn(event.error or event.finish_reason)
        self._root.set_attributes({**_usage_attributes(event.usage), "recursive.exit_code": event.exit_code,
                                   "recursive.subtype": event.subtype, "recursive.finish_reason": event.finish_reason,
                                   "recursive.num_turns": event.num_turns, "recursive.num_steps": event.num_steps})
        if event.total_cost_usd is not None:
            self._root.set_attribute("recursive.cost_usd", event.total_cost_usd)
        if event.is_error:
            self._root.set_attribute("error.type", event.subtype)
            self._root.set_status(Status(StatusCode.ERROR, (event.error or event.subtype)[:200]))
        self._root.end()
        self._done = True
        self._finish()

    # -- spans left open (an interrupt, a provider error, a turn cut short) ---------------------

    def _end_call(self, reason: str, detail: str) -> None:
        call, self._call = self._call, None
        self._failed(call, reason, detail)

    def _end_side(self, reason: str, detail: str, scope: str | None = None) -> None:
        """End the side call in flight of `scope` (a subagent's id; default: the code's now)
        as failed."""
        self._failed(self._sides.pop(_scope_key() if scope is None else scope, None), reason, detail)

    def _end_sides(self, reason: str, detail: str) -> None:
        for key in list(self._sides):
            self._end_side(reason, detail, key)

    def _failed(self, call: _Call | None, reason: str, detail: str) -> None:
        """End a model call's span that got no answer (`reason` its error.type)."""
        if call is None:
            return
        call.span.set_attribute("error.type", reason)
        call.span.set_status(Status(StatusCode.ERROR, detail[:200] or reason))
        call.span.end()
        self._metrics.duration.record(time.monotonic() - call.started, {**call.attributes, "error.type": reason})

    def _end_tools(self, reason: str) -> None:
        for span in self._tools.values():
            span.set_attribute("error.type", reason)
            span.set_status(Status(StatusCode.ERROR, reason))
            span.end()
        self._tools.clear()

    def _end_turn(self, detail: str) -> None:
        if self._turn is not None:
            self._turn.set_status(Status(StatusCode.ERROR, detail[:200]))
            self._turn.end()
            self._turn = None


def _scope_key() -> str:
    """Whose side calls: the subagent's id the code works for, "" for the main conversation."""
    scope = current_agent()
    return scope.agent_id if scope is not None else ""


def _usage_attributes(usage: Usage) -> dict[str, int]:
    """`gen_ai.usage.*` of a call, a turn or a run."""
    counts = {"gen_ai.usage.input_tokens": usage.input_tokens, "gen_ai.usage.output_tokens": usage.output_tokens,
              "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
              "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens}
    if usage.reasoning_tokens is not None:
        counts["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return counts


def _finish_reason(event: ModelReplied | SideCallFinished) -> str:
    """The provider's own word for the stop (`stop`, `end_turn`, `tool_use`, `max_tokens`…),
    else ours in OpenAI's words."""
    if event.reason and not event.reason.startswith("no "):
        return event.reason
    return _STOP_WORDS.get(event.stop, event.stop)

