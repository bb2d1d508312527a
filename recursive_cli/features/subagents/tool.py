"""The `task` tool (Claude Code's `Agent`, once `Task`): hand a task to a subagent.

Its arguments are Claude's (`description`, `prompt`, `subagent_type`, `model`; Claude's
`run_in_background` is taken and ignored: a subagent always runs while the call waits, and the
calls of one reply run at once). Its description lists the agents the run has (`Subagents`),
so it is built again when an agent is added (the SDK's `initialize`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar

from msgspec import Meta

from ...core.errors import ConfigError
from ...core.events import AgentEvent, ModelRequest, TurnStarted
from ...core.messages import ToolCall
from ...core.provider import ChatProvider, ToolSpec
from ...core.runtime import RuntimeCore
from ...core.tool import BaseTool, Tool, ToolContext, ToolKind, ToolResult, args_schema
from .definitions import GENERAL, GENERAL_PURPOSE, AgentDefinition, merge
from .runner import Assignment, StepPool, run_subagent, subagent_tools

TASK_TOOL = "task"
# The tools a subagent gets only when its definition names them: plan mode's answer, the loop's
# own controls (they steer the main conversation's loop) and the todo list (the run has one).
UNLESS_NAMED = frozenset({"exit_plan_mode", "stop_loop", "schedule_wakeup", "todo_write"})
_CLAUDE_ALIASES = frozenset({"sonnet", "opus", "haiku", "fable"})
_CALL: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar("recursive_task_call", default=None)


@dataclass(slots=True, kw_only=True)
class TaskArgs:
    description: Annotated[str, Meta(description="A short (3-5 word) description of the task")]
    prompt: Annotated[str, Meta(description="The task for the agent to perform")]
    subagent_type: Annotated[str | None, Meta(description="The type of specialized agent to use for this task")] = None
    model: Annotated[str | None, Meta(description="Optional model for this agent instead of its definition's "
                                                  "(sonnet, opus, haiku, or a model name)")] = None
    run_in_background: Annotated[bool | None, Meta(description="Ignored here: the agent always runs while "
                                                               "this call waits for its report")] = None


class TaskTool(BaseTool[TaskArgs]):
    name: ClassVar[str] = TASK_TOOL
    description: ClassVar[str] = "Launch a new agent to handle a complex, multi-step task on its own."
    kind: ClassVar[ToolKind] = "read"  # (what the subagent does is asked of the guards call by call)
    Args = TaskArgs
    subject_field = "description"
    concurrent: ClassVar[bool] = True  # the task calls of one reply run at once (kernel)

    def __init__(self, agents: Subagents | None = None, listed: Sequence[AgentDefinition] = ()) -> None:
        """The tool of a run's `agents`; with none, only a listing of `listed` (`recursive tools`)."""
        self._agents = agents
        self._listed = list(listed)
        self._spec: ToolSpec | None = None

    def spec(self) -> ToolSpec:
        """Built once (`Subagents.add` makes a new tool): the same object each step, as other tools'."""
        if self._spec is None:
            defined = self._agents.definitions if self._agents is not None else self._listed
            self._spec = ToolSpec(self.name, describe_agents(defined), args_schema(TaskArgs))
        return self._spec

    async def run(self, args: TaskArgs, ctx: ToolContext) -> ToolResult:
        if self._agents is None:
            return ToolResult("no subagents in this run", is_error=True, summary="no subagents")
        call = _CALL.get()
        agent = self._agents.find(args.subagent_type or GENERAL)
        if agent is None:
            known = ", ".join(found.name for found in self._agents.all())
            return ToolResult(f"unknown subagent_type {args.subagent_type!r}; available: {known}",
                              is_error=True, summary="unknown agent")
        job = Assignment(agent, args.description, args.prompt, call.id if call is not None else "")
        return await self._agents.run(job, args.model)


