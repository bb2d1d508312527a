"""A model call outside the conversation (the goal judge's, a compaction summary's), told to the sinks.

(A subagent's model calls are told the same way: features/subagents turns its kernel's
`ModelRequest`/`ModelReplied` into these events, with `call` "subagent".)

The kernel announces each call of a turn (`ModelRequest`, `ModelReplied`); the calls that
drivers and features make of a provider themselves are announced here instead, as
`SideCallStarted` and `SideCallFinished`: events that no sink of the conversation shows or
records (their messages are no part of the transcript), and that telemetry makes a model
call's span and counts in its token metric.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import Interrupted, ProviderError
from .events import EventSink, SideCallFinished, SideCallStarted
from .interrupt import InterruptToken
from .messages import Message, Usage
from .provider import ChatProvider, Completion, ProviderHooks


async def side_call(call: str, provider: ChatProvider, messages: Sequence[Message], hooks: ProviderHooks,
                    interrupt: InterruptToken, sink: EventSink) -> Completion:
    """`provider`'s answer to `messages` (no tools), raced against `interrupt`, announced to
    `sink` as the side call `call` ("judge", "compaction"); raises what the call raised."""
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
