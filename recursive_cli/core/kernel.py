"""The agent kernel: one turn's step loop — budget check, model call, tools, repeat."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from .budget import Budget
from .events import (
    EventSink,
    FinishReason,
    MessageAdded,
    ModelReplied,
    ModelRequest,
    PermissionDenied,
    SideCallFinished,
    SideCallStarted,
    TextDelta,
    ThinkingDelta,
    ToolCallsNotRun,
    ToolFinished,
    ToolStarted,
)
from .guards import HaltTurn, StopGuard, ToolGuard
from .interrupt import Interrupted, InterruptToken
from .messages import Message, ToolCall, Usage
from .provider import ChatProvider, Completion, DeadlineError, ProviderError, ProviderHooks, RetryNotice, ToolSpec
from .stuck import StuckDetector
from .tool import Tool, ToolContext, ToolRegistry, ToolResult

INTERRUPTED_RESULT = "interrupted before completion; effects unknown"
OUT_OF_TIME_RESULT = "stopped: the run's --max-duration ran out during this call; effects unknown"
HALTED_RESULT = "not run: the turn ended before this call (a hook, or the user, stopped it)"
ANSWERED_RESULT = "not run: an earlier call in the same reply ended the turn with its answer"
# Told to the model after a reply cut off at the output limit while it was calling tools.
CUT_OFF_NOTE = ("Your last reply was cut off at the output limit, so none of its tool calls ({names}) "
                "were run and nothing changed. Send the calls you need again, each one complete; if "
                "one carries a lot of text, such as a whole file, split the work into smaller calls.")
# Where an exception that ends a turn carries the turn's progress (see `ended_by`).
_PROGRESS = "_recursive_turn_progress"
_NOT_WHOLE = {"length": "cut off at the output limit", "content_filter": "stopped by the content filter",
              "refusal": "a refusal"}


async def _no_preparation(ctx: TurnContext) -> None:
    return None


def _no_wrapping(ctx: TurnContext, call: ToolCall, tool: Tool | None) -> AbstractAsyncContextManager[None]:
    return contextlib.nullcontext()


def _no_retry_notice(notice: RetryNotice) -> None:
    return None


@dataclass(slots=True)
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
    guards: Sequence[ToolGuard] = ()  # asked in order before each call; the first denial wins
    retry: Callable[[RetryNotice], None] = _no_retry_notice
    # Runs before every model call, e.g. to compact the transcript in place (compaction.py).
    before_model_call: Callable[[TurnContext], Awaitable[None]] = _no_preparation
    # Wraps every tool call that runs (once permitted), e.g. to snapshot the workspace around
    # it so that checkpoints know what the session itself changed (checkpoints/observer.py).
    around_tool: Callable[[TurnContext, ToolCall, Tool | None], AbstractAsyncContextManager[None]] = _no_wrapping
    # Asked for the provider of each model call, so that a model switched while the turn runs
    # (the headless surface's `set_model`) makes the next call; None: `provider` all turn long.
    current_provider: Callable[[], ChatProvider] | None = None
    # Asked in order when a reply would complete the turn; the first reason keeps the turn
    # going (once per turn: see `StopGuard`), as a user message, within the same budgets.
    stop_guards: Sequence[StopGuard] = ()


@dataclass(slots=True)
class TurnOutcome:
    """How a turn ended: the reason, the final answer text, and what it consumed."""

    finish_reason: FinishReason
    text: str = ""
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    detail: str = ""
    tool_calls: int = 0
    denials: int = 0
    halted: str = ""  # why a guard or hook ended the turn after a call (`continue: false`)
    api_status: int | None = None  # the HTTP status of the model request that failed the turn


class _Hooks:
    """Provider hooks that forward streamed text and retries to the run's events."""

    def __init__(self, ctx: TurnContext) -> None:
        self._ctx = ctx

    def on_text(self, delta: str) -> None:
        self._ctx.sink.emit(TextDelta(text=delta))

    def on_thinking(self, delta: str) -> None:
        """A piece of the model's thinking (the optional hook `thinking_hook` looks for)."""
        self._ctx.sink.emit(ThinkingDelta(text=delta))

    def on_retry(self, notice: RetryNotice) -> None:
        self._ctx.retry(notice)

    @property
    def deadline(self) -> float | None:
        return self._ctx.budget.deadline()


