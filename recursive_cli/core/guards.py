"""The extension points a feature uses to stand between the model and the tools.

`ToolGuard`: asked before every tool call runs, in the order added; the first that does not
allow the call denies it (permissions are one guard; hooks will be another). `ContextKeeper`:
asked before every model call to keep the conversation inside the context window (compaction),
and once more when the provider rejects a request as too long.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .kernel import TurnContext


@dataclass(frozen=True)
class Decision:
    """A guard's answer for one call; `reason` is what the model is told when it is denied."""

    allowed: bool
    reason: str = ""


class ToolGuard(Protocol):
    async def decide(self, tool: str, kind: str, subject: str) -> Decision: ...


class ContextKeeper(Protocol):
    async def maybe_compact(self, ctx: TurnContext) -> None:
        """Make room before a model call when the conversation is near the window."""

    async def compact(self, ctx: TurnContext) -> object | None:
        """Make room now, whatever the size; None when there is nothing to do."""
