"""`recursive resume`: continue a saved session with its own settings (SPEC §5)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..runtime import AgentRuntime
from ..sessions.lock import acquire_lock
from ..sessions.reader import LoadedSession, load_session
from ..sessions.records import SessionError
from ..sessions.resume import pick_session, restore_settings
from ..sessions.store import SessionStore
from ..settings import ConfigError, LoadedSettings, load_settings
from .errors import fail
from .launch import Launch, Work, launch
from .options import CommonOptions
from .prompt_input import read_prompt

CONTINUE = "Continue."
# Each module has `resume_work(session: LoadedSession, prompt: str) -> Work`.
DRIVER_MODULES = {"loop": ".loop_cmd", "goal": ".goal_cmd"}


def resume_command(common: CommonOptions, words: list[str], last: bool) -> int:
    """Resume SESSION (or this workspace's latest) with PROMPT, or carry on where it stopped."""
    try:
        loaded = load_settings(common.as_flags())
    except ConfigError as exc:
        return fail(str(exc))
    ref, prompt_words = (None, words) if last or not words else (words[0], words[1:])
    store = SessionStore(loaded.home)
    workspace = (common.workspace or Path.cwd()).expanduser().resolve()
    try:
        session_id = pick_session(store, ref, workspace)
        lock = acquire_lock(store.folder(session_id), session_id)
    except SessionError as exc:
        return fail(str(exc))
    if lock.warning:
        _warn(lock.warning)
    try:
        session = load_session(store.folder(session_id))
    except SessionError as exc:
        lock.release()
        return fail(str(exc))
    for warning in session.warnings:
        _warn(warning)
    settings, notes = restore_settings(loaded, session.meta)
    for note in notes:
        sys.stderr.write(note + "\n")
    if not settings.workspace.is_dir():
        lock.release()
        return fail(f"the workspace of session {session_id} no longer exists: {settings.workspace} "
                    "(pass -C DIR to resume it in another folder)")
    restored = LoadedSettings(settings, loaded.sources, loaded.home)
    work = _work(read_prompt(prompt_words), session)
    return launch(Launch(restored, session.meta.mode, session_id, resumed=session, lock=lock), work)


def _work(prompt: str, session: LoadedSession) -> Work:
    """Loop and goal sessions go back to their driver; a run gets the new prompt, or continues
    an unfinished turn, or gets "Continue.".

    A run that died before its first turn began still owes its first prompt (kept in meta.json):
    that prompt runs first, as turn 1, and a new PROMPT follows as turn 2 once it completed.
    """
    if session.meta.mode in DRIVER_MODULES:
        import importlib

        driver = importlib.import_module(DRIVER_MODULES[session.meta.mode], __package__)
        return driver.resume_work(session, prompt)
    first = str(session.meta.state.get("first_prompt") or "") if not session.messages else ""
    if first and prompt and session.turns == 0:

        async def both(runtime: AgentRuntime):  # type: ignore[no-untyped-def]
            runtime.enqueue(prompt)  # `run` takes it up after the first prompt's turn completes
            return await runtime.run(first)

        return both
    prompt = prompt or first
    if prompt:
        return lambda runtime: runtime.run(prompt)
    last = session.messages[-1] if session.messages else None
    if last is not None and (last.role in ("user", "tool") or last.tool_calls):

        async def carry_on(runtime: AgentRuntime):  # type: ignore[no-untyped-def]
            return await runtime.continue_turn()

        return carry_on
    return lambda runtime: runtime.run(CONTINUE)


def _warn(text: str) -> None:
    sys.stderr.write(f"warning: {text}\n")
