"""What changed in the workspace since the last snapshot, and what snapshots leave out.

One `git ls-files` lists the paths whose stat data differs from the kept index, deleted
ones and new ones (`.gitignore` applied). Only those are staged, with `update-index`, so an
unchanged tree costs one directory walk and no hashing at all. Files over the size cap,
unreadable files and nested git repositories are skipped, and listed; a tracked file that
becomes one of them is dropped from the index, so no snapshot claims a stale copy of it.

Symlinks are snapshotted as links (mode 120000) and never followed. When a folder is
replaced by a symlink (or a file), the paths the index still holds under it are gone, and a
symlink or file replaced by a folder is too: they are dropped from the index, since
`update-index` refuses a path "beyond a symbolic link" and a folder in place of a file.

That walk still lstats every tracked file. From a process's second walk of a workspace on —
from its first, for a run's snapshots, which always take another — its folders are watched
(watch.py, Linux): while no event came since a walk whose findings are staged, the
workspace is known to be unchanged and the scan is clean without any walk (so a turn that
changed nothing ends without one).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ...core.errors import CheckpointsOff
from . import GitCommandError
from .git import ShadowGit
from .limits import Limits, bounded_listing, index_entries
from .watch import TRUST_SECONDS, WatchUnavailable, WorkspaceWatch, watch_workspace

MAX_FILE_BYTES = 10 * 1024 * 1024
BULK_FILES = 200  # from this many changed files on, stage straight into a pack
NESTED_REPO = "nested git repository"
UNREADABLE = "unreadable"


class Skipped(NamedTuple):
    """A path left out of snapshots, and why."""

    path: str
    reason: str

    def describe(self) -> str:
        return f"{self.path} ({self.reason})"


@dataclass(slots=True)
class Scan:
    """The paths to stage (changed, new or deleted) and those to leave out."""

    changed: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    untrack: list[str] = field(default_factory=list)  # in the index, but skipped now
    added: int = 0  # how many of `changed` are new (not in the index)

    @property
    def clean(self) -> bool:
        """Nothing to stage: the index already matches the workspace."""
        return not self.changed and not self.untrack


@dataclass(slots=True)
class _Known:
    """What this process knows of one shadow index and its workspace."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    walks: int = 0
    watch: WorkspaceWatch | None = None
    unwatchable: bool = False  # no watching this workspace: every scan walks
    staged: Scan | None = None  # the last walk, once the index holds what it found
    unstaged: Scan | None = None  # the last walk, while what it found is not staged yet
    walked_at: float = 0.0
    max_file_bytes: int = 0

    def clean(self, git: ShadowGit, max_file_bytes: int) -> Scan | None:
        """The last walk's (clean) scan when nothing can have changed since, else None."""
        if self.watch is None or self.staged is None or max_file_bytes != self.max_file_bytes \
                or time.monotonic() - self.walked_at > TRUST_SECONDS or not git.index.is_file():
            return None
        if self.watch.poll():
            return None
        return Scan(skipped=list(self.staged.skipped))

    def walking(self, git: ShadowGit, max_file_bytes: int, watch: bool) -> None:
        """A walk starts: from the second on (from the first, with `watch`), have the folders
        watched first (so that nothing done during or after the walk goes unheard)."""
        self.walks += 1
        self.staged = self.unstaged = None
        if self.watch is not None and self.watch.restructured:
            self.watch.close()
            self.watch = None
        if self.watch is None and not self.unwatchable and (watch or self.walks >= 2):
            try:
                self.watch = watch_workspace(git)
            except (WatchUnavailable, OSError, GitCommandError):
                self.unwatchable = True
        if self.watch is not None:
            self.watch.restart()
        self.walked_at, self.max_file_bytes = time.monotonic(), max_file_bytes

    def walked(self, scan: Scan) -> None:
        if scan.clean:
            self.staged = scan
        else:
            self.unstaged = scan


MAX_WATCHED = 4  # workspaces one process watches at once (each holds an inotify descriptor)
MAX_KNOWN = 64  # workspaces one process remembers
_known: dict[ShadowGit, _Known] = {}  # least recently scanned first
_known_lock = threading.Lock()


def _known_for(git: ShadowGit) -> _Known:
    """This process's knowledge of `git`'s workspace; the watches of the workspaces scanned
    longest ago are dropped beyond MAX_WATCHED, and what is known of them beyond MAX_KNOWN."""
    with _known_lock:
        last = next(reversed(_known), None)
        if last is git:  # the one scanned last (the same object): nothing to reorder or drop
            return _known[last]
        known = _known.pop(git, None) or _Known()
        _known[git] = known
        watching = [k for k in _known.values() if k.watch is not None and k is not known]
        for old in watching[:max(len(watching) - MAX_WATCHED + 1, 0)]:
            if old.lock.acquire(blocking=False):  # (busy: it is dropped another time)
                try:
                    if old.watch is not None:
                        old.watch.close()
                        old.watch = old.staged = None
                finally:
                    old.lock.release()
        for key in [k for k, v in _known.items() if v.watch is None][:max(len(_known) - MAX_KNOWN, 0)]:
            del _known[key]
        return known


