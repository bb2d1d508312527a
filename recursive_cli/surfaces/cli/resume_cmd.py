"""`recursive resume`: continue a saved session with its own settings (SPEC §5)."""

from __future__ import annotations

import sys
from pathlib import Path

from ...core.settings import ConfigError, LoadedSettings, load_settings
from ...features.sessions.lock import acquire_lock
from ...features.sessions.reader import LoadedSession, load_session
from ...features.sessions.records import SessionError
from ...features.sessions.resume import pick_session, restore_settings
from ...features.sessions.store import SessionStore
from .errors import fail
from .launch import Launch, Work, launch
from .options import CommonOptions
from .prompt_input import read_prompt


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
    """The session's driver, from the table, continues it (drivers/__init__.py)."""
    from ...drivers import driver_for

    driver = driver_for(session.meta.mode)
    return lambda runtime: driver.resume(runtime, session, prompt)


def _warn(text: str) -> None:
    sys.stderr.write(f"warning: {text}\n")
