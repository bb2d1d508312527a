"""A quiet call's open window, noted in a file of the session's instead of moving its head.

A tool call that changes nothing opens the last such call's window again (checkpointer.py:
`open_quietly`): the same `open` commit, on the same head, with the same tree. Its head used
to move onto that commit before the call and back after it, two `git update-ref`
transactions a call (≈ 0.13 ms of git's CPU each on ext4, ≈ 0.3–0.45 ms a step in a loop of
quick commands: pipes.py). Only a process killed during the call needs the move: a window
that was never closed is the killed call's, and what changed during it is its own
(attribution.py). So the move is noted here instead — one line written before the call runs,
the file emptied when it ends — and made in git only when something else moves the refs
while the window is open, or by the next process of the session when it finds a line its
owner left behind (`GitCheckpointer.head`).

One file per session, next to the shadow repository's index, holding at most one line; the
first line is the one that counts (a line written over a longer one may leave a tail):

    {"commit": "<open commit>", "parent": "<head before it>", "tree": "<its tree>",
     "event": {"event": "open", "turn": 3, "tool": "run_shell", "by": "<process>"}}
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from .git import ShadowGit


class PendingOpen(NamedTuple):
    """An open commit the session's head is not on yet: the head it follows, its tree, and its
    `open` event as the commit's message holds it."""

    commit: str
    parent: str
    tree: str
    event: dict[str, Any]

    def line(self) -> bytes:
        return (json.dumps(self._asdict(), ensure_ascii=True) + "\n").encode()


def pending_path(git: ShadowGit, session_id: str) -> Path:
    """The session's file (it may not exist)."""
    return git.index.with_name(f"open-{session_id}")


def read_pending(path: Path) -> PendingOpen | None:
    """The open the file notes, or None (no file, an empty one, a line cut short)."""
    try:
        first = path.read_bytes().split(b"\n", 1)[0]
    except OSError:
        return None
    with contextlib.suppress(ValueError):
        record = json.loads(first)
        if isinstance(record, dict) and all(isinstance(record.get(k), str) for k in ("commit", "parent", "tree")) \
                and isinstance(record.get("event"), dict):
            return PendingOpen(record["commit"], record["parent"], record["tree"], record["event"])
    return None


class PendingFile:
    """The session's file, kept open: `note` writes a line, `clear` empties it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def note(self, pending: PendingOpen) -> None:
        """Write `pending` as the first line; OSError when it cannot be written."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        line = pending.line()
        if os.pwrite(self._fd, line, 0) != len(line):
            raise OSError("the pending open was written short")

    def clear(self) -> None:
        """Empty the file (a file that is not there, or cannot be emptied, is left as it is)."""
        with contextlib.suppress(OSError):
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
            elif self.path.stat().st_size:
                os.truncate(self.path, 0)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
