"""The agent runtime: one per process; owns the transcript, sinks, budgets and per-run state."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from .budget import Budget
from .events import (AgentEvent, ApiRetry, EventSink, FanoutSink, FinishReason, MessageAdded,
                     NullSink, TurnFinished, TurnStarted)
from .interrupt import InterruptToken
from .kernel import AgentKernel, TurnContext, TurnOutcome
from .messages import Message, Usage
from .permissions import AskHook, PermissionPolicy
from .providers.base import ChatProvider, ProviderError, RetryNotice
from .tools.base import TodoItem, ToolContext, ToolRegistry


class TurnObserver(Protocol):
    """Something that acts around every turn (checkpoints snapshot the workspace here)."""

    async def before_turn(self, runtime: AgentRuntime, turn: int) -> None: ...

    async def after_turn(self, runtime: AgentRuntime, turn: int, outcome: TurnOutcome) -> None: ...


class AgentRuntime:
    """Drives turns of the kernel over one conversation. Build it with `AgentRuntime.builder()`."""

    def __init__(self, *, provider: ChatProvider, tools: ToolRegistry, tool_context: ToolContext,
                 system_prompt: str, budget: Budget | None = None, sink: EventSink | None = None,
                 session_id: str = "", kernel: AgentKernel | None = None,
                 permissions: PermissionPolicy | None = None) -> None:
        self.provider = provider
        self.tools = tools
        self.tool_context = tool_context
        self.budget = budget or Budget()
        self.session_id = session_id
        self.permissions = permissions or PermissionPolicy()
        self._sink: EventSink = sink or NullSink()
        self._kernel = kernel or AgentKernel()
        self._transcript: list[Message] = [Message.system(system_prompt)]
        self._queue: collections.deque[str] = collections.deque()
        self._interrupt = InterruptToken()
        self._turn = 0
        self._observers: list[TurnObserver] = []
        self._save_state: Callable[[dict[str, Any]], None] = lambda state: None
        self.state: dict[str, Any] = {}  # loop/goal/feature state, kept in the session's meta
        self.mode = "run"
        self.total_steps = 0
        self.started = time.monotonic()

    @staticmethod
    def builder() -> AgentRuntimeBuilder:
        from .builder import AgentRuntimeBuilder

        return AgentRuntimeBuilder()

    async def run(self, text: str) -> TurnOutcome:
        """One turn on `text`, then one more per queued message; returns the last turn's outcome."""
        outcome = await self._run_turn(text)
        while self._queue and outcome.finish_reason is FinishReason.COMPLETED:
            outcome = await self._run_turn(self._queue.popleft())
        return outcome

    async def continue_turn(self) -> TurnOutcome:
        """Pick an interrupted conversation up where it stopped, with no new user message."""
        return await self._run_turn(None)

    async def _run_turn(self, text: str | None) -> TurnOutcome:
        self._turn += 1
        for observer in self._observers:
            await observer.before_turn(self, self._turn)
        self._sink.emit(TurnStarted(turn=self._turn, prompt=text or ""))
        if text is not None:
            prompt = Message.user(text)
            self._transcript.append(prompt)
            self._sink.emit(MessageAdded(message=prompt, turn=self._turn))
        try:
            outcome = await self._kernel.run(self._context())
        except ProviderError as exc:
            outcome = TurnOutcome(FinishReason.PROVIDER_ERROR, detail=exc.reason)
        self.total_steps += outcome.steps
        for observer in self._observers:
            await observer.after_turn(self, self._turn, outcome)
        self._sink.emit(TurnFinished(turn=self._turn, finish_reason=outcome.finish_reason,
                                     steps=outcome.steps, usage=outcome.usage,
                                     cost_usd=self.budget.total_cost, detail=outcome.detail))
        return outcome

    def _context(self) -> TurnContext:
        from .pricing import cost_usd

        model = self.provider.model
        return TurnContext(transcript=self._transcript, provider=self.provider, tools=self.tools,
                           tool_context=self.tool_context, budget=self.budget, sink=self._sink,
                           interrupt=self._interrupt, turn=self._turn, permissions=self.permissions,
                           price=lambda usage: cost_usd(model, usage), retry=self._on_retry)

    def _on_retry(self, notice: RetryNotice) -> None:
        self._sink.emit(ApiRetry(attempt=notice.attempt, max_retries=notice.max_retries,
                                 retry_delay_ms=int(notice.delay_seconds * 1000),
                                 error_status=notice.status, error=notice.reason))

    def emit(self, event: AgentEvent) -> None:
        """Send an event to the run's sinks (drivers and features report through this)."""
        self._sink.emit(event)

    def add_turn_observer(self, observer: TurnObserver) -> None:
        self._observers.append(observer)

    def set_state_saver(self, save: Callable[[dict[str, Any]], None]) -> None:
        """Where `save_state` persists `state` (the session's meta.json)."""
        self._save_state = save

    def save_state(self, key: str, value: Any) -> None:
        """Set `state[key]` and persist the whole state at once (None removes the key)."""
        if value is None:
            self.state.pop(key, None)
        else:
            self.state[key] = value
        self._save_state(dict(self.state))

    def enqueue(self, text: str) -> None:
        """Queue a message to run as a turn after the current one (FIFO)."""
        self._queue.append(text)

    def queue_len(self) -> int:
        return len(self._queue)

    def transcript(self) -> list[Message]:
        """A copy of the conversation, system message first."""
        return list(self._transcript)

    def set_transcript(self, messages: list[Message]) -> None:
        """Replace the conversation. A new list object, so caches keyed on the old one start over."""
        self._transcript = list(messages)

    def truncate_transcript(self, n: int) -> None:
        """Keep the first `n` messages (the system prompt is message 0)."""
        self._transcript = self._transcript[:n]

    def set_event_sink(self, sink: EventSink) -> None:
        self._sink = sink

    def add_event_sink(self, sink: EventSink) -> None:
        self._sink = FanoutSink([self._sink, sink])

    def set_interrupt_token(self, token: InterruptToken) -> None:
        self._interrupt = token

    def interrupt(self, signal: int = 2) -> None:
        """Stop at once: kill running tool processes, end the turn as `interrupted`."""
        self._interrupt.set(signal)
        self.tool_context.processes.kill_all()

    @property
    def interrupt_token(self) -> InterruptToken:
        return self._interrupt

    def set_permission_hook(self, hook: AskHook | None) -> None:
        """Who answers `ask`-mode questions; None denies them (headless)."""
        self.permissions.ask = hook

    def current_todos(self) -> list[TodoItem]:
        return list(self.tool_context.todos)

    def turn_index(self) -> int:
        return self._turn

    def set_turn_index(self, turn: int) -> None:
        self._turn = turn

    @property
    def usage(self) -> Usage:
        return self.budget.usage

    @property
    def workspace(self) -> Path:
        return self.tool_context.workspace

    async def aclose(self) -> None:
        await self.provider.aclose()
