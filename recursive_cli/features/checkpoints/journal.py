"""What restores wrote into a workspace, for the windows other sessions had open meanwhile.

A restore writes files while another session of the same workspace may be running a tool
call: that session's window would see the restore's writes as changes made during its call,
and take them for its own. So a restore first appends what it is about to write — each path
with the entry it will hold, or null for a removal — as one JSON line to the workspace's
`restores.jsonl` (next to the kept index), and writes the files while holding the index
mutex (git.py), as every snapshot does while it reads the workspace. A window therefore
opens either before the restore's line or after all its writes: it notes the journal's size
when it opens (the checkpointer's captures take it, one stat under the mutex), and when it
closes reads the lines added since; a path that holds exactly what a restore wrote then is
the restore's, not the call's (attribution.py). Nothing here is imported by a run that no
restore crossed.

    {"session": "s2", "turn": 1, "writes": {"a.txt": ["100644", "<blob>"], "new.py": null}}
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from .attribution import Entry, entries_from_json, entries_to_json
from .git import ShadowGit
from .repo import RESTORES_JOURNAL


def journal_path(git: ShadowGit) -> Path:
    """The workspace's journal of restores (it may not exist)."""
    return git.index.with_name(RESTORES_JOURNAL)


def record_writes(git: ShadowGit, session_id: str, turn: int, writes: dict[str, Entry | None]) -> None:
    """Append what a restore is about to write (call it holding the index mutex)."""
    if not writes:
        return
    line = json.dumps({"session": session_id, "turn": turn, "writes": entries_to_json(writes)},
                      ensure_ascii=True) + "\n"
    fd = os.open(journal_path(git), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def writes_between(git: ShadowGit, start: int, end: int) -> dict[str, Entry | None]:
    """Every path the restores journalled between two marks wrote, with the entry it was
    given (the later restore's, when two wrote it)."""
    if end <= start:
        return {}
    try:
        with journal_path(git).open("rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
    except OSError:
        return {}
    found: dict[str, Entry | None] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):  # (a line cut short by a kill -9)
            record = json.loads(line)
            found.update(entries_from_json(record.get("writes") if isinstance(record, dict) else None))
    return found
