"""The agent kernel: one turn's step loop — budget check, model call, tools, repeat."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from .budget import Budget
from .events import (EventSink, FinishReason, MessageAdded, ModelRequest, PermissionDenied,
                     TextDelta, ToolFinished, ToolStarted)
from .interrupt import InterruptToken, Interrupted
from .messages import Message, ToolCall, Usage
from .permissions import PermissionPolicy
from .providers.base import ChatProvider, Completion, RetryNotice
from .stuck import StuckDetector
from .tools.base import ToolContext, ToolRegistry, ToolResult

INTERRUPTED_RESULT = "interrupted before completion; effects unknown"


async def _no_preparation(ctx: TurnContext) -> None:
    return None


@dataclass
class TurnContext:
    """What one turn runs with; the transcript list is appended to in place."""

    transcript: list[Message]
    provider: ChatProvider
    tools: ToolRegistry
    tool_context: ToolContext
    budget: Budget
    sink: EventSink
    interrupt: InterruptToken
    turn: int = 1
    permissions: PermissionPolicy | None = None
    price: Callable[[Usage], float | None] = lambda usage: None
    retry: Callable[[RetryNotice], None] = lambda notice: None
    # Runs before every model call, e.g. to compact the transcript in place (compaction.py).
    before_model_call: Callable[[TurnContext], Awaitable[None]] = _no_preparation


@dataclass
class TurnOutcome:
    """How a turn ended: the reason, the final answer text, and what it consumed."""

    finish_reason: FinishReason
    text: str = ""
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    detail: str = ""
    tool_calls: int = 0
    denials: int = 0


class _Hooks:
    """Provider hooks that forward streamed text and retries to the run's events."""

    def __init__(self, ctx: TurnContext) -> None:
        self._ctx = ctx

    def on_text(self, delta: str) -> None:
        self._ctx.sink.emit(TextDelta(text=delta))

    def on_retry(self, notice: RetryNotice) -> None:
        self._ctx.retry(notice)


class AgentKernel:
    """Runs one turn: stateless between turns, everything it touches comes in the TurnContext."""

    async def run(self, ctx: TurnContext) -> TurnOutcome:
        """Step until the model stops calling tools or something ends the turn."""
        outcome = TurnOutcome(FinishReason.COMPLETED)
        stuck = StuckDetector()
        specs = ctx.tools.specs()
        hooks = _Hooks(ctx)
        denied_last_step = False
        while True:
            stop = self._stop_reason(ctx, outcome.steps)
            if stop:
                outcome.finish_reason, outcome.detail = stop
                return outcome
            await ctx.before_model_call(ctx)
            ctx.sink.emit(ModelRequest(step=outcome.steps + 1))
            try:
                reply = await ctx.interrupt.race(ctx.provider.complete(ctx.transcript, specs, hooks))
            except Interrupted:
                outcome.finish_reason, outcome.detail = FinishReason.INTERRUPTED, "interrupted"
                return outcome
            self._account(ctx, outcome, reply)
            self._append(ctx, reply.message)
            if not reply.message.tool_calls:
                return self._final(outcome, reply, denied_last_step)
            denials = outcome.denials
            for call in reply.message.tool_calls:
                result = await self._call_tool(ctx, call, outcome)
                stuck.record(call, result.is_error)
            denied_last_step = outcome.denials > denials
            verdict = stuck.verdict()
            if verdict and not ctx.interrupt.is_set():
                reason = FinishReason.PERMISSION_DENIED if denied_last_step else FinishReason.STUCK
                outcome.finish_reason, outcome.detail = reason, verdict
                return outcome

    @staticmethod
    def _final(outcome: TurnOutcome, reply: Completion, denied_last_step: bool) -> TurnOutcome:
        """The model answered without tool calls: the turn is over, for better or worse."""
        outcome.text = reply.message.content
        if reply.stop not in ("end", "tool_calls"):
            outcome.finish_reason = FinishReason.PROVIDER_STOP
            outcome.detail = f"the model stopped: {reply.stop}"
        elif denied_last_step:  # it gave up right after being refused
            outcome.finish_reason = FinishReason.PERMISSION_DENIED
            outcome.detail = "the agent stopped after a needed action was denied"
        return outcome

    @staticmethod
    def _stop_reason(ctx: TurnContext, steps: int) -> tuple[FinishReason, str] | None:
        if ctx.interrupt.is_set():
            return FinishReason.INTERRUPTED, "interrupted"
        return ctx.budget.exceeded(steps, len(ctx.transcript))

    @staticmethod
    def _account(ctx: TurnContext, outcome: TurnOutcome, reply: Completion) -> None:
        outcome.steps += 1
        outcome.usage = outcome.usage + reply.usage
        ctx.budget.charge(reply.usage, ctx.price(reply.usage))

    @staticmethod
    def _append(ctx: TurnContext, message: Message) -> None:
        ctx.transcript.append(message)
        ctx.sink.emit(MessageAdded(message=message, turn=ctx.turn))

    async def _call_tool(self, ctx: TurnContext, call: ToolCall, outcome: TurnOutcome) -> ToolResult:
        """Run one call and append its result; an interrupt still leaves the call answered."""
        outcome.tool_calls += 1
        tool = ctx.tools.get(call.name)
        subject = tool.subject(_safe_args(call)) if tool else ""
        ctx.sink.emit(ToolStarted(call=call, subject=subject))
        started = time.monotonic()
        try:
            result = await ctx.interrupt.race(self._permitted_call(ctx, call, subject, outcome))
        except Interrupted:
            result = ToolResult(INTERRUPTED_RESULT, is_error=True, summary="interrupted")
        elapsed = time.monotonic() - started
        self._append(ctx, Message.tool_result(call, result.content, result.is_error))
        ctx.sink.emit(ToolFinished(call=call, subject=subject, is_error=result.is_error,
                                   summary=result.summary, duration_s=round(elapsed, 3)))
        return result

    @staticmethod
    async def _permitted_call(ctx: TurnContext, call: ToolCall, subject: str,
                              outcome: TurnOutcome) -> ToolResult:
        tool = ctx.tools.get(call.name)
        if tool is not None and ctx.permissions is not None:
            decision = await ctx.permissions.decide(call.name, tool.kind, subject)
            if not decision.allowed:
                outcome.denials += 1
                ctx.sink.emit(PermissionDenied(tool=call.name, subject=subject, reason=decision.reason,
                                               tool_use_id=call.id))
                return ToolResult(f"permission denied: {decision.reason}. Do not retry this call; "
                                  "find another way or explain what you need.", is_error=True,
                                  summary="permission denied")
        return await ctx.tools.execute(call, ctx.tool_context)


def _safe_args(call: ToolCall) -> dict:
    try:
        value = call.parsed_arguments()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
