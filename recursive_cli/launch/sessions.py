"""Opening a saved session for a command: `resume SESSION`, `-c` (this workspace's latest),
the interactive session's `/resume ID`; loaded, locked, with its saved settings under the
flags given now, and its driver to carry it on."""

from __future__ import annotations

import sys
from pathlib import Path

from ..agent import AgentRuntime
from ..core.errors import CliError
from ..core.kernel import TurnOutcome
from ..core.settings import LoadedSettings
from ..features.sessions.lock import acquire_lock
from ..features.sessions.reader import LoadedSession, load_session
from ..features.sessions.records import SessionError, SessionNotFoundError
from ..features.sessions.resume import pick_session, restore_settings
from ..features.sessions.store import SessionStore
from .errors import EXIT_USAGE
from .options import CommonOptions
from .run import Launch, Work
from .settings import command_settings


def continue_launch(common: CommonOptions, mode: str, prompt: str) -> Launch:
    """`-c`: this workspace's latest session, to go on with a `mode` command on `prompt` (none:
    carry on as `resume --last` does); CliError when there is none to be had."""
    if common.session_id:
        raise CliError("--continue goes on with the latest session; it cannot take --session-id "
                    "(to continue a given session: recursive resume SESSION)", EXIT_USAGE)
    if common.no_session:
        raise CliError("--continue needs the saved session; it cannot be used with --no-session",
                    EXIT_USAGE)
    spec = open_session(common, None, continuing=True)
    if prompt:  # the command's own driver, on the session's conversation (and its own judge)
        spec.mode, spec.judge_model = mode, None
    return spec


def open_session(common: CommonOptions, ref: str | None, continuing: bool = False) -> Launch:
    """The session `ref` names (None: this workspace's latest), loaded and locked, with its
    saved settings under the flags given now; CliError (exit 1) when it cannot be had."""
    loaded = command_settings(common)
    store = SessionStore(loaded.home)
    workspace = (common.workspace or Path.cwd()).expanduser().resolve()
    try:
        session_id = pick_session(store, ref, workspace)
        lock = acquire_lock(store.folder(session_id), session_id)
    except SessionNotFoundError as exc:
        if continuing and ref is None:
            raise CliError(f"no session to continue in {workspace}: start one with `recursive run "
                           "PROMPT`, or see `recursive sessions list --all-workspaces`") from None
        raise CliError(str(exc)) from None
    except SessionError as exc:
        raise CliError(str(exc)) from None
    if lock.warning:
        _warn(lock.warning)
    try:
        session = load_session(store.folder(session_id), loaded.settings.prices)
    except SessionError as exc:
        lock.release()
        raise CliError(str(exc)) from None
    for warning in session.warnings:
        _warn(warning)
    settings, notes = restore_settings(loaded, session.meta)
    for note in notes:
        sys.stderr.write(note + "\n")
    if not settings.workspace.is_dir():
        lock.release()
        raise CliError(f"the workspace of session {session_id} no longer exists: {settings.workspace} "
                    "(pass -C DIR to resume it in another folder)")
    restored = LoadedSettings(settings, loaded.sources, loaded.home, trust=loaded.trust, held=loaded.held)
    return Launch(restored, session.meta.mode, session_id, resumed=session, lock=lock,
                  judge_model=saved_judge_model(session))


def saved_judge_model(session: LoadedSession) -> str | None:
    """The `--judge-model` a goal session was started with (its judge goes on with it, and its
    price is needed for --max-cost); None for other sessions, or a damaged goal state, which
    the goal driver reports when it resumes."""
    if session.meta.mode != "goal":
        return None
    from ..core.state import SessionState
    from ..drivers.goal_state import GoalState

    try:
        state = SessionState(session.meta.state).get(GoalState)
    except SessionError:
        return None
    return state.judge_model if state is not None else None


def resumed_work(prompt: str, session: LoadedSession) -> Work:
    """The session's driver, from the table, continues it (drivers/__init__.py); with no
    PROMPT, on the oldest message `recursive queue` left for it, if any."""
    from ..drivers import driver_for

    driver = driver_for(session.meta.mode)

    async def work(runtime: AgentRuntime) -> TurnOutcome:
        return await driver.resume(runtime, session, prompt or runtime.take_inbox() or "")

    return work


def _warn(text: str) -> None:
    sys.stderr.write(f"warning: {text}\n")