def scan_workspace(git: ShadowGit, max_file_bytes: int = MAX_FILE_BYTES, watch: bool = False,
                   limits: Limits | None = None) -> Scan:
    """Compare the workspace with the index: one `git ls-files`, then one lstat per hit —
    or nothing at all, when the watch says nothing changed since the last walk. `watch`:
    more scans will follow (a run's snapshots), so watch from this walk on, not the next.
    `limits`: the walk is the bounded check of them too (CheckpointsOff when the index and
    the new files it lists are over `max_files`, or it takes longer than `budget`)."""
    known = _known_for(git)
    with known.lock:
        clean = known.clean(git, max_file_bytes)
        if clean is not None:
            return clean
        known.walking(git, max_file_bytes, watch)
        try:
            scan = _walk(git, max_file_bytes, limits)
        except CheckpointsOff:
            if known.watch is not None:  # (no more scans of it will come)
                known.watch.close()
                known.watch = None
            raise
        known.walked(scan)
        return scan


def end_watch(git: ShadowGit) -> WorkspaceWatch | None:
    """Stop watching `git`'s workspace (the next scan walks, and watches it again): a run's
    snapshots are over. Returns the ended watch, for its caller to close a moment later
    (`WorkspaceWatch.end`: the kernel is let go of its watches meanwhile)."""
    with _known_lock:
        known = _known.get(git)
    if known is None:
        return None
    with known.lock:
        watch, known.watch, known.staged = known.watch, None, None
    if watch is not None:
        watch.end()
    return watch


def known_clean(git: ShadowGit, max_file_bytes: int = MAX_FILE_BYTES) -> Scan | None:
    """The scan `scan_workspace` would give when the watch proves nothing changed since the
    last walk (no walk, no git, no waiting); None when that takes a walk, or another thread
    is scanning."""
    known = _known_for(git)
    if not known.lock.acquire(blocking=False):
        return None
    try:
        return known.clean(git, max_file_bytes)
    finally:
        known.lock.release()


def _walk(git: ShadowGit, max_file_bytes: int, limits: Limits | None = None) -> Scan:
    """The scan proper: what `git ls-files` and an lstat per path it lists say."""
    args = ("ls-files", "-z", "-t", "--others", "--modified", "--deleted", "--exclude-standard")
    if limits is None or not limits.max_files:
        out = git.run(*args)
    else:  # (what snapshots would hold: the index's paths and the new ones, tagged "?")
        indexed = index_entries(git)
        out = bounded_listing(git, args, limits,
                              lambda listed: indexed + listed.count(b"\0? ") + listed.startswith(b"? "))
    tags: dict[str, str] = {}
    for entry in out.split(b"\0"):
        if entry:
            tags.setdefault(os.fsdecode(entry[2:]), entry[:1].decode())  # a deletion is listed twice
    scan = Scan()
    folders: dict[Path, bool] = {}
    for path, tag in tags.items():
        if _under_non_folder(git.work_tree, path, folders) or (
                tag != "?" and stat.S_ISDIR(_lstat_mode(git.work_tree / path))):
            if tag != "?":  # gone, or a folder now (its files are listed on their own)
                scan.untrack.append(path)
            continue
        reason = _skip_reason(git.work_tree, path, max_file_bytes)
        if reason is None:
            scan.changed.append(path)
            scan.added += tag == "?"
            continue
        scan.skipped.append(Skipped(path.rstrip("/"), reason))
        if tag != "?":
            scan.untrack.append(path)
    return scan


def _under_non_folder(root: Path, path: str, folders: dict[Path, bool]) -> bool:
    """Whether a folder on the way to `path` is now a symlink, a file or missing: then the path
    cannot be there (whatever a followed symlink would show). `folders` caches the answers."""
    parent = Path(path.rstrip("/")).parent
    if parent == Path("."):
        return False
    if parent not in folders:
        folders[parent] = _under_non_folder(root, parent.as_posix(), folders) or \
            not stat.S_ISDIR(_lstat_mode(root / parent))
    return folders[parent]


def _lstat_mode(path: Path) -> int:
    try:
        return path.lstat().st_mode
    except OSError:
        return 0


def _skip_reason(root: Path, path: str, max_file_bytes: int) -> str | None:
    """Why `path` stays out of snapshots, or None to stage it (a missing file stages a deletion)."""
    if path.endswith("/"):  # ls-files shows a nested repository as a folder it did not enter
        return NESTED_REPO
    full = root / path
    try:
        info = full.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_size > max_file_bytes:
        return f"{_size(info.st_size)}, over the {_size(max_file_bytes)} size cap"
    if not os.access(full, os.R_OK):
        return UNREADABLE
    return None


def stage(git: ShadowGit, scan: Scan) -> None:
    """Bring the index up to date with the workspace for the scanned paths."""
    if scan.untrack:
        git.run("update-index", "-z", "--force-remove", "--stdin", input=_nul_list(scan.untrack))
    if scan.changed:
        # Many new blobs go into one pack instead of a file each: 4–5× faster, 50× smaller.
        bulk = ["-c", "core.bigFileThreshold=1"] if len(scan.changed) >= BULK_FILES else []
        git.run(*bulk, "update-index", "-z", "--add", "--remove", "--replace", "--stdin",
                input=_nul_list(scan.changed))
    known = _known_for(git)
    with known.lock:
        if known.unstaged is scan:  # the index now holds what that walk saw
            known.staged, known.unstaged = Scan(skipped=scan.skipped), None


def _nul_list(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(path) + b"\0" for path in paths)


def _size(size: int) -> str:
    """`12.0 MiB`, `512 KiB`, `300 B`."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MiB".replace(".0 MiB", " MiB")
    if size >= 1024:
        return f"{size // 1024} KiB"
    return f"{size} B"
