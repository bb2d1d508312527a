"""One sub-conversation: a kernel turn of its own, inside the run's process, budget and sandbox.

The subagent gets a fresh transcript (its definition's prompt as the system message, the
task's prompt as the user message), a subset of the run's tools (`SubsetRegistry`, which still
executes through the run's registry, so what a client's `can_use_tool` rewrote is what runs),
the run's tool guards, interrupt token and tool observers (checkpoints), and a `SharedBudget`:
its requests are charged to the run's budget at once, its model calls come out of what is
left of the parent turn's `--max-steps` (shared by the calls of one reply, which run at once),
and its definition's `maxTurns` caps it too. Its events reach the run's sinks through
`SubagentSink`: its messages as `SubagentMessage`s (the session records them under the
parent's call, stream-json shows them with `parent_tool_use_id`), its tool calls, denials and
retries as they are, its model calls as side calls (`SideCallStarted`/`SideCallFinished`,
`call` "subagent": telemetry's spans, which no sink of the conversation shows); the rest
(streamed text) stays inside.
"""

from __future__ import annotations

import datetime
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ...core.agent_scope import AgentScope, working_for
from ...core.budget import Budget, Exceeded
from ...core.events import (
    AgentEvent,
    ApiRetry,
    FinishReason,
    MessageAdded,
    ModelReplied,
    ModelRequest,
    PermissionDenied,
    SideCallFinished,
    SideCallStarted,
    SubagentFinished,
    SubagentMessage,
    SubagentStarted,
    ToolFinished,
    ToolStarted,
)
from ...core.kernel import INTERRUPTED_RESULT, AgentKernel, TurnContext, TurnOutcome, ended_by
from ...core.messages import Message, ToolCall, Usage
from ...core.prompts import project_instructions
from ...core.provider import ChatProvider, ProviderError
from ...core.results import provider_failure
from ...core.runtime import RuntimeCore
from ...core.tool import ToolContext, ToolRegistry, ToolResult
from .definitions import AgentDefinition

SUBAGENT_NOTE = ("You are a subagent: another agent gave you the task in the user message. Work on it with "
                 "your tools until it is done, then answer with a concise report (paths, findings, what "
                 "you changed): your final message is all the other agent sees of your work.")


@dataclass(slots=True)
class StepPool:
    """The model calls the parent turn has left for the subagents of one reply."""

    left: int
    limit: int  # the run's --max-steps, for the message


class SharedBudget(Budget):
    """A subagent's budget: the run's spending and clock, its own step count."""

    def __init__(self, run: Budget, pool: StepPool, max_turns: int | None) -> None:
        super().__init__(limits=run.limits, spent=run.spent, price=run.price, started=run.started,
                         by_model=run.by_model)
        self._run = run
        self._pool = pool
        self._max_turns = max_turns

    def charge(self, usage: Usage, model: str | None = None) -> None:
        self._run.charge(usage, model)
        self.spent = self._run.spent
        self._pool.left -= 1

    def check_step(self, steps: int, messages: int) -> Exceeded | None:
        self.spent = self._run.spent  # (what the parent and other subagents spent meanwhile)
        if self._max_turns is not None and steps >= self._max_turns:
            return Exceeded(FinishReason.MAX_STEPS, f"reached its maxTurns {self._max_turns}")
        if self._pool.left <= 0:
            return Exceeded(FinishReason.MAX_STEPS, f"reached --max-steps {self._pool.limit}")
        return self.check_iteration(messages)


class SubsetRegistry(ToolRegistry):
    """Some of the run's tools, executed by the run's own registry."""

    def __init__(self, run: ToolRegistry, names: Sequence[str]) -> None:
        super().__init__([tool for name in names if (tool := run.get(name)) is not None])
        self._run = run

    async def execute(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        if self.get(call.name) is None:
            return await super().execute(call, ctx)  # (the unknown-tool answer, naming this agent's tools)
        return await self._run.execute(call, ctx)


class SubagentSink:
    """A sub-conversation's events as the run's sinks should see them (module docstring)."""

    _PASSED = (ToolStarted, ToolFinished, PermissionDenied, ApiRetry, SideCallStarted, SideCallFinished)

    def __init__(self, emit: Callable[[AgentEvent], None], started: SubagentStarted,
                 provider: ChatProvider) -> None:
        self._emit = emit
        self._started = started
        self._provider = provider
        self.tool_uses = 0

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, MessageAdded):
            started = self._started
            self._emit(SubagentMessage(parent_tool_use_id=started.tool_use_id, agent_id=started.task_id,
                                       subagent_type=started.subagent_type, model=started.model,
                                       message=event.message))
        elif isinstance(event, self._PASSED):
            self.tool_uses += isinstance(event, ToolStarted)
            self._emit(event)
        elif isinstance(event, ModelRequest):
            self._emit(SideCallStarted(call="subagent", provider=self._provider.name, model=self._provider.model))
        elif isinstance(event, ModelReplied):
            self._emit(SideCallFinished(call="subagent", model=event.model, stop=event.stop, reason=event.reason,
                                        usage=event.usage, response_model=event.response_model,
                                        response_id=event.response_id))


