"""Tie one command's runtime to its session on disk: create or reopen, lock, record, release."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.budget import Spent
from ...core.provider import Replaying
from ...core.runtime import RuntimeCore
from ...core.settings import Settings
from ...core.state import SessionState, SideReplies
from .lock import SessionLock, acquire_lock
from .meta import FirstPrompt, SessionBudgets, SessionMeta, make_title
from .writer import JsonlSessionWriter

if TYPE_CHECKING:
    from .reader import LoadedSession


@dataclass(slots=True)
class SessionBinding:
    """The open session of this process: its writer (an event sink) and its lock."""

    writer: JsonlSessionWriter
    lock: SessionLock

    def close(self) -> None:
        """fsync, close and give the lock back; safe to call twice."""
        try:
            self.writer.close()
        finally:
            self.lock.release()


def session_meta(runtime: RuntimeCore, settings: Settings, mode: str, prompt: str) -> SessionMeta:
    """The meta.json of a new session started with these settings."""
    return SessionMeta(
        id=runtime.session_id, workspace=str(runtime.workspace), mode=mode,  # type: ignore[arg-type]
        model=runtime.provider.model, provider=runtime.provider.name, api_base=settings.api_base,
        script=str(settings.script.resolve()) if settings.script else None,
        budgets=SessionBudgets(max_cost=settings.max_cost, max_steps=settings.max_steps,
                               max_duration=settings.max_duration),
        permission_mode=settings.permission_mode, allow=list(settings.allow),
        deny=list(settings.deny), sandbox=settings.sandbox, sandbox_network=settings.sandbox_network,
        sandbox_allow_ports=list(settings.sandbox_allow_ports),
        effort=settings.effort, thinking_budget=settings.thinking_budget,
        title=make_title(prompt),
        state={FirstPrompt.key: prompt} if prompt else {})  # in case of a crash before turn 1 starts


def create_session(folder: Path, meta: SessionMeta, runtime: RuntimeCore) -> SessionBinding:
    """Make the session folder, its transcript and its lock; SessionError when that fails."""
    writer = JsonlSessionWriter.create(folder, meta)
    try:
        lock = acquire_lock(folder, meta.id)
    except BaseException:
        writer.close()
        raise
    runtime.state = SessionState(meta.state, lambda state: writer.update_meta(state=state))
    runtime.attach(writer)  # for what changes the session's settings later (remember_model)
    return SessionBinding(writer, lock)


def reopen_session(loaded: LoadedSession, lock: SessionLock, runtime: RuntimeCore) -> SessionBinding:
    """Put a loaded conversation back into `runtime` and append to its transcript from here on.

    Tool calls left unanswered by a crash get a synthetic error result, recorded as `repair`.
    """
    from .reader import repair_orphans, repair_record  # (a new session reads nothing: not imported for it)

    writer = JsonlSessionWriter.reopen(loaded.folder, loaded.meta)
    messages, synthetic = repair_orphans(loaded.messages)
    for message in synthetic:
        writer.write_record(repair_record(message, loaded.turns))
    runtime.set_transcript(runtime.transcript()[:1] + messages)
    runtime.set_turn_index(loaded.turns)
    meta = loaded.meta
    runtime.budget = runtime.budget.resumed(Spent.recorded(meta.usage, meta.cost_usd, meta.steps))
    runtime.state = SessionState(loaded.meta.state, lambda state: writer.update_meta(state=state))
    _skip_replayed_replies(runtime, messages, runtime.state)
    runtime.attach(writer)
    return SessionBinding(writer, lock)


def _skip_replayed_replies(runtime: RuntimeCore, messages: list, saved: SessionState) -> None:
    """A provider replaying a script goes on after the replies the session already used: the
    conversation's and those used outside it (a goal's judge)."""
    if isinstance(runtime.provider, Replaying):
        side = saved.get(SideReplies)
        runtime.provider.skip_replies(sum(1 for m in messages if m.role == "assistant")
                                      + (side.count if side is not None else 0))


def remember_model(runtime: RuntimeCore, model: str) -> None:
    """Record a model chosen mid-session (the chat's /model, headless `set_model`) in
    meta.json, so that a later `resume` goes on with it; nothing when there is no session."""
    writer = runtime.feature(JsonlSessionWriter)
    if writer is not None:
        writer.update_meta(model=model)
