"""Which session a headless run continues: `--session-id`, `--resume ID`, `--continue`,
`--fork-session` (a new session id that starts from a copy of the conversation),
`--resume-session-at` (the conversation up to a message: resume_at.py). A new session's id is
a UUID, as Claude Code's are (features/sessions/ids.py)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ...core.settings import LoadedSettings
from ...features.sessions.ids import check_session_id, is_uuid, new_uuid_session_id
from ...features.sessions.lock import SessionLock, acquire_lock
from ...features.sessions.meta import write_meta
from ...features.sessions.reader import LoadedSession, load_session
from ...features.sessions.records import (
    SessionError,
    SessionExistsError,
    SessionHeader,
    SessionNotFoundError,
    dump_record,
    now_iso,
)
from ...features.sessions.resume import pick_session, restore_settings
from ...features.sessions.store import SessionStore
from ...features.sessions.writer import TRANSCRIPT_FILE
from .flags import HeadlessOptions, UsageError
from .resume_at import truncate


@dataclass
class Continued:
    """The session to run in: its id, the settings to run with and, when it existed, the
    loaded session and its lock."""

    session_id: str
    loaded: LoadedSettings
    resumed: LoadedSession | None = None
    lock: SessionLock | None = None


def pick(options: HeadlessOptions, loaded: LoadedSettings) -> Continued:
    """The session for these options; UsageError for a bad id, SessionError for one that
    cannot be had (missing, in use, unreadable)."""
    wanted = options.session_id
    if wanted is not None and check_session_id(wanted):
        raise UsageError(check_session_id(wanted) or "")
    if loaded.settings.no_session or not (options.continue_session or options.resume is not None):
        return Continued(wanted or new_uuid_session_id(), loaded)
    store = SessionStore(loaded.home)
    workspace = loaded.settings.workspace.expanduser().resolve()
    if options.continue_session or options.resume == "":
        latest = store.latest(workspace)
        if latest is None:
            sys.stderr.write(f"note: no session to continue in {workspace}; starting a new one\n")
            return Continued(wanted or new_uuid_session_id(), loaded)
        ref = latest
    else:
        ref = _ours_or_claudes(store, options.resume or "", workspace)
    if options.fork_session:
        if options.resume_session_at:  # (refused before the copy is made)
            truncate(load_session(store.folder(ref)), options.resume_session_at, options.resume_drops_turn,
                     apply=False)
        ref = fork(store, ref, wanted or new_uuid_session_id())
    elif wanted is not None and wanted != ref:
        raise UsageError("--session-id with --resume names a new session: add --fork-session")
    lock = acquire_lock(store.folder(ref), ref)
    try:
        session = load_session(store.folder(ref))
        if options.resume_session_at and truncate(session, options.resume_session_at, options.resume_drops_turn):
            session = load_session(store.folder(ref))
        settings, _notes = restore_settings(loaded, session.meta)
    except BaseException:
        lock.release()
        raise
    restored = LoadedSettings(settings, loaded.sources, loaded.home, loaded.env, loaded.trust, loaded.held)
    return Continued(ref, restored, session, lock)


def _ours_or_claudes(store: SessionStore, ref: str, workspace: Path) -> str:
    """The session `ref` names: one of ours, else one only Claude's transcript of this workspace
    holds (an SDK's fork or SessionStore copy, a Claude Code session), imported under its id."""
    try:
        return pick_session(store, ref, workspace)
    except SessionNotFoundError:
        from .claude_import import import_claude_session

        if is_uuid(ref) and import_claude_session(store, ref, workspace):
            return ref
        raise


def fork(store: SessionStore, source: str, new_id: str) -> str:
    """Copy session `source` into a new session `new_id`: the same conversation and settings
    under a new id; the source is left as it was. Returns `new_id`."""
    old = load_session(store.folder(source))  # (read whole: a live writer only appends)
    folder = store.folder(new_id)
    if folder.exists():
        raise SessionExistsError(f"session {new_id} already exists ({folder})")
    data = old.transcript_path.read_bytes()
    rest = data.split(b"\n", 1)[1] if b"\n" in data else b""
    meta = replace(old.meta, id=new_id, created=now_iso(), status="interrupted")
    folder.mkdir(parents=True, mode=0o700)
    write_meta(folder, meta)
    header = SessionHeader(id=new_id, created=meta.created, workspace=meta.workspace)
    _write(folder / TRANSCRIPT_FILE, dump_record(header) + rest)
    return new_id


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise SessionError(f"cannot write {path}: {exc.strerror or exc}") from None
