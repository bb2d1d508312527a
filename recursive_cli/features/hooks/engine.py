"""The hooks attached to a runtime: where each event fires, and what its outcome does.

PreToolUse is a tool guard (the first: what it changes, the permission rules judge): deny and
exit 2 are permission denials like any other; `ask` asks the terminal where there is one and
denies headless; `updatedInput` changes the call's arguments. PostToolUse sees each result
(a block's reason reaches the model after the result). The `additionalContext` of both reaches
the model after the call's result, as Claude Code places it (context.py). UserPromptSubmit
filters each prompt (block, or context added to it). Stop is a stop guard: when the model's
reply would complete a turn, a block makes the agent go on in the same turn with the reason as
a user message; the next Stop hook of that turn is sent `stop_hook_active: true` and its block
is not obeyed (the turn's budgets are checked before every step as always). SessionStart
fires before the first turn (its context joins the first prompt), SessionEnd when the runtime
closes, PreCompact before a compaction. SubagentStart fires as a subagent starts (matched by
its type; it cannot block: its `additionalContext` joins the subagent's prompt), SubagentStop
when a subagent's reply would end its work: a stop guard of the sub-conversation, as Stop is of
the agent's (a block makes the subagent go on with the reason; the next one is sent
`stop_hook_active: true` and not obeyed).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.guards import Decision, HaltTurn, PromptBlocked
from ...core.messages import ToolCall
from ...core.tool import ToolResult
from ...tools.claude_names import ClaudeView, claude_name
from .config import HookConfig
from .context import context_note, with_notes
from .notices import HookFinished, HookStarted
from .runner import HookOutcome, run_hook

if TYPE_CHECKING:
    from ...core.kernel import TurnContext
    from ...core.runtime import RuntimeCore

Asker = Callable[[str, str], Awaitable[bool]]
_RANK = {None: 0, "allow": 1, "ask": 2, "deny": 3}
_ids = itertools.count(1)


class HookEngine:
    """The user's command hooks for one runtime (see the module docstring)."""

    def __init__(self, runtime: RuntimeCore, config: HookConfig, *, transcript_path: Callable[[], str] = str,
                 asker: Callable[[], Asker | None] = lambda: None,
                 permission_mode: Callable[[], str] = lambda: "default") -> None:
        self.runtime = runtime
        self.config = config
        self.view = ClaudeView(runtime.workspace)
        self._transcript_path = transcript_path
        self._asker = asker
        self._permission_mode = permission_mode
        self._started = False
        self._ended = False
        self._start_context = ""

    # -- running -----------------------------------------------------------------------------

    def base(self, event: str) -> dict[str, Any]:
        return {"session_id": self.runtime.session_id, "transcript_path": self._transcript_path(),
                "cwd": str(self.runtime.workspace), "permission_mode": self._permission_mode(),
                "hook_event_name": event}

    async def fire(self, event: str, fields: dict[str, Any], tool: str | None = None,
                   word: str | None = None) -> list[HookOutcome]:
        """Run every hook of `event` that matches `tool` (or the event's `word`), in order."""
        outcomes = []
        for hook in self.config.for_event(event, tool if tool is not None else word):
            hook_id = f"hook_{next(_ids)}"
            name = f"{event}:{claude_name(tool)}" if tool else event
            self.runtime.emit(HookStarted(hook_id=hook_id, hook_name=name, hook_event=event,
                                          command=hook.command, source=hook.source))
            outcome = await run_hook(hook, {**self.base(event), **fields}, self.runtime.workspace,
                                     env={"CLAUDE_PROJECT_DIR": str(self.runtime.workspace),
                                          "RECURSIVE_PROJECT_DIR": str(self.runtime.workspace)})
            self.runtime.emit(HookFinished(
                hook_id=hook_id, hook_name=name, hook_event=event, outcome=outcome.outcome,
                exit_code=outcome.exit_code, duration_s=outcome.duration_s,
                reason=outcome.reason if outcome.blocked else outcome.error,
                stdout=outcome.stdout[-4000:], stderr=outcome.stderr[-4000:]))
            outcomes.append(outcome)
        return outcomes

    # -- PreToolUse / PostToolUse: a tool guard ----------------------------------------------

    def present(self, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Claude's name and input shape for a call; an apply_patch also gets the `file_path`
        (the first file it touches) and `file_paths` Claude's Edit hooks read."""
        name, shown = self.view.present_input(tool, arguments)
        found = self.runtime.tools.get(tool)
        if tool == "apply_patch" and found is not None:
            paths = [str(self.runtime.workspace / part) for part in found.subject(arguments).split(", ") if part]
            if paths:
                shown = {**shown, "file_path": paths[0], "file_paths": paths}
        return name, shown

    async def decide(self, tool: str, kind: str, subject: str, call: ToolCall | None = None,
                     approved: bool = False) -> Decision:
        posts = bool(self.config.for_event("PostToolUse", tool))
        if call is None or not self.config.for_event("PreToolUse", tool):
            return Decision(True, after=self._after if posts else None)
        arguments = call.arguments_or_empty()
        name, shown = self.present(tool, arguments)
        outcomes = await self.fire("PreToolUse", {"tool_name": name, "tool_input": shown,
                                                  "tool_use_id": call.id}, tool=tool)
        notes = [context_note("PreToolUse", name, o.context) for o in outcomes if o.context]
        after = self._after_with(notes) if notes or posts else None
        stops = [outcome for outcome in outcomes if outcome.stop]
        if stops:  # `continue: false`: this call is denied and the turn ends
            why = stops[0].stop_reason or stops[0].reason or "no reason given"
            return Decision(False, f"a PreToolUse hook stopped the run: {why}", halt=True)
        decision: str | None = None
        reason, updated = "", None
        for outcome in outcomes:
            said = "deny" if outcome.blocked else outcome.decision
            if _RANK[said] > _RANK[decision]:
                decision, reason = said, outcome.reason or outcome.stop_reason
            if outcome.updated_input is not None:
                updated = outcome.updated_input
        if decision == "deny":
            return Decision(False, f"PreToolUse hook: {reason}" if reason else "denied by a PreToolUse hook")
        if decision == "ask":
            ask = self._asker()
            if ask is None:
                return Decision(False, "a PreToolUse hook asks for permission and there is no one to "
                                       "ask (headless): denied" + (f" ({reason})" if reason else ""))
            if not await ask(tool, subject):
                return Decision(False, "the user said no")
        new = self.view.take_input(tool, updated, arguments) if updated is not None else None
        return Decision(True, arguments=new, after=after, approved=decision == "allow")

    def _after_with(self, notes: list[str]) -> Callable[[ToolCall, ToolResult], Awaitable[ToolResult]]:
        """The after-call step: the PreToolUse hooks' `notes`, then the PostToolUse hooks'."""
        async def after(call: ToolCall, result: ToolResult) -> ToolResult:
            result = with_notes(result, notes)
            return await self._after(call, result) if self.config.for_event("PostToolUse", call.name) else result

        return after

    async def _after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        name, shown = self.present(call.name, call.arguments_or_empty())
        outcomes = await self.fire("PostToolUse", {
            "tool_name": name, "tool_input": shown, "tool_use_id": call.id,
            "tool_response": {"content": result.content, "is_error": result.is_error}}, tool=call.name)
        notes = []
        for outcome in outcomes:
            if outcome.blocked:
                notes.append(f"PostToolUse hook: {outcome.reason}")
            if outcome.context:
                notes.append(context_note("PostToolUse", name, outcome.context))
        result = with_notes(result, notes)
        stops = [outcome for outcome in outcomes if outcome.stop]
        if stops:  # `continue: false`: the call ran; the turn ends after it
            why = stops[0].stop_reason or stops[0].reason or "no reason given"
            raise HaltTurn(f"a PostToolUse hook stopped the run: {why}", result)
        return result

    # -- UserPromptSubmit and SessionStart: a prompt filter ------------------------------------

    async def filter_prompt(self, text: str) -> str:
        if not self._started:
            await self._session_start()
        outcomes = await self.fire("UserPromptSubmit", {"prompt": text})
        blocked = [o for o in outcomes if o.blocked or o.stop]
        if blocked:
            raise PromptBlocked(f"prompt blocked by a UserPromptSubmit hook: "
                                f"{blocked[0].reason or blocked[0].stop_reason or 'no reason given'}")
        contexts = [o.context for o in outcomes if o.context]
        if self._start_context:
            contexts.insert(0, self._start_context)
            self._start_context = ""
        return "\n\n".join([text, *contexts]) if contexts else text

    async def _session_start(self) -> None:
        self._started = True
        source = "resume" if self.runtime.turn_index() > 1 else "startup"
        outcomes = await self.fire("SessionStart", {"source": source}, word=source)
        self._start_context = "\n\n".join(o.context for o in outcomes if o.context)

    # -- Stop: a stop guard -------------------------------------------------------------------

    async def before_stop(self, ctx: TurnContext, active: bool) -> str | None:
        """The reason of the first Stop hook that blocks, as the model is told it; the kernel
        does not obey it when `active` (the second block in a row in a turn)."""
        outcomes = await self.fire("Stop", {"stop_hook_active": active, "last_assistant_message": _last_reply(ctx)})
        blocked = [o for o in outcomes if o.blocked]
        return f"Stop hook: {blocked[0].reason or 'Continue.'}" if blocked else None

    # -- SubagentStart and SubagentStop -------------------------------------------------------

    async def subagent_start(self, agent_id: str, agent_type: str) -> str:
        """Tell SubagentStart hooks; the context they add to the subagent's prompt ("" for none)."""
        outcomes = await self.fire("SubagentStart", {"agent_id": agent_id, "agent_type": agent_type},
                                   word=agent_type)
        return "\n\n".join(o.context for o in outcomes if o.context)

    def subagent_stop_guard(self, agent_id: str, agent_type: str) -> SubagentStopGuard | None:
        """The stop guard of one subagent's conversation, when there are SubagentStop hooks."""
        return SubagentStopGuard(self, agent_id, agent_type) if self.config.has("SubagentStop") else None

    # -- SessionEnd and PreCompact ---------------------------------------------------------------

    async def session_end(self, reason: str = "other") -> None:
        if self._ended or not self._started:
            return
        self._ended = True
        await self.fire("SessionEnd", {"reason": reason}, word=reason)


class SubagentStopGuard:
    """SubagentStop hooks, asked when a subagent's reply would end its work (a stop guard of
    its conversation): the first block's reason keeps it going, as Stop's keeps the agent."""

    def __init__(self, engine: HookEngine, agent_id: str, agent_type: str) -> None:
        self._engine = engine
        self._agent_id = agent_id
        self._agent_type = agent_type

    async def before_stop(self, ctx: TurnContext, active: bool) -> str | None:
        outcomes = await self._engine.fire("SubagentStop", {
            "stop_hook_active": active, "agent_id": self._agent_id, "agent_type": self._agent_type,
            "agent_transcript_path": self._engine.base("SubagentStop")["transcript_path"],
            "last_assistant_message": _last_reply(ctx)}, word=self._agent_type)
        blocked = [o for o in outcomes if o.blocked]
        return f"SubagentStop hook: {blocked[0].reason or 'Continue.'}" if blocked else None


def _last_reply(ctx: TurnContext) -> str:
    """The text of the reply that would end the turn (Stop hooks' `last_assistant_message`)."""
    last = ctx.transcript[-1] if ctx.transcript else None
    return last.content if last is not None and last.role == "assistant" else ""


def hook_compaction(keeper: Any, engine: HookEngine) -> None:
    """Fire PreCompact each time `keeper` compacts (before a model call near the window, or
    after a too-long rejection: both `auto`)."""
    inner = keeper.compact

    async def compact(ctx: TurnContext) -> object | None:
        await engine.fire("PreCompact", {"trigger": "auto", "custom_instructions": ""}, word="auto")
        return await inner(ctx)

    keeper.compact = compact


def attach_hooks(runtime: RuntimeCore, config: HookConfig, *, home: Path,
                 asker: Callable[[], Asker | None] = lambda: None,
                 permission_mode: Callable[[], str] = lambda: "default") -> HookEngine:
    """Attach `config`'s hooks to `runtime`: the first tool guard, a prompt filter, a stop
    guard, the PreCompact wrapper; `engine.session_end()` fires SessionEnd."""
    from ..sessions.store import SESSIONS_DIR
    from ..sessions.writer import TRANSCRIPT_FILE

    def transcript() -> str:
        if not runtime.session_id:
            return ""
        return str(home / SESSIONS_DIR / runtime.session_id / TRANSCRIPT_FILE)

    engine = HookEngine(runtime, config, transcript_path=transcript, asker=asker,
                        permission_mode=permission_mode)
    runtime.attach(engine)
    runtime.guards.insert(0, engine)  # first: the permission rules judge what it changed
    runtime.prompt_filters.append(engine)
    if config.has("Stop"):
        runtime.stop_guards.append(engine)
    if runtime.compactor is not None and config.has("PreCompact"):
        hook_compaction(runtime.compactor, engine)
    return engine

