"""Hook callbacks a client registered in `initialize`, called back over the control channel.

`{"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 30}]}`: before a
matching tool call we send `hook_callback` for `hook_0` with Claude's hook input and read
Claude's hook output (`decision`, `continue`, `hookSpecificOutput`). Supported here:
`PreToolUse` (allow, deny, ask, `updatedInput`, `additionalContext`, stop), `PostToolUse`
(`additionalContext`, a block's reason, `continue: false` ending the turn after the call),
`UserPromptSubmit` (block, `additionalContext`) and `Stop` (block: the agent goes on with the
reason). A callback that fails blocks when its matcher says `onFailure` other than
`continue`, and is skipped otherwise.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from .channel import ControlChannel, ControlError

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class HookMatcher:
    """One matcher of one event: which tools (a name, `A|B`, a regex, or all) and its callbacks."""

    matcher: str | None
    callback_ids: tuple[str, ...]
    timeout: float
    blocks_on_failure: bool

    def matches(self, tool: str | None) -> bool:
        if tool is None or self.matcher in (None, "", "*"):
            return True
        pattern = self.matcher or ""
        try:
            return re.fullmatch(pattern, tool) is not None
        except re.error:
            return pattern == tool


@dataclass(frozen=True)
class ToolVerdict:
    """What the PreToolUse hooks said about one call."""

    decision: str | None = None  # allow, deny, ask; None when no hook decided
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    stop: bool = False  # a hook said `continue: false`: the turn ends
    contexts: tuple[str, ...] = ()  # additionalContext, for the model after the call's result


@dataclass(frozen=True)
class ResultVerdict:
    """What the PostToolUse hooks said about one call's result."""

    notes: tuple[str, ...] = ()  # a block's reason and additionalContext, in order
    contexts: tuple[str, ...] = ()
    stop: str | None = None  # `continue: false`: the turn ends, for this reason


@dataclass(frozen=True)
class PromptVerdict:
    """What the UserPromptSubmit hooks said about one prompt."""

    blocked: bool = False
    reason: str = ""
    context: str = ""


class HookSet:
    """The registered hooks, by event."""

    def __init__(self, config: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self._by_event: dict[str, list[HookMatcher]] = {}
        for event, matchers in (config or {}).items():
            self._by_event[event] = [_matcher(entry) for entry in matchers or []]

    def has(self, event: str) -> bool:
        return bool(self._by_event.get(event))

    async def call(self, channel: ControlChannel, event: str, payload: dict[str, Any],
                   tool: str | None = None, tool_use_id: str | None = None) -> list[dict[str, Any]]:
        """Call every callback of `event` that matches `tool`, in order; their outputs."""
        outputs: list[dict[str, Any]] = []
        for matcher in self._by_event.get(event, []):
            if not matcher.matches(tool):
                continue
            for callback_id in matcher.callback_ids:
                request = {"subtype": "hook_callback", "callback_id": callback_id,
                           "input": {**payload, "hook_event_name": event}, "tool_use_id": tool_use_id}
                try:
                    outputs.append(await asyncio.wait_for(channel.request(request), matcher.timeout))
                except (ControlError, asyncio.TimeoutError) as exc:
                    if matcher.blocks_on_failure:
                        why = str(exc) or "timed out"
                        outputs.append({"decision": "block", "reason": f"{event} hook failed: {why}"})
        return outputs


def tool_verdict(outputs: list[dict[str, Any]]) -> ToolVerdict:
    """The PreToolUse outputs combined as Claude Code does: deny over ask over allow."""
    decision: str | None = None
    reason, updated, stop = "", None, False
    rank = {None: 0, "allow": 1, "ask": 2, "deny": 3}
    for output in outputs:
        specific = _specific(output)
        said = specific.get("permissionDecision")
        if output.get("decision") == "block":
            said = "deny"
        elif said is None and output.get("decision") == "approve":
            said = "allow"
        if said in rank and rank[said] > rank[decision]:
            decision = said
            reason = str(specific.get("permissionDecisionReason") or output.get("reason") or "")
        if isinstance(specific.get("updatedInput"), dict):
            updated = specific["updatedInput"]
        if output.get("continue") is False:
            stop = True
            reason = reason or str(output.get("stopReason") or "")
    return ToolVerdict(decision, reason, updated, stop, _contexts(outputs))


def result_verdict(outputs: list[dict[str, Any]]) -> ResultVerdict:
    """The PostToolUse outputs combined: blocks' reasons, contexts, and the first stop."""
    blocks = [f"PostToolUse hook: {output.get('reason') or 'blocked'}" for output in outputs
              if output.get("decision") == "block"]
    stops = [str(output.get("stopReason") or "no reason given") for output in outputs
             if output.get("continue") is False]
    return ResultVerdict(tuple(blocks), _contexts(outputs), stops[0] if stops else None)


def _specific(output: dict[str, Any]) -> dict[str, Any]:
    specific = output.get("hookSpecificOutput")
    return specific if isinstance(specific, dict) else {}


def _contexts(outputs: list[dict[str, Any]]) -> tuple[str, ...]:
    found = (_specific(output).get("additionalContext") for output in outputs)
    return tuple(text for text in found if isinstance(text, str) and text.strip())


def prompt_verdict(outputs: list[dict[str, Any]]) -> PromptVerdict:
    """The UserPromptSubmit outputs combined: any block blocks; contexts add up."""
    blocked, reason = False, ""
    for output in outputs:
        if output.get("decision") == "block" or output.get("continue") is False:
            blocked = True
            reason = reason or str(output.get("reason") or output.get("stopReason") or "")
    return PromptVerdict(blocked, reason, "\n\n".join(_contexts(outputs)))


def stop_reason(outputs: list[dict[str, Any]]) -> str | None:
    """The reason a Stop hook gave for going on (`decision: block`), or None to stop."""
    for output in outputs:
        if output.get("decision") == "block":
            return str(output.get("reason") or "Continue.")
    return None


def _matcher(entry: dict[str, Any]) -> HookMatcher:
    timeout = entry.get("timeout")
    return HookMatcher(matcher=entry.get("matcher"), callback_ids=tuple(entry.get("hookCallbackIds") or ()),
                       timeout=float(timeout) if isinstance(timeout, (int, float)) and timeout > 0
                       else DEFAULT_TIMEOUT,
                       blocks_on_failure=entry.get("onFailure") not in (None, "continue"))
