"""The saved sessions under `$RECURSIVE_HOME/sessions/`: find, list, resolve and delete them.

Nothing here deletes a session unless asked to (`remove`, `gc`), and never one that a live
process holds.
"""

from __future__ import annotations

import builtins
import datetime
import shutil
import time
from pathlib import Path

from .ids import check_session_id
from .lock import acquire_lock, live_owner
from .meta import META_FILE, SessionMeta, read_meta
from .records import (AmbiguousSessionError, SessionError, SessionNotFoundError,
                      SessionWriteError)
from .writer import TRANSCRIPT_FILE

SESSIONS_DIR = "sessions"
MAX_CANDIDATES = 10


class SessionStore:
    """The sessions folder of one RECURSIVE_HOME."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.root = home / SESSIONS_DIR

    def folder(self, session_id: str) -> Path:
        """Where the session lives (it may not exist yet); refuses ids that are not a plain name."""
        problem = check_session_id(session_id)
        if problem:
            raise SessionNotFoundError(problem)
        return self.root / session_id

    def exists(self, session_id: str) -> bool:
        """Whether a session folder with this id exists."""
        return check_session_id(session_id) is None and self._is_session(self.root / session_id)

    def ids(self) -> builtins.list[str]:
        """Every session id, sorted (ids sort by creation time)."""
        try:
            entries = builtins.list(self.root.iterdir())
        except OSError:
            return []
        return sorted(entry.name for entry in entries if self._is_session(entry))

    def list(self, workspace: Path | None = None) -> builtins.list[SessionMeta]:
        """The readable sessions, oldest first; only those of `workspace` when it is given."""
        wanted = str(workspace.expanduser().resolve()) if workspace is not None else None
        metas: builtins.list[SessionMeta] = []
        for session_id in self.ids():
            try:
                meta = read_meta(self.root / session_id)
            except SessionError:
                continue
            if wanted is None or meta.workspace == wanted:
                metas.append(meta)
        return sorted(metas, key=lambda meta: (meta.created, meta.id))

    def resolve(self, ref: str) -> str:
        """The id of the session named by `ref`: an exact id, else a unique id prefix."""
        if self.exists(ref):
            return ref
        matches = [session_id for session_id in self.ids() if ref and session_id.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionNotFoundError(f"no session matches {ref!r} (see `recursive sessions list`)")
        shown = ", ".join(matches[:MAX_CANDIDATES])
        more = f" and {len(matches) - MAX_CANDIDATES} more" if len(matches) > MAX_CANDIDATES else ""
        raise AmbiguousSessionError(f"session id {ref!r} is ambiguous; it matches {shown}{more}")

    def latest(self, workspace: Path) -> str | None:
        """The session of `workspace` that was most recently updated, if any."""
        metas = self.list(workspace)
        if not metas:
            return None
        return max(metas, key=lambda meta: (meta.updated, meta.created, meta.id)).id

    def remove(self, session_id: str) -> None:
        """Delete a session; SessionInUseError if a live process holds it."""
        folder = self.folder(session_id)
        if not self._is_session(folder):
            raise SessionNotFoundError(f"no session {session_id!r}")
        with acquire_lock(folder, session_id):  # keeps a resume from starting meanwhile
            try:
                shutil.rmtree(folder)
            except OSError as exc:
                raise SessionWriteError(f"cannot delete session {session_id} ({folder}): "
                                        f"{exc.strerror or exc}") from None

    def gc(self, older_than_seconds: float, dry_run: bool = False) -> builtins.list[SessionMeta]:
        """Delete (or with dry_run only list) sessions not updated for `older_than_seconds`.

        Sessions held by a live process, or whose age cannot be read, are never touched.
        """
        cutoff = time.time() - older_than_seconds
        chosen: builtins.list[SessionMeta] = []
        for meta in self.list():
            updated = _timestamp(meta.updated)
            if updated is None or updated >= cutoff or live_owner(self.root / meta.id) is not None:
                continue
            if not dry_run:
                try:
                    self.remove(meta.id)
                except SessionError:
                    continue
            chosen.append(meta)
        if not dry_run:  # the workspace checkpoints of every removed session go too
            from ..checkpoints.gc import prune_checkpoints

            prune_checkpoints(self)
        return chosen

    @staticmethod
    def _is_session(folder: Path) -> bool:
        return (folder / TRANSCRIPT_FILE).is_file() or (folder / META_FILE).is_file()


def _timestamp(iso: str) -> float | None:
    try:
        moment = datetime.datetime.fromisoformat(iso)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()