class Subagents:
    """The run's subagent definitions and what their conversations need of the run: the
    tools they may get, a provider per model, and what the parent turn has left of its steps
    (an event sink: the parent's model requests say how many it made)."""

    def __init__(self, runtime: RuntimeCore, provider_for: Callable[[str], ChatProvider],
                 our_name: Callable[[str], str] = lambda name: name, instructions: bool = True) -> None:
        self.runtime = runtime
        self.instructions = instructions  # the workspace's AGENTS.md in their prompts (not with --bare)
        self.definitions: list[AgentDefinition] = []
        self._provider_for = provider_for
        self._our_name = our_name
        self._pool = StepPool(runtime.budget.limits.max_steps, runtime.budget.limits.max_steps)

    def add(self, definitions: list[AgentDefinition]) -> None:
        """Add definitions (a name already defined keeps its first one); the tool's list follows."""
        self.definitions = merge(self.definitions, definitions)
        self.runtime.add_tool(TaskTool(self))  # (again: its description names them all)

    def all(self) -> list[AgentDefinition]:
        """Every agent a call may name: the defined ones, then Claude Code's built-in one."""
        return merge(self.definitions, [GENERAL_PURPOSE])

    def find(self, name: str) -> AgentDefinition | None:
        return next((found for found in self.all() if found.name == name), None)

    def names(self) -> list[str]:
        return [found.name for found in self.all()]

    async def run(self, job: Assignment, model: str | None) -> ToolResult:
        """Run `job` on its model (the call's `model`, else its definition's, else the run's)."""
        try:
            provider = self._provider(model or job.agent.model)
        except ConfigError as exc:  # (a model its provider cannot reach: no key, no script)
            return ToolResult(f"cannot start the {job.agent.name} subagent on {model or job.agent.model}: {exc}",
                              is_error=True, summary="no provider")
        tools = subagent_tools(job.agent, self.runtime.tools, self._our_name, UNLESS_NAMED)
        try:
            return await run_subagent(self.runtime, job, provider, tools, self._pool, self.instructions)
        finally:
            if provider is not self.runtime.provider:
                with contextlib.suppress(Exception):
                    await provider.aclose()

    def _provider(self, model: str | None) -> ChatProvider:
        current = self.runtime.provider
        if (not model or model == "inherit" or current.name == "scripted"
                or (model in _CLAUDE_ALIASES and current.name != "anthropic")):
            return current  # (Claude's aliases mean nothing to another provider's models)
        return self._provider_for(model)

    def emit(self, event: AgentEvent) -> None:
        """The parent turn's model requests: what its subagents may still spend of --max-steps."""
        limit = self.runtime.budget.limits.max_steps
        if isinstance(event, ModelRequest):
            self._pool = StepPool(limit - event.step, limit)
        elif isinstance(event, TurnStarted):
            self._pool = StepPool(limit, limit)


def describe_agents(definitions: Sequence[AgentDefinition]) -> str:
    """The task tool's description: how to use it, and every agent a call may name."""
    lines = [TaskTool.description, "Each agent starts with no context of its own: give it a complete, "
             "self-contained prompt, and say what it should report. Its final report comes back as "
             "this call's result and is not shown to the user. To run several agents at once, make "
             "several task calls in one reply.", "Available agent types (subagent_type):"]
    lines += [f"- {found.name}: {found.description}" for found in merge(definitions, [GENERAL_PURPOSE])]
    return "\n".join(lines)


class _CallScope:
    """A tool observer: the call a task tool runs for, where the tool can read it."""

    @contextlib.asynccontextmanager
    async def around_tool(self, runtime: RuntimeCore, turn: int, call: ToolCall,
                          tool: Tool) -> AsyncIterator[None]:
        token = _CALL.set(call)
        try:
            yield
        finally:
            _CALL.reset(token)


def attach_subagents(runtime: RuntimeCore, definitions: list[AgentDefinition],
                     provider_for: Callable[[str], ChatProvider],
                     our_name: Callable[[str], str] = lambda name: name, instructions: bool = True) -> Subagents:
    """Give the runtime the task tool for `definitions` (more can be added later)."""
    agents = Subagents(runtime, provider_for, our_name, instructions)
    runtime.attach(agents)
    runtime.add_event_sink(agents)
    runtime.add_tool_observer(_CallScope())
    agents.add(definitions)
    return agents

