"""The saved sessions under `$RECURSIVE_HOME/sessions/`: find, list, resolve and delete them.

Nothing here deletes a session unless asked to (`remove`, `gc`), and never one that a live
process holds. A session that cannot be used (invalid meta.json, lost transcript) is never
hidden: `entries` reports it as damaged, and `latest` refuses to skip it.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .ids import check_session_id
from .lock import acquire_lock, live_owner
from .meta import META_FILE, SessionMeta, read_meta
from .records import AmbiguousSessionError, SessionError, SessionNotFoundError, SessionReadError, SessionWriteError
from .writer import TRANSCRIPT_FILE

SESSIONS_DIR = "sessions"
MAX_CANDIDATES = 10
_HEADER_LIMIT = 64 * 1024  # a transcript's first line is far shorter; never read more for it


@dataclass(slots=True)
class SessionEntry:
    """One session folder as `sessions list` shows it: readable (`meta`) or damaged (`problem`)."""

    id: str
    meta: SessionMeta | None  # None when meta.json cannot be read
    problem: str  # why the session cannot be resumed as it is; "" when it can
    workspace: str | None  # from meta.json, else the transcript's header; None when unknown
    created: str
    updated: str
    status: str  # meta's; `interrupted` for a `running` one whose process is gone; or `damaged`


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

    def entries(self, workspace: Path | None = None) -> builtins.list[SessionEntry]:
        """Every session, damaged ones included, oldest first; with `workspace`, those of it
        and the damaged ones whose workspace cannot be told."""
        wanted = str(workspace.expanduser().resolve()) if workspace is not None else None
        found = [self._entry(session_id) for session_id in self.ids()]
        kept = [e for e in found if wanted is None or e.workspace in (wanted, None)]
        return sorted(kept, key=lambda entry: (entry.created, entry.id))

    def _entry(self, session_id: str) -> SessionEntry:
        folder = self.root / session_id
        try:
            meta = read_meta(folder)
        except SessionError as exc:
            header = _header(folder / TRANSCRIPT_FILE)
            when = _mtime_iso(folder)
            if (folder / META_FILE).exists():
                problem = str(exc).replace(str(folder / META_FILE), META_FILE)  # a short table cell
            else:
                problem = f"{META_FILE} is missing" + (
                    "; `resume` rebuilds it from the transcript" if header else "")
            workspace = header.get("workspace")
            return SessionEntry(session_id, None, problem,
                                workspace if isinstance(workspace, str) else None,
                                str(header.get("created") or when), when, "damaged")
        from .reader import lost_conversation  # (the reader pulls in the kernel: only when listing)

        problem = lost_conversation(folder, meta) or ""
        status: str = meta.status
        if problem:
            status = "damaged"
        elif status == "running" and live_owner(folder) is None:
            status = "interrupted"  # killed: nobody holds its lock any more
        return SessionEntry(session_id, meta, problem, meta.workspace, meta.created, meta.updated,
                            status)

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
        """The session of `workspace` that was most recently updated, if any.

        SessionReadError when a damaged session (of this workspace, or of an unknown one) is
        newer than that: `--last` must not pick an older session without saying so.
        """
        entries = self.entries(workspace)
        usable = [e for e in entries if not e.problem]
        best = max(usable, key=lambda e: (_timestamp(e.updated) or 0.0, e.created, e.id),
                   default=None)
        newest = -1.0 if best is None else (_timestamp(best.updated) or 0.0)
        damaged = [e for e in entries
                   if e.problem and (_timestamp(e.updated) or float("inf")) > newest]
        if damaged:
            raise SessionReadError(_damaged_latest(max(damaged, key=lambda e: e.updated), best))
        return best.id if best is not None else None

    def remove(self, session_id: str) -> None:
        """Delete a session; SessionInUseError if a live process holds it."""
        folder = self.folder(session_id)
        if not self._is_session(folder):
            raise SessionNotFoundError(f"no session {session_id!r}")
        with acquire_lock(folder, session_id):  # keeps a resume from starting meanwhile
            view = _claude_view(folder, session_id)
            try:
                shutil.rmtree(folder)
            except OSError as exc:
                raise SessionWriteError(f"cannot delete session {session_id} ({folder}): "
                                        f"{exc.strerror or exc}") from None
            if view is not None:  # Claude's transcript of it, else `--resume ID` would bring it back
                with contextlib.suppress(OSError):
                    view.unlink(missing_ok=True)
                shutil.rmtree(view.with_suffix(""), ignore_errors=True)  # (its subagents' transcripts)

    def stale(self, older_than_seconds: float,
              workspace: Path | None = None) -> builtins.list[SessionMeta]:
        """The sessions (of `workspace` when given) not updated for `older_than_seconds`, oldest
        first. Sessions held by a live process, or whose age cannot be read, are never chosen."""
        cutoff = time.time() - older_than_seconds
        chosen: builtins.list[SessionMeta] = []
        for meta in self.list(workspace):
            updated = _timestamp(meta.updated)
            if updated is None or updated >= cutoff or live_owner(self.root / meta.id) is not None:
                continue
            chosen.append(meta)
        return chosen

    def gc(self, older_than_seconds: float, dry_run: bool = False,
           workspace: Path | None = None) -> builtins.list[SessionMeta]:
        """Delete (or with dry_run only list) the `stale` sessions; returns those removed (or that
        would be). Their checkpoints are the caller's to prune (checkpoints/gc.py)."""
        chosen = self.stale(older_than_seconds, workspace)
        if dry_run:
            return chosen
        removed: builtins.list[SessionMeta] = []
        for meta in chosen:
            try:
                self.remove(meta.id)
            except SessionError:
                continue
            removed.append(meta)
        return removed

    @staticmethod
    def _is_session(folder: Path) -> bool:
        return (folder / TRANSCRIPT_FILE).is_file() or (folder / META_FILE).is_file()


def _claude_view(folder: Path, session_id: str) -> Path | None:
    """Where Claude's transcript of a headless session is (its id is a UUID), when meta.json says."""
    from .claude_paths import view_path
    from .ids import is_uuid

    if not is_uuid(session_id):
        return None
    try:
        return view_path(Path(read_meta(folder).workspace), session_id)
    except (SessionError, OSError, ValueError):
        return None


def _damaged_latest(damaged: SessionEntry, best: SessionEntry | None) -> str:
    other = (f"; the latest readable one is {best.id} (`recursive resume {best.id}`)"
             if best is not None else "")
    return (f"the latest session, {damaged.id}, is damaged: {damaged.problem}{other}; "
            f"name the session to resume, or remove the damaged one with "
            f"`recursive sessions rm {damaged.id}`")


def _header(path: Path) -> dict[str, object]:
    """The transcript's `session` header line as a dict, or {} when there is none to read."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(_HEADER_LIMIT)
        header = json.loads(first)
    except (OSError, ValueError):
        return {}
    return header if isinstance(header, dict) and header.get("type") == "session" else {}


def _mtime_iso(folder: Path) -> str:
    """When the session's files last changed (for a session whose meta.json cannot say)."""
    times = []
    for name in (META_FILE, TRANSCRIPT_FILE):
        try:
            times.append((folder / name).stat().st_mtime)
        except OSError:
            pass
    moment = datetime.datetime.fromtimestamp(max(times, default=0.0), datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds")


def _timestamp(iso: str) -> float | None:
    try:
        moment = datetime.datetime.fromisoformat(iso)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()