class AgentKernel:
    """Runs one turn: stateless between turns, everything it touches comes in the TurnContext."""

    async def run(self, ctx: TurnContext) -> TurnOutcome:
        """Step until the model stops calling tools or something ends the turn.

        An exception that ends the turn (a ProviderError) carries the steps and usage spent
        before it, for `ended_by`.
        """
        outcome = TurnOutcome(FinishReason.COMPLETED)
        try:
            return await self._steps(ctx, outcome)
        except Exception as exc:
            with contextlib.suppress(AttributeError, TypeError):
                setattr(exc, _PROGRESS, outcome)
            raise

    async def _steps(self, ctx: TurnContext, outcome: TurnOutcome) -> TurnOutcome:
        """The step loop. Only a whole reply's tool calls run (`Completion.whole`)."""
        stuck = StuckDetector()
        specs, version = ctx.tools.specs(), ctx.tools.version
        hooks = _Hooks(ctx)
        denied_last_step = cut_off = kept_going = False
        while True:
            stop = self._stop_reason(ctx, outcome.steps)
            if stop:
                outcome.finish_reason, outcome.detail = stop
                return outcome
            await ctx.before_model_call(ctx)
            # Picked right before the call is announced, with no await between: what a sink
            # reads of the provider at `ModelRequest` is what makes this call.
            if ctx.tools.version != version:  # (a tool added or taken away: an MCP server's changed list)
                specs, version = ctx.tools.specs(), ctx.tools.version
            provider = self._provider(ctx)
            ctx.sink.emit(ModelRequest(step=outcome.steps + 1))
            reply = await self._ask(ctx, provider, specs, hooks)
            if not isinstance(reply, Completion):
                outcome.finish_reason, outcome.detail = reply
                return outcome
            # (read after the call: a provider that fell back to another model answered on it)
            self._account(ctx, outcome, reply, provider.model)
            ctx.sink.emit(ModelReplied(step=outcome.steps, model=provider.model, stop=reply.stop, reason=reply.reason,
                                       usage=reply.usage, tool_calls=len(reply.message.tool_calls),
                                       response_model=reply.model, response_id=reply.response_id))
            message = self._keep(ctx, reply)
            if reply.stop == "length" and reply.message.tool_calls and not cut_off:
                names = ", ".join(call.name or "?" for call in reply.message.tool_calls)
                self._append(ctx, Message.user(CUT_OFF_NOTE.format(names=names)))
                cut_off = True  # once in a row the model may go on; twice ends the turn
                continue
            if not message.tool_calls:
                self._final(outcome, reply, denied_last_step, cut_off)
                if outcome.finish_reason is not FinishReason.COMPLETED or not ctx.stop_guards:
                    return outcome
                try:
                    reason = await ctx.interrupt.race(self._stop_guarded(ctx, kept_going))
                except Interrupted:
                    outcome.finish_reason, outcome.detail = FinishReason.INTERRUPTED, "interrupted"
                    return outcome
                if reason is None or kept_going:
                    return outcome
                self._append(ctx, Message.user(reason))
                kept_going, denied_last_step = True, False
                continue
            cut_off = False
            denials = outcome.denials
            answer: str | None = None  # a call's result that ends the turn (`ToolResult.answer`)
            for batch in _batches(ctx.tools, message.tool_calls):
                if outcome.halted or answer is not None:  # every call is answered: the transcript stays paired
                    for call in batch:
                        self._append(ctx, Message.tool_result(call, HALTED_RESULT if outcome.halted
                                                              else ANSWERED_RESULT, True))
                    continue
                for call, result in zip(batch, await self._call_tools(ctx, batch, outcome)):
                    if answer is None and not result.is_error:
                        answer = result.answer
                    stuck.record(call, result.is_error)
            if outcome.halted:
                outcome.finish_reason, outcome.detail = FinishReason.PERMISSION_DENIED, outcome.halted
                return outcome
            if answer is not None:
                outcome.text = answer
                return outcome
            denied_last_step = outcome.denials > denials
            verdict = stuck.verdict()
            if verdict and not ctx.interrupt.is_set():
                reason = FinishReason.PERMISSION_DENIED if denied_last_step else FinishReason.STUCK
                outcome.finish_reason, outcome.detail = reason, verdict
                return outcome

    @staticmethod
    async def _ask(ctx: TurnContext, provider: ChatProvider, specs: Sequence[ToolSpec],
                   hooks: _Hooks) -> Completion | tuple[FinishReason, str]:
        """The model's reply, or why the turn ends without one: an interrupt, or the run's
        --max-duration running out during the request or its retries."""
        try:
            return await ctx.interrupt.race(provider.complete(ctx.transcript, specs, hooks))
        except Interrupted:
            return FinishReason.INTERRUPTED, "interrupted"
        except DeadlineError as exc:
            return ctx.budget.out_of_time(exc.reason)

    @staticmethod
    def _final(outcome: TurnOutcome, reply: Completion, denied_last_step: bool,
               cut_off_before: bool = False) -> TurnOutcome:
        """The model answered, or its reply cannot be acted on: the turn is over, for better or worse."""
        outcome.text = reply.message.content
        if not reply.whole:
            outcome.finish_reason = FinishReason.PROVIDER_STOP
            outcome.detail = _stop_detail(reply, cut_off_before)
        elif denied_last_step:  # it gave up right after being refused
            outcome.finish_reason = FinishReason.PERMISSION_DENIED
            outcome.detail = "the agent stopped after a needed action was denied"
        return outcome

    @staticmethod
    async def _stop_guarded(ctx: TurnContext, active: bool) -> str | None:
        """The first reason a stop guard gives to keep the turn going (all are asked when
        `active`, to be told; none is obeyed then)."""
        found = None
        for guard in ctx.stop_guards:
            reason = await guard.before_stop(ctx, active)
            if reason is not None and found is None:
                found = reason
                if not active:
                    break
        return found

    @staticmethod
    def _stop_reason(ctx: TurnContext, steps: int) -> tuple[FinishReason, str] | None:
        if ctx.interrupt.is_set():
            return FinishReason.INTERRUPTED, "interrupted"
        return ctx.budget.check_step(steps, len(ctx.transcript))

    @staticmethod
    def _provider(ctx: TurnContext) -> ChatProvider:
        """The provider for the next model call (kept in `ctx.provider` for what runs before
        the call after it, such as compaction)."""
        if ctx.current_provider is not None:
            ctx.provider = ctx.current_provider()
        return ctx.provider

    @staticmethod
    def _account(ctx: TurnContext, outcome: TurnOutcome, reply: Completion, model: str) -> None:
        outcome.steps += 1
        outcome.usage = outcome.usage + reply.usage
        ctx.budget.charge(reply.usage, model)  # priced by the budget, at the model that answered

    @staticmethod
    def _append(ctx: TurnContext, message: Message) -> None:
        ctx.transcript.append(message)
        ctx.sink.emit(MessageAdded(message=message, turn=ctx.turn))

    def _keep(self, ctx: TurnContext, reply: Completion) -> Message:
        """Append the reply to the transcript; one that is not whole loses its tool calls.

        The calls are dropped rather than answered with error results: their arguments may be
        cut mid-JSON, and servers that parse the history (vLLM, some proxies) reject a request
        holding such a call. A `tool_calls_not_run` notice keeps them in the record.
        """
        calls = reply.message.tool_calls
        if reply.whole or not calls:
            self._append(ctx, reply.message)
            return reply.message
        kept = Message(role="assistant", content=reply.message.content, usage=reply.message.usage)
        self._append(ctx, kept)
        why = _NOT_WHOLE.get(reply.stop, f"stopped by {reply.reason or reply.stop}")
        ctx.sink.emit(ToolCallsNotRun(
            stop_reason=reply.reason or reply.stop, tool_calls=list(calls),
            shown=f"warning: the model's reply was {why}; its {_count(len(calls), 'tool call')} "
                  f"({', '.join(c.name or '?' for c in calls)}) did not run"))

        return kept

    async def _call_tools(self, ctx: TurnContext, batch: list[ToolCall], outcome: TurnOutcome) -> list[ToolResult]:
        """Run a batch of calls — several only of tools that may run at once (`concurrent`:
        subagents), asked of the guards one at a time — and answer each, in the batch's order."""
        if len(batch) == 1:
            runs = [await self._run_call(ctx, batch[0], outcome)]
        else:
            lock = asyncio.Lock()
            runs = list(await asyncio.gather(*(self._run_call(ctx, call, outcome, lock) for call in batch)))
        for call, (subject, result, elapsed) in zip(batch, runs):
            self._append(ctx, Message.tool_result(call, result.content, result.is_error, result.images))
            ctx.sink.emit(ToolFinished(call=call, subject=subject, is_error=result.is_error,
                                       summary=result.summary, duration_s=round(elapsed, 3)))
            outcome.steps += result.steps  # (a subagent's model calls are the turn's too)
            if result.usage is not None:
                outcome.usage = outcome.usage + result.usage
        return [result for _, result, _ in runs]

    async def _run_call(self, ctx: TurnContext, call: ToolCall, outcome: TurnOutcome,
                        lock: asyncio.Lock | None = None) -> tuple[str, ToolResult, float]:
        """Run one call: its subject, its result and how long it took; an interrupt still
        leaves the call answered."""
        outcome.tool_calls += 1
        tool = ctx.tools.get(call.name)
        subject = tool.subject(call.arguments_or_empty()) if tool else ""
        ctx.sink.emit(ToolStarted(call=call, subject=subject))
        started = time.monotonic()
        try:
            result = await ctx.interrupt.race(_by_deadline(
                lambda: self._permitted_call(ctx, call, subject, outcome, lock), ctx.budget.deadline()))
        except Interrupted:
            result = ToolResult(INTERRUPTED_RESULT, is_error=True, summary="interrupted")
        except HaltTurn as exc:  # the call is answered; the turn ends after it
            outcome.halted = str(exc)
            result = (exc.result if isinstance(exc.result, ToolResult)
                      else ToolResult(f"stopped: {exc}", is_error=True, summary="stopped"))
        return subject, result, time.monotonic() - started

    @staticmethod
    async def _permitted_call(ctx: TurnContext, call: ToolCall, subject: str,
                              outcome: TurnOutcome, lock: asyncio.Lock | None = None) -> ToolResult:
        tool = ctx.tools.get(call.name)
        async with lock or contextlib.nullcontext():  # (a batch's guards ask one call at a time)
            permitted = await AgentKernel._permit(ctx, call, tool, subject, outcome)
        if isinstance(permitted, ToolResult):
            return permitted
        call, afters = permitted
        async with ctx.around_tool(ctx, call, tool):
            result = await ctx.tools.execute(call, ctx.tool_context)
        for after in afters:
            result = await after(call, result)
        return result

    @staticmethod
    async def _permit(ctx: TurnContext, call: ToolCall, tool: Tool | None, subject: str,
                      outcome: TurnOutcome) -> ToolResult | tuple[ToolCall, list[Any]]:
        """The call as the guards let it run (with what sees its result), or its denial."""
        afters: list[Any] = []
        approved = False
        for guard in ctx.guards:
            if tool is None:  # an unknown tool runs nothing: no one to ask
                break
            decision = await guard.decide(call.name, tool.kind, subject, call, approved=approved)
            approved = approved or decision.approved
            if decision.allowed and decision.arguments is not None:  # the later guards judge these
                call = replace(call, arguments=json.dumps(decision.arguments))
                subject = tool.subject(decision.arguments)
            if decision.allowed and decision.after is not None:
                afters.append(decision.after)
            if not decision.allowed:
                outcome.denials += 1
                ctx.sink.emit(PermissionDenied(tool=call.name, subject=subject, reason=decision.reason,
                                               tool_use_id=call.id))
                denied = ToolResult(f"permission denied: {decision.reason}. Do not retry this call; "
                                    "find another way or explain what you need.", is_error=True,
                                    summary="permission denied")
                if decision.halt:
                    raise HaltTurn(decision.reason, denied)
                return denied
        return call, afters


