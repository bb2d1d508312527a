"""The extension points a feature uses to stand between the model and the tools.

`ToolGuard`: asked before every tool call runs, in the order added; the first that does not
allow the call denies it (permissions are one guard, the PreToolUse hooks another). A guard
sees the call itself too, may have it run with other arguments (`Decision.arguments`, and the
guards after it judge those) and may see its result before the model does (`Decision.after`).
`PromptFilter`: asked for every prompt before it joins the conversation (UserPromptSubmit
hooks); it may add to the prompt or refuse it (`PromptBlocked`). `ContextKeeper`:
asked before every model call to keep the conversation inside the context window (compaction),
and once more when the provider rejects a request as too long. `StopGuard`: asked when the
model's reply would end the turn (Stop hooks); a reason it gives joins the conversation as a
user message and the same turn goes on, within the same budgets.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .errors import HaltTurn, PromptBlocked  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from .kernel import TurnContext
    from .messages import ToolCall
    from .tool import ToolResult


class Decision(NamedTuple):
    """A guard's answer for one call; `reason` is what the model is told when it is denied."""

    allowed: bool
    reason: str = ""
    arguments: dict[str, Any] | None = None  # allowed, but run with these arguments instead
    # Sees the call's result once it ran, and gives back the result the model gets.
    after: Callable[[ToolCall, ToolResult], Awaitable[ToolResult]] | None = None
    halt: bool = False  # denied, and the turn ends after this call (a hook's `continue: false`)
    approved: bool = False  # allowed by a hook's `allow`: the guards after it do not ask again


class ToolGuard(Protocol):
    async def decide(self, tool: str, kind: str, subject: str, call: ToolCall | None = None,
                     approved: bool = False) -> Decision:
        """`approved`: a guard before this one approved the call; do not ask, but rules that
        deny still deny."""


class PromptFilter(Protocol):
    async def filter_prompt(self, text: str) -> str:
        """The prompt as it joins the conversation (maybe with more context); or PromptBlocked."""


class ContextKeeper(Protocol):
    async def maybe_compact(self, ctx: TurnContext) -> None:
        """Make room before a model call when the conversation is near the window."""

    async def compact(self, ctx: TurnContext) -> object | None:
        """Make room now, whatever the size; None when there is nothing to do."""


class StopGuard(Protocol):
    async def before_stop(self, ctx: TurnContext, active: bool) -> str | None:
        """The model's reply would complete the turn: None lets it end; a text keeps it going,
        with that text as the next user message. `active`: a stop guard already kept this turn
        going once; what is said then is not obeyed (the turn ends), so no guard makes a turn
        endless."""
