"""Which changes are the session's own: the windows of its tool calls, read back from disk.

Around every tool call that may change the workspace (and every background job) the
session commits two snapshots into its chain of snapshots (the history of its `head` ref):
an `open` commit just before the call runs and a `close` commit once it has ended. A
window's changes are the difference between the two. (A call that changes nothing opens the
last such call's `open` commit again and writes no `close`; that it is open is noted beside
the chain, pending.py, and read here as the commit that follows its parent.) Whatever changed between windows —
while the model was thinking, between turns — was done by someone else (the user, another
session), and a restore leaves it alone.

How sure a window is of its changes depends on who could have made them. A file tool
(write_file, edit_file, apply_patch) writes in this process, only the paths in its
arguments: its window counts only those, and they are surely the session's. A shell
command, a background job or a tool we know nothing about (an MCP server's) may write
anything, and so may every other process while it runs: the OS tells us that something
changed during the window, not who changed it (inotify has no writer's pid; fanotify has
one only with CAP_SYS_ADMIN, and only while that writer still lives). Its changes count as
the session's but are `unsure`: a restore does not revert them unless forced (restore.py).
What a restore of another session wrote during a window is not counted at all: the window
reads it from the restores' journal (journal.py) when it closes, and a path that holds
exactly what that restore wrote is the restore's.

Each commit of the chain carries its event as one JSON line in its message, e.g.
`{"event": "close", "turn": 3, "window": "<open commit>", "paths": ["a.py"], "by": "…"}`,
where `by` names the process that wrote it (and `outside`, when a restore wrote during the
window, maps each path it wrote to the entry it gave it, null for a removal). A window that
was never closed belongs to a process that died (kill -9): it ends at the first later
commit of another process (the resumed run's next snapshot, a restore), or at the workspace
as it is now when there is none.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from . import GitCommandError
from .git import ShadowGit
from .pending import PendingOpen

RECORD_SEPARATOR = "\x1e"
LOG_FORMAT = "--format=%x1e%H %T%n%B"  # one record per commit: "<commit> <tree>\n<message>"
NO_MODE = "000000"
STILL_OPEN = 2**62  # the end position of a window that ends at the workspace now


class Entry(NamedTuple):
    """A path as git stores it: its mode (100644, 100755, 120000 for a symlink) and its blob."""

    mode: str
    blob: str


class OwnChange(NamedTuple):
    """A path the session changed: as it was before the session's first change to it, and
    as the session left it (None: no such path). `unsure` names the call during which it
    changed and another process may have changed it too ("run_shell in turn 2"); "" when
    every call that changed it was a file tool that named it."""

    path: str
    before: Entry | None
    after: Entry | None
    unsure: str = ""

    @property
    def status(self) -> str:
        """A added, D deleted, T type changed (file ↔ symlink), M modified."""
        if self.before is None:
            return "A"
        if self.after is None:
            return "D"
        return "T" if _is_link(self.before) != _is_link(self.after) else "M"


@dataclass(slots=True)
class Window:
    """One watched tool call or job: the trees at its start and end, and what it may claim."""

    turn: int
    tool: str
    pre: str
    by: str
    start: int  # position in the chain, oldest first
    post: str | None = None  # None while it is open
    end: int = -1
    paths: frozenset[str] | None = None  # only these count, surely (a file tool's); None: every path, unsure
    outside: dict[str, Entry | None] = field(default_factory=dict)  # what restores of other sessions wrote meanwhile

    def claims(self, change: _RawChange) -> bool:
        """Whether `change` counts as this window's: a path it may claim, not a restore's write."""
        if self.paths is not None and change.path not in self.paths:
            return False
        return not self.outside or change.path not in self.outside or self.outside[change.path] != change.new


class _RawChange(NamedTuple):
    path: str
    old: Entry | None
    new: Entry | None


def event_message(subject: str, event: dict[str, Any]) -> str:
    """A commit message: a subject for people, then the event as one JSON line."""
    return f"{subject}\n\n{json.dumps(event, ensure_ascii=True)}\n"


def load_history(git: ShadowGit, head: str, since: str | None, now: Callable[[], str],
                 pending: PendingOpen | None = None) -> History:
    """The windows of the chain that ends at `head`, after the commit `since` (default: all);
    `pending`, a quiet call's open noted beside the chain (pending.py), counts as the commit
    that follows its parent there."""
    bound = [f"^{since}"] if since else []
    log = git.run("log", "--reverse", "--first-parent", LOG_FORMAT, head, *bound)
    return History(git, read_windows(log, pending, since), now)


def read_windows(log: bytes, pending: PendingOpen | None = None, since: str | None = None) -> list[Window]:
    """The windows in `git log --reverse LOG_FORMAT` output, in the order they opened; with
    `pending` (an open commit not in the chain) right after its parent, when that is in the
    chain or is `since`, the commit the log starts after."""
    windows: dict[str, Window] = {}
    for position, (commit, tree, event) in enumerate(_with_pending(list(_log_records(log)), pending, since)):
        by = str(event.get("by", ""))
        for window in windows.values():  # the process that opened it is gone: it ends here
            if window.post is None and window.by != by:
                window.post, window.end = tree, position
        turn = event.get("turn")
        if event.get("event") == "open" and isinstance(turn, int):
            windows[commit] = Window(turn, str(event.get("tool", "")), tree, by, position)
        elif event.get("event") == "close":
            _close(windows.get(str(event.get("window"))), tree, position, event)
    return list(windows.values())


def _with_pending(records: list[tuple[str, str, dict[str, Any]]], pending: PendingOpen | None,
                  since: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    if pending is None or any(commit == pending.commit for commit, _, _ in records):
        return records
    at = next((i + 1 for i, (commit, _, _) in enumerate(records) if commit == pending.parent),
              0 if pending.parent == since else None)
    if at is None:  # (its parent is not in this chain: a line left behind by something else)
        return records
    return [*records[:at], (pending.commit, pending.tree, pending.event), *records[at:]]


def _close(window: Window | None, tree: str, position: int, event: dict[str, Any]) -> None:
    if window is not None and window.post is None:
        window.post, window.end, window.paths = tree, position, _paths(event.get("paths"))
        window.outside = entries_from_json(event.get("outside"))


def _log_records(log: bytes) -> Iterable[tuple[str, str, dict[str, Any]]]:
    """(commit, tree, event) for each commit of the log; the event is {} for commits written
    before events existed."""
    for record in log.decode("utf-8", "replace").split(RECORD_SEPARATOR):
        head, _, message = record.partition("\n")
        ids = head.split()
        if len(ids) == 2:
            yield ids[0], ids[1], _event(message)


def _event(message: str) -> dict[str, Any]:
    """The JSON event at the end of a commit message, or {}."""
    lines = [line for line in message.strip().splitlines() if line.strip()]
    if len(lines) >= 2:
        with contextlib.suppress(ValueError):
            value = json.loads(lines[-1])
            if isinstance(value, dict) and "event" in value:
                return value
    return {}


def _paths(value: object) -> frozenset[str] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return frozenset(value)
    return None


def entries_from_json(value: object) -> dict[str, Entry | None]:
    """Paths with their entries as `entries_to_json` wrote them (what is not well formed is left out)."""
    found: dict[str, Entry | None] = {}
    if isinstance(value, dict):
        for path, entry in value.items():
            if entry is None:
                found[path] = None
            elif isinstance(entry, list) and len(entry) == 2:
                found[path] = Entry(str(entry[0]), str(entry[1]))
    return found


def entries_to_json(writes: dict[str, Entry | None]) -> dict[str, list[str] | None]:
    """Paths with their entries for JSON: path → [mode, blob], or null for no such path."""
    return {path: None if entry is None else [entry.mode, entry.blob] for path, entry in writes.items()}


class History:
    """The session's windows with their changes; what a set of turns did, as the session's own.

    `now` gives the tree of the workspace as it is, for windows still open; it is called at
    most once, and only when one is.
    """

    def __init__(self, git: ShadowGit, windows: list[Window], now: Callable[[], str]) -> None:
        self.git = git
        self.windows = windows
        self._now = now
        self._changes: list[list[_RawChange]] | None = None

    def own(self, turns: Collection[int]) -> dict[str, OwnChange]:
        """Every path the windows of `turns` changed, from before the first window that touched
        it to after the last one; paths they left as they found them are not listed. A path
        is `unsure` when a window that may claim anything (not a file tool's) changed it."""
        first: dict[str, Entry | None] = {}
        last: dict[str, tuple[int, Entry | None]] = {}
        unsure: dict[str, str] = {}
        for window, changes in zip(self.windows, self._all_changes()):
            if window.turn not in turns:
                continue
            for change in changes:
                if not window.claims(change):
                    continue
                first.setdefault(change.path, change.old)
                if change.path not in last or window.end >= last[change.path][0]:
                    last[change.path] = (window.end, change.new)
                if window.paths is None:
                    unsure[change.path] = f"{window.tool or 'a tool call'} in turn {window.turn}"
        return {path: OwnChange(path, first[path], last[path][1], unsure.get(path, ""))
                for path in sorted(first) if first[path] != last[path][1]}

    def _all_changes(self) -> list[list[_RawChange]]:
        """What each window changed (all of them in one `git diff-tree --stdin`)."""
        if self._changes is None:
            if any(window.post is None for window in self.windows):
                now = self._now()
                for window in self.windows:
                    if window.post is None:
                        window.post, window.end = now, STILL_OPEN
            pairs = [(w.pre, w.post or w.pre) for w in self.windows]
            self._changes = diff_pairs(self.git, pairs)
        return self._changes


def diff_pairs(git: ShadowGit, pairs: list[tuple[str, str]]) -> list[list[_RawChange]]:
    """The changes between each pair of trees, in order."""
    wanted = [pair for pair in pairs if pair[0] != pair[1]]
    found: list[list[_RawChange]] = []
    if wanted:
        out = git.run("diff-tree", "--stdin", "--always", "-r", "-z", "--raw", "--no-renames",
                      input="".join(f"{old} {new}\n" for old, new in wanted).encode())
        found = _parse_batch(out)
        if len(found) != len(wanted):
            raise GitCommandError(f"git diff-tree answered {len(found)} of {len(wanted)} pairs")
    results = iter(found)
    return [next(results) if old != new else [] for old, new in pairs]


def _parse_batch(out: bytes) -> list[list[_RawChange]]:
    """`diff-tree --stdin -z --raw` output: per pair a "<old> <new>" line, then its entries
    `:<old mode> <new mode> <old blob> <new blob> <status>\\0<path>\\0`."""
    batches: list[list[_RawChange]] = []
    pos = 0
    while pos < len(out):
        if out[pos:pos + 1] == b":":
            meta_end = out.index(b"\0", pos)
            path_end = out.index(b"\0", meta_end + 1)
            old_mode, new_mode, old_blob, new_blob = out[pos + 1:meta_end].decode().split()[:4]
            path = os.fsdecode(out[meta_end + 1:path_end])
            batches[-1].append(_RawChange(path, _entry(old_mode, old_blob), _entry(new_mode, new_blob)))
            pos = path_end + 1
        else:
            ends = [i for i in (out.find(b"\n", pos), out.find(b"\0", pos)) if i >= 0]
            batches.append([])
            pos = (min(ends) if ends else len(out)) + 1
    return batches


def _entry(mode: str, blob: str) -> Entry | None:
    return None if mode == NO_MODE else Entry(mode, blob)


def _is_link(entry: Entry) -> bool:
    return entry.mode == "120000"


def tree_entries(git: ShadowGit, tree: str) -> dict[str, Entry]:
    """Every file and symlink of `tree`, by path."""
    out = git.run("ls-tree", "-r", "-z", "--full-tree", tree)
    entries: dict[str, Entry] = {}
    for line in out.split(b"\0"):
        meta, _, path = line.partition(b"\t")
        parts = meta.decode().split()
        if len(parts) == 3 and parts[1] == "blob":
            entries[os.fsdecode(path)] = Entry(parts[0], parts[2])
    return entries


@contextlib.contextmanager
def scratch_index(git: ShadowGit, entries: dict[str, Entry]) -> Iterator[Path]:
    """A throwaway index holding exactly `entries` (the kept index is never touched)."""
    index = git.index.with_name(f"scratch-{os.getpid()}-{threading.get_ident()}.index")
    try:
        if entries:
            lines = b"".join(f"{e.mode} {e.blob}\t".encode() + os.fsencode(path) + b"\0"
                             for path, e in entries.items())
            git.run("update-index", "-z", "--index-info", input=lines, index=index)
        yield index
    finally:
        with contextlib.suppress(FileNotFoundError):
            index.unlink()


def build_tree(git: ShadowGit, entries: dict[str, Entry]) -> str:
    """A tree holding exactly `entries`."""
    with scratch_index(git, entries) as index:
        return git.run("write-tree", index=index).decode().strip()


def own_trees(git: ShadowGit, changes: dict[str, OwnChange]) -> tuple[str, str]:
    """Two trees that differ by exactly `changes`: the paths as they were, and as left."""
    before = {path: c.before for path, c in changes.items() if c.before is not None}
    after = {path: c.after for path, c in changes.items() if c.after is not None}
    return build_tree(git, before), build_tree(git, after)
