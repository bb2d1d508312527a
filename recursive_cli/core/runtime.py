"""The agent runtime: one per process; owns the transcript, sinks, budgets and per-run state."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .budget import Budget
from .errors import SessionWriteError
from .events import (
    AgentEvent,
    ApiRetry,
    EventSink,
    FanoutSink,
    FinishReason,
    MessageAdded,
    NullSink,
    TurnFinished,
    TurnStarted,
)
from .guards import ContextKeeper, PromptBlocked, PromptFilter, StopGuard, ToolGuard
from .interrupt import InterruptToken
from .kernel import AgentKernel, TurnContext, TurnOutcome, ended_by
from .messages import Image, Message, ToolCall, Usage
from .pricing import Price
from .provider import ChatProvider, ContextLengthError, ProviderError, RetryNotice
from .results import provider_failure
from .state import SessionState
from .tool import TodoItem, Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:  # (only named in annotations: a run that is no goal makes none)
    from .event_models import GoalSummary

F = TypeVar("F")


class TurnObserver(Protocol):
    """Something that acts around every turn (checkpoints snapshot the workspace here)."""

    async def before_turn(self, runtime: RuntimeCore, turn: int) -> None: ...

    async def after_turn(self, runtime: RuntimeCore, turn: int, outcome: TurnOutcome) -> None: ...


class ToolObserver(Protocol):
    """Something that acts around every tool call that runs (checkpoints snapshot the
    workspace here, to tell what the session itself changed)."""

    def around_tool(self, runtime: RuntimeCore, turn: int, call: ToolCall,
                    tool: Tool) -> contextlib.AbstractAsyncContextManager[None]: ...


class Inbox(Protocol):
    """Messages left for the session from outside the process (`recursive queue`)."""

    def has_waiting(self) -> bool:
        """Whether a message waits."""
        ...

    def take(self) -> str | None:
        """The oldest waiting message, claimed for the turn about to start (None: none waits)."""
        ...

    async def arrival(self) -> None:
        """Return once a message waits."""
        ...


class RuntimeCore:
    """Drives turns of the kernel over one conversation; knows no driver, surface or feature.

    Features attach through declared extension points: turn observers, tool observers, event
    sinks, the state saver, tools, and `attach(feature)` / `feature(kind)` for a feature other
    features look up (the loop's jobs, the checkpointer). The library's `AgentRuntime`
    (agent.py) adds the drivers and `builder()` on top.
    """

    def __init__(self, *, provider: ChatProvider, tools: ToolRegistry, tool_context: ToolContext,
                 system_prompt: str, budget: Budget | None = None, sink: EventSink | None = None,
                 session_id: str = "", kernel: AgentKernel | None = None) -> None:
        self.provider = provider  # may be replaced at any time: the kernel's next model call uses it
        self.tools = tools
        self.tool_context = tool_context
        self.budget = budget or Budget(price=Price(provider.model))
        self.session_id = session_id
        self._sink: EventSink = sink or NullSink()
        self._kernel = kernel or AgentKernel()
        self._transcript: list[Message] = [Message.system(system_prompt)]
        self._queue: collections.deque[str] = collections.deque()
        self._interrupt = InterruptToken()
        self._turn = 0
        self._in_kernel = False  # a turn's steps are running (its context holds the transcript list)
        self._names_stale = False  # the tools changed while they ran: the system prompt's list is old
        self._observers: list[TurnObserver] = []
        self._tool_observers: list[ToolObserver] = []
        self._features: dict[type, object] = {}
        self.state = SessionState()  # a typed part per feature (goal, loop…), kept in meta.json
        self.goal_summary: GoalSummary | None = None  # a goal run's part of the final result line
        # How the builder writes the system prompt for a tool list (None: keep it as given).
        self.system_prompt_for: Callable[[list[str]], str] | None = None
        self.guards: list[ToolGuard] = []  # asked before every tool call (permissions, hooks)
        self.prompt_filters: list[PromptFilter] = []  # asked for every prompt (hooks)
        self.stop_guards: list[StopGuard] = []  # asked when a reply would end a turn (Stop hooks)
        self.compactor: ContextKeeper | None = None  # keeps the context bounded (compaction)
        self.total_steps = 0
        self.inbox: Inbox | None = None  # messages queued from other processes, taken between turns
        self.next_images: tuple[Image, ...] = ()  # go with the next prompt (`-i`, `@file.png`, stream-json)
        self.next_prompt_uuid: str | None = None  # the next prompt's id, when its client chose one

    async def run(self, text: str) -> TurnOutcome:
        """One turn on `text`, then one more per queued message (the inbox's after the
        `enqueue`d ones); returns the last turn's outcome."""
        outcome = await self._run_turn(text)
        while outcome.finish_reason is FinishReason.COMPLETED and not self._interrupt.is_set():
            queued = self._queue.popleft() if self._queue else self.take_inbox()
            if queued is None:
                break
            outcome = await self._run_turn(queued)
        return outcome

    def take_inbox(self) -> str | None:
        """The oldest message waiting in the inbox, if there is one."""
        return self.inbox.take() if self.inbox is not None else None

    async def continue_turn(self) -> TurnOutcome:
        """Pick an interrupted conversation up where it stopped, with no new user message."""
        return await self._run_turn(None)

    async def compact_now(self) -> object | None:
        """Summarise the older part of the conversation now, whatever its size (None: nothing to
        do, or no compactor attached)."""
        return None if self.compactor is None else await self.compactor.compact(self._context())

    async def _kernel_turn(self) -> TurnOutcome:
        """The kernel's turn; a context-length rejection gets one compaction and one more try."""
        try:
            return await self._kernel.run(self._context())
        except ContextLengthError as exc:
            if await self.compact_now() is None:
                raise
            spent = ended_by(exc, FinishReason.COMPLETED, "")  # the steps before the rejection count
            outcome = await self._kernel.run(self._context())
            return replace(outcome, steps=spent.steps + outcome.steps, usage=spent.usage + outcome.usage,
                           tool_calls=spent.tool_calls + outcome.tool_calls,
                           denials=spent.denials + outcome.denials)

    async def _run_turn(self, text: str | None) -> TurnOutcome:
        self._turn += 1
        for observer in self._observers:
            await observer.before_turn(self, self._turn)
        try:
            self._sink.emit(TurnStarted(turn=self._turn, prompt=text or ""))
            if text is not None:
                for prompt_filter in self.prompt_filters:  # (UserPromptSubmit hooks)
                    text = await prompt_filter.filter_prompt(text)
                prompt = Message.user(text, self.next_images)
                self.next_images = ()
                self._transcript.append(prompt)
                chosen, self.next_prompt_uuid = self.next_prompt_uuid, None
                added = MessageAdded(message=prompt, turn=self._turn)
                self._sink.emit(added if chosen is None else dataclasses.replace(added, uuid=chosen))
            if self._names_stale:
                self._name_tools()
            self._in_kernel = True
            try:
                outcome = await self._kernel_turn()
            finally:
                self._in_kernel = False
        except PromptBlocked as exc:  # the prompt never joined the conversation
            outcome = TurnOutcome(FinishReason.PERMISSION_DENIED, detail=str(exc))
        except ProviderError as exc:  # keeps the steps and usage of the steps that ran
            outcome = replace(ended_by(exc, provider_failure(exc.unavailable), exc.reason), api_status=exc.status)
        except SessionWriteError as exc:  # the session sink stopped the turn before an unrecorded action
            outcome = ended_by(exc, FinishReason.IO_ERROR, str(exc))
        self.total_steps += outcome.steps
        for observer in self._observers:
            await observer.after_turn(self, self._turn, outcome)
        self._sink.emit(TurnFinished(turn=self._turn, finish_reason=outcome.finish_reason,
                                     steps=outcome.steps, usage=outcome.usage,
                                     cost_usd=self.budget.total_cost, detail=outcome.detail))
        return outcome

    def turn_context(self) -> TurnContext:
        """The context a turn's steps run with now (a feature runs a sub-conversation on a copy
        of it: the same guards, budget, interrupt and tool observers)."""
        return self._context()

    def _context(self) -> TurnContext:
        return TurnContext(transcript=self._transcript, provider=self.provider, tools=self.tools,
                           tool_context=self.tool_context, budget=self.budget, sink=self._sink,
                           interrupt=self._interrupt, turn=self._turn, guards=tuple(self.guards),
                           stop_guards=tuple(self.stop_guards),
                           current_provider=lambda: self.provider,  # `provider` may be replaced mid-turn
                           retry=self._on_retry,
                           before_model_call=self._before_model_call,
                           around_tool=self._around_tool)

    async def _before_model_call(self, ctx: TurnContext) -> None:
        if self.compactor is not None:
            await self.compactor.maybe_compact(ctx)

    def _on_retry(self, notice: RetryNotice) -> None:
        self._sink.emit(ApiRetry(attempt=notice.attempt, max_retries=notice.max_retries,
                                 retry_delay_ms=int(notice.delay_seconds * 1000),
                                 error_status=notice.status, error=notice.reason))

    def emit(self, event: AgentEvent) -> None:
        """Send an event to the run's sinks (drivers and features report through this)."""
        self._sink.emit(event)

    def add_turn_observer(self, observer: TurnObserver) -> None:
        self._observers.append(observer)

    def add_tool_observer(self, observer: ToolObserver) -> None:
        """Wrap every tool call that runs with `observer.around_tool` (the first added outermost)."""
        self._tool_observers.append(observer)

    @contextlib.asynccontextmanager
    async def _around_tool(self, ctx: TurnContext, call: ToolCall,
                           tool: Tool | None) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if tool is not None:  # an unknown tool runs nothing
                for observer in self._tool_observers:
                    await stack.enter_async_context(observer.around_tool(self, ctx.turn, call, tool))
            yield

    def attach(self, feature: object) -> None:
        """Make `feature` findable by its type (one of each kind per runtime)."""
        self._features[type(feature)] = feature

    def feature(self, kind: type[F]) -> F | None:
        """The attached feature of type `kind`, if any."""
        found = self._features.get(kind)
        return found if isinstance(found, kind) else None

    def add_tool(self, tool: Tool) -> None:
        """Give the agent another tool (or a new version of one it has, by name), and name it
        in the system prompt's tool list too."""
        known = tool.name in self.tools.names()
        self.tools.add(tool)
        if not known:
            self._name_tools()

    def remove_tool(self, name: str) -> None:
        """Take a tool away from the agent (and from the system prompt's list); none of that
        name is fine. Its calls from then on are unknown-tool errors for the model."""
        if self.tools.remove(name):
            self._name_tools()

    def _name_tools(self) -> None:
        """The system prompt names the tools as they are now; while a turn's steps run, at the
        start of the next turn instead (the steps hold the transcript list, and the model is
        offered the tools themselves at every step anyway)."""
        if self._in_kernel:
            self._names_stale = True
            return
        self._names_stale = False
        if self.system_prompt_for is not None and self._transcript[0].role == "system":
            rebuilt = Message.system(self.system_prompt_for(self.tools.names()))
            self.set_transcript([rebuilt, *self._transcript[1:]])

    def set_state_saver(self, save: Callable[[dict[str, Any]], None]) -> None:
        """Where `state.put` persists the state (the session's meta.json)."""
        self.state.set_saver(save)

    def enqueue(self, text: str) -> None:
        """Queue a message to run as a turn after the current one (FIFO)."""
        self._queue.append(text)

    def queue_len(self) -> int:
        return len(self._queue)

    def take_queued(self) -> list[str]:
        """Remove and return the queued messages, oldest first (an interrupted turn leaves
        them: the interactive session gives them back to the user's input line)."""
        taken = list(self._queue)
        self._queue.clear()
        return taken

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

    def add_guard(self, guard: ToolGuard) -> None:
        """Ask `guard` before every tool call (after the guards added before it)."""
        self.guards.append(guard)

    def current_todos(self) -> list[TodoItem]:
        return list(self.tool_context.todos)

    def in_turn(self) -> bool:
        """Whether a turn's steps are running now."""
        return self._in_kernel

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
        if self.tool_context.commands is not None:
            self.tool_context.commands.close()  # (the sandbox's private temp folder)
