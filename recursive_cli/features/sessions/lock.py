"""One process per session: a `lock` file holding the owner's pid, host and start time.

The lock is written to a temp file (O_CREAT|O_EXCL) and hard-linked into place, so it appears
complete or not at all and two processes can never both create it. A lock whose owner is no
longer running (or that cannot be read) is taken over with a warning.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...core.procs import process_alive
from ...core.values import dumps
from .records import SessionInUseError, SessionWriteError, now_iso

LOCK_FILE = "lock"
_ATTEMPTS = 3
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK}  # e.g. FAT, some FUSE


@dataclass(slots=True, kw_only=True)
class LockInfo:
    """Who holds a session."""

    pid: int
    host: str
    started: str

    @classmethod
    def parse(cls, data: bytes) -> LockInfo:
        """A lock file's owner; ValueError when the file holds none (read by hand: every run
        reads its own lock back when it ends, and three fields need no validator)."""
        raw = json.loads(data)
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        pid, host, started = raw.get("pid"), raw.get("host"), raw.get("started")
        if type(pid) is not int or not isinstance(host, str) or not isinstance(started, str):
            raise ValueError("expected pid, host and started")
        return cls(pid=pid, host=host, started=started)


class SessionLock:
    """A held session lock; `release()` (or leaving the `with` block) gives it back."""

    def __init__(self, path: Path, session_id: str, info: LockInfo, warning: str | None = None) -> None:
        self.path = path
        self.session_id = session_id
        self.info = info
        self.warning = warning

    def release(self) -> None:
        """Remove the lock file if it is still ours; safe to call twice."""
        if read_lock(self.path.parent) == self.info:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def hand_over(self) -> None:
        """This process holds the lock from now on (a detached child of the process that took it)."""
        from .meta import write_atomic

        info = LockInfo(pid=os.getpid(), host=self.info.host, started=now_iso())
        try:
            write_atomic(self.path, dumps(info).encode())
        except OSError as exc:
            raise SessionWriteError(f"cannot lock session {self.session_id} ({self.path}): "
                                    f"{exc.strerror or exc}") from None
        self.info = info

    def __enter__(self) -> SessionLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def acquire_lock(folder: Path, session_id: str) -> SessionLock:
    """Take the session's lock; SessionInUseError when a live process holds it."""
    path = folder / LOCK_FILE
    info = LockInfo(pid=os.getpid(), host=socket.gethostname(), started=now_iso())
    data = dumps(info).encode()
    warning: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for _ in range(_ATTEMPTS):
            if _create_exclusive(path, data):
                return SessionLock(path, session_id, info, warning)
            warning = _stale_or_raise(path, session_id) or warning
    except OSError as exc:
        raise SessionWriteError(f"cannot lock session {session_id} ({path}): "
                                f"{exc.strerror or exc}") from None
    raise SessionInUseError(f"session {session_id} is in use: its lock {path} keeps changing")


def read_lock(folder: Path) -> LockInfo | None:
    """The lock's owner, or None when there is no lock or it cannot be read."""
    try:
        return LockInfo.parse((folder / LOCK_FILE).read_bytes())
    except (OSError, ValueError):
        return None


def live_owner(folder: Path) -> LockInfo | None:
    """The owner of the session's lock if that process is (or may be) still running."""
    owner = read_lock(folder)
    return owner if owner is not None and owner_alive(owner) else None


def in_use_message(session_id: str, owner: LockInfo) -> str:
    where = "" if owner.host == socket.gethostname() else f" on host {owner.host}"
    return f"session {session_id} is in use by pid {owner.pid}{where}"


def owner_alive(owner: LockInfo) -> bool:
    """Whether the lock's owner may still run; an owner on another host is assumed to."""
    if owner.host != socket.gethostname():
        return True
    return process_alive(owner.pid) and not _started_before_boot(owner.started)


def _stale_or_raise(path: Path, session_id: str) -> str | None:
    """Remove a stale lock and say so; raise SessionInUseError if its owner is alive."""
    try:
        seen = path.read_bytes()
    except FileNotFoundError:
        return None  # released meanwhile: just try again
    try:
        owner: LockInfo | None = LockInfo.parse(seen)
    except ValueError:
        owner = None
    if owner is not None and owner_alive(owner):
        raise SessionInUseError(in_use_message(session_id, owner))
    _remove_if_unchanged(path, seen)
    if owner is None:
        return f"took over the lock of session {session_id}, whose lock file was unreadable"
    return (f"took over the lock of session {session_id} from pid {owner.pid}, "
            "which is no longer running")


def _create_exclusive(path: Path, data: bytes) -> bool:
    """Put a complete lock file at `path`; False if one is already there."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".lock.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.link(temp, path)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        return _create_in_place(path, data)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _create_in_place(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return True


def _remove_if_unchanged(path: Path, seen: bytes) -> None:
    """Unlink the stale lock unless another process has replaced it since we read it."""
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == seen:
            path.unlink()


def _started_before_boot(started: str) -> bool:
    """True when the lock predates this boot, so its pid now belongs to someone else (Linux)."""
    try:
        btime = next(line for line in Path("/proc/stat").read_text().splitlines()
                     if line.startswith("btime "))
        return datetime.datetime.fromisoformat(started).timestamp() < float(btime.split()[1])
    except (OSError, StopIteration, ValueError):
        return False
