"""Which subagent the code running now works for: a context variable that a sub-conversation
sets (features/subagents) and that what asks about a tool call reads, so that a client's
`can_use_tool` and hooks can tell the calls of parallel subagents apart (Claude's `agent_id`)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import NamedTuple


class AgentScope(NamedTuple):
    """A running subagent: its id (the `task_started` line's `task_id`) and its type (name)."""

    agent_id: str
    agent_type: str


_CURRENT: contextvars.ContextVar[AgentScope | None] = contextvars.ContextVar("recursive_agent", default=None)


def current_agent() -> AgentScope | None:
    """The subagent the running code works for; None in the main conversation."""
    return _CURRENT.get()


@contextlib.contextmanager
def working_for(scope: AgentScope) -> Iterator[None]:
    """Run the block as `scope`'s (and the tasks it starts)."""
    token = _CURRENT.set(scope)
    try:
        yield
    finally:
        _CURRENT.reset(token)