def _batches(tools: ToolRegistry, calls: Sequence[ToolCall]) -> list[list[ToolCall]]:
    """The reply's calls in order, in batches: a run of calls to tools that may run at once
    (a `concurrent` attribute set: subagents) is one batch, every other call one of its own."""
    def concurrent(call: ToolCall) -> bool:
        return getattr(tools.get(call.name), "concurrent", False) is True

    batches: list[list[ToolCall]] = []
    for call in calls:
        if batches and concurrent(call) and concurrent(batches[-1][-1]):
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


def ended_by(exc: BaseException, reason: FinishReason, detail: str) -> TurnOutcome:
    """The outcome of a turn that `exc` ended: `reason` and `detail`, with the steps, usage and
    tool calls the turn had spent before it (none when `exc` did not come out of `AgentKernel.run`)."""
    spent = getattr(exc, _PROGRESS, None)
    if not isinstance(spent, TurnOutcome):
        spent = TurnOutcome(reason)
    return replace(spent, finish_reason=reason, detail=detail)


async def side_call(call: str, provider: ChatProvider, messages: Sequence[Message], hooks: ProviderHooks,
                    interrupt: InterruptToken, sink: EventSink) -> Completion:
    """`provider`'s answer to `messages` (no tools) for a model call outside the conversation:
    the goal judge's (`call` "judge"), a compaction summary's ("compaction"). Raced against
    `interrupt` and told to `sink` as `SideCallStarted`/`SideCallFinished`, as a turn's calls
    are told by `ModelRequest`/`ModelReplied`: events that no sink of the conversation shows or
    records (their messages are no part of the transcript) and that telemetry makes a model
    call's span of (a subagent's calls are told the same way, by features/subagents). Raises
    what the call raised."""
    model = provider.model
    sink.emit(SideCallStarted(call=call, provider=provider.name, model=model))
    try:
        reply = await interrupt.race(provider.complete(list(messages), [], hooks))
    except Interrupted:
        sink.emit(SideCallFinished(call=call, model=model, usage=Usage(), error="interrupted", detail="interrupted"))
        raise
    except ProviderError as exc:
        sink.emit(SideCallFinished(call=call, model=model, usage=Usage(), error="provider_error",
                                   detail=exc.reason))
        raise
    # (read after the call: a provider that fell back to another model answered on it)
    sink.emit(SideCallFinished(call=call, model=provider.model, stop=reply.stop, reason=reply.reason,
                               usage=reply.usage, response_model=reply.model, response_id=reply.response_id))
    return reply


def _stop_detail(reply: Completion, cut_off_before: bool) -> str:
    """Why a reply that was not whole ended the turn: `the model stopped: length (…)`."""
    word = reply.reason if reply.stop == "other" and reply.reason else reply.stop
    notes = [_NOT_WHOLE[reply.stop]] if reply.stop in ("length", "content_filter") else []
    if reply.stop == "length" and cut_off_before:
        notes = ["cut off at the output limit twice in a row"]
    if reply.stop == "refusal" and reply.message.content.strip():
        notes = [f'"{_excerpt(reply.message.content)}"']
    if reply.message.tool_calls:
        notes.append(f"{_count(len(reply.message.tool_calls), 'tool call')} not run")
    return f"the model stopped: {word}" + (f" ({'; '.join(notes)})" if notes else "")


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


async def _by_deadline(call: Callable[[], Awaitable[ToolResult]], deadline: float | None) -> ToolResult:
    """The tool call, cut short (its processes stopped, as by an interrupt) when --max-duration
    runs out: answered, so the transcript stays paired and the session resumable."""
    if deadline is None:
        return await call()
    try:
        return await asyncio.wait_for(call(), max(0.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        return ToolResult(OUT_OF_TIME_RESULT, is_error=True, summary="stopped at --max-duration")