@dataclass(frozen=True, slots=True)
class Assignment:
    """What one `task` call asks: the agent, the task, and the call it answers."""

    agent: AgentDefinition
    description: str
    prompt: str
    call_id: str


def subagent_tools(agent: AgentDefinition, run: ToolRegistry, our_name: Callable[[str], str],
                   unless_named: frozenset[str] = frozenset()) -> list[str]:
    """The run's tools the agent gets, in the run's order: those its `tools` names (all when it
    names none, but `unless_named`), less its `disallowedTools`; never `task` (a
    subagent starts no subagents, as in Claude Code)."""
    wanted = None if agent.tools is None else {our_name(name) for name in agent.tools}
    dropped = {our_name(name) for name in agent.disallowed_tools} | {"task"}
    return [name for name in run.names() if name not in dropped
            and (name in wanted if wanted is not None else name not in unless_named)]


def subagent_prompt(agent: AgentDefinition, runtime: RuntimeCore, tools: list[str], instructions: bool) -> str:
    """The subagent's system prompt: its definition's, where it works, and (unless not
    `instructions`: `--bare`) the workspace's AGENTS.md or CLAUDE.md, as the agent has them."""
    parts = [agent.prompt, SUBAGENT_NOTE, f"Workspace: {runtime.workspace}\nTools: {', '.join(tools) or 'none'}",
             f"Date: {datetime.date.today().isoformat()}",
             project_instructions(runtime.workspace) if instructions else ""]
    return "\n\n".join(part for part in parts if part)


async def run_subagent(runtime: RuntimeCore, job: Assignment, provider: ChatProvider, tools: list[str],
                       pool: StepPool, instructions: bool = True) -> ToolResult:
    """Run the sub-conversation and answer the parent's call with its final text (an error
    result, with what it said, when it did not finish)."""
    started = SubagentStarted(task_id=f"a{secrets.token_hex(8)}", tool_use_id=job.call_id,
                              description=job.description, subagent_type=job.agent.name, prompt=job.prompt,
                              model=provider.model)
    sink = SubagentSink(runtime.emit, started, provider)
    registry = SubsetRegistry(runtime.tools, tools)
    parent = runtime.turn_context()
    ctx = replace(parent, transcript=[Message.system(subagent_prompt(job.agent, runtime, registry.names(), instructions))],
                  provider=provider, tools=registry, sink=sink, current_provider=None, stop_guards=(),
                  budget=SharedBudget(runtime.budget, pool, job.agent.max_turns))
    clock = time.monotonic()
    runtime.emit(started)
    outcome = TurnOutcome(FinishReason.INTERRUPTED, detail="interrupted")
    try:
        prompt = Message.user(job.prompt)
        ctx.transcript.append(prompt)
        sink.emit(MessageAdded(message=prompt, turn=parent.turn))
        with working_for(AgentScope(started.task_id, job.agent.name)):
            outcome = await _turn(ctx)
    finally:
        status: Literal["completed", "failed", "stopped"] = (
            "completed" if outcome.finish_reason is FinishReason.COMPLETED else
            "stopped" if outcome.finish_reason is FinishReason.INTERRUPTED else "failed")
        usage = {"total_tokens": outcome.usage.input_tokens + outcome.usage.output_tokens,
                 "tool_uses": sink.tool_uses, "duration_ms": int((time.monotonic() - clock) * 1000)}
        runtime.emit(SubagentFinished(task_id=started.task_id, tool_use_id=job.call_id, status=status,
                                      summary=outcome.text if status == "completed" else outcome.detail,
                                      finish_reason=outcome.finish_reason.value, usage=usage,
                                      subagent_type=job.agent.name, description=job.description))
    return _result(job, outcome)


async def _turn(ctx: TurnContext) -> TurnOutcome:
    """The kernel's turn; a provider failure ends it as it would end the parent's."""
    try:
        return await AgentKernel().run(ctx)
    except ProviderError as exc:
        return ended_by(exc, provider_failure(exc.unavailable), exc.reason)


def _result(job: Assignment, outcome: TurnOutcome) -> ToolResult:
    steps = f"{outcome.steps} step" + ("" if outcome.steps == 1 else "s")
    if outcome.finish_reason is FinishReason.COMPLETED:
        return ToolResult(outcome.text.strip() or "(the subagent finished without a report)",
                          summary=f"{job.agent.name}: {steps}", steps=outcome.steps, usage=outcome.usage)
    if outcome.finish_reason is FinishReason.INTERRUPTED:  # (as any call the interrupt stopped)
        return ToolResult(INTERRUPTED_RESULT, is_error=True, summary="interrupted", steps=outcome.steps,
                          usage=outcome.usage)
    said = f"\nIts last words:\n{outcome.text.strip()}" if outcome.text.strip() else ""
    return ToolResult(f"the {job.agent.name} subagent stopped before it finished ({outcome.finish_reason.value}: "
                      f"{outcome.detail}).{said}", is_error=True, summary=f"{job.agent.name} stopped: {steps}",
                      steps=outcome.steps, usage=outcome.usage)
