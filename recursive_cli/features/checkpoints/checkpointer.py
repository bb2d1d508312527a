"""The Checkpointer: snapshots of a workspace for one session, and what they tell.

A snapshot stages what changed into the kept index (see scan.py), writes the tree, commits
it on top of the session's previous snapshot and points the session's refs at it (repo.py
lists them). The objects are git's, so identical files and unchanged folders cost nothing.
Besides the snapshots before and after every turn, the chain holds one before and one after
every tool call that may change the workspace: these windows tell the session's own changes
from everyone else's (attribution.py), restores of other sessions meanwhile included (their
journal, journal.py: each capture notes its size under the index mutex).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from . import CheckpointError, CheckpointsOff, GitCommandError, attribution
from .attribution import Entry, History, OwnChange
from .git import IDENTITY, ShadowGit, require_git
from .limits import Limits, check_size, index_entries, within_last_limits
from .pending import PendingFile, PendingOpen, pending_path, read_pending
from .pipes import GitPipes
from .repo import RESTORES_JOURNAL, ensure_repo, head_ref, session_refs, shadow_git, turn_ref
from .scan import MAX_FILE_BYTES, Scan, Skipped, end_watch, known_clean, scan_workspace, stage

if TYPE_CHECKING:
    from ...core.runtime import RuntimeCore

Phase = Literal["before", "after"]
# An `open` commit of a call that changed nothing is used again, for this long at most, by
# the next call that opens on the same head and tree (well within git gc's prune grace of an
# hour, since nothing refers to it between the two calls).
REUSE_SECONDS = 600.0
STALE_LOCK_SECONDS = 30.0  # a ref lock this old was left by a git that was killed
# Who writes the snapshots, as `git commit-tree` takes it from the environment (git.py).
AUTHOR = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}>"
COMMITTER = f"{IDENTITY['GIT_COMMITTER_NAME']} <{IDENTITY['GIT_COMMITTER_EMAIL']}>"


class Snapshot(NamedTuple):
    """One snapshot: its commit and tree, how many files differ from the session's previous
    snapshot (None for its first), the paths it left out, and the commit it follows (the
    session's head before it; None for its first)."""

    commit: str
    tree: str
    files_changed: int | None = None
    skipped: tuple[Skipped, ...] = ()
    parent: str | None = None


class TurnCheckpoints(NamedTuple):
    """The snapshots around one turn; `rewound` when a restore undid the turn."""

    turn: int
    before: str | None = None
    after: str | None = None
    rewound: bool = False
    time: int | None = None  # when the before snapshot was taken (seconds since the epoch)


class FileChange(NamedTuple):
    """A path that differs between two snapshots: A added, D deleted, M modified, T type changed."""

    status: str
    path: str


class Capture(NamedTuple):
    """The workspace as a tree in the shadow repository, the scan that staged it, and the
    restores' journal's size then (journal.py)."""

    tree: str
    scan: Scan
    mark: int = 0


class OpenWindow(NamedTuple):
    """A tool call or job being watched: its `open` snapshot, the head before it, and the
    restores' journal's size when it opened."""

    turn: int
    label: str
    commit: str
    tree: str
    previous: tuple[str, str] | None
    made: float = 0.0  # when its commit was written (time.monotonic)
    mark: int = 0


class Checkpointer(Protocol):
    """Takes and reads the workspace snapshots of one session."""

    session_id: str
    workspace: Path

    def snapshot(self, turn: int, phase: Phase) -> Snapshot: ...

    def capture(self, watch: bool = False) -> Capture: ...

    def turns(self) -> list[TurnCheckpoints]: ...

    def changes(self, old: str, new: str) -> list[FileChange]: ...

    def diff(self, old: str, new: str, color: bool = False) -> str: ...

    def open_window(self, turn: int, label: str) -> OpenWindow: ...

    def close_window(self, window: OpenWindow, paths: list[str] | None = None) -> None: ...

    def history(self, since: str | None = None, now: str | None = None) -> History: ...


class GitCheckpointer:
    """A Checkpointer over the workspace's shadow git repository under `$RECURSIVE_HOME`."""

    def __init__(self, home: Path, workspace: Path, session_id: str,
                 max_file_bytes: int = MAX_FILE_BYTES, git_executable: str | None = None,
                 limits: Limits | None = None, new_session: bool = False) -> None:
        """`new_session`: `session_id` was made for this run, so no snapshot of it can be
        anywhere yet (its head is known to be none: git is not asked)."""
        self.session_id = session_id
        self.limits = limits  # checked before the first capture (limits.py); None: no limits
        self.max_files = limits.max_files if limits is not None else 0  # then at every capture
        self.off: CheckpointsOff | None = None  # over the limits: every capture raises it
        self.workspace = workspace.resolve()
        self.max_file_bytes = max_file_bytes
        self.git: ShadowGit = shadow_git(git_executable or require_git(), home, self.workspace)
        self._home = home
        self._ready = False
        self._head: tuple[str, str] | None = None  # (commit, tree) of the session's latest snapshot
        self._head_known = new_session
        self._lock = threading.RLock()  # tool calls, jobs and turns snapshot from several threads
        self._written: tuple[tuple[int, ...], str] | None = None  # (index stamp, its tree)
        self._unused: OpenWindow | None = None  # the last window that changed nothing
        # A quiet window's open commit, noted in the pending file and not in git's head (pending.py)
        self._pending: str | None = None
        self._pending_file = PendingFile(pending_path(self.git, session_id))
        self.pipes = GitPipes(self.git)  # git's own processes, started on first use (pipes.py)
        self._journal = str(self.git.index.with_name(RESTORES_JOURNAL))
        self.process = secrets.token_hex(6)  # names this process in the events it commits
        self._preparing: threading.Thread | None = None

    def prepare(self) -> None:
        """Begin the first snapshot's work now, in a thread, beside the rest of the launch:
        the workspace walked and watched, the index staged, its tree written, git's processes
        started and the head read. The first turn's "before" snapshot then finds it all done (the
        watch proves the workspace unchanged since, or it walks again) and only commits.

        No tool runs before the first turn; what changes meanwhile all the same (the user, a
        server started with the run) is heard by the watch, and the first snapshot walks
        again. A failure here is left for the first snapshot, which does the same work again
        and reports it; over the limits, that snapshot finds `off` set."""
        self._preparing = threading.Thread(target=self._prepare, name="checkpoints-prepare", daemon=True)
        _PREPARING.add(self)
        self._preparing.start()

    def _prepare(self) -> None:
        with contextlib.suppress(Exception), self._lock:
            self.capture(watch=True)
            self.pipes.start()
            self.head()

    def prepared(self) -> None:
        """Wait until the work `prepare` began is done."""
        preparing = self._preparing
        if preparing is not None and preparing is not threading.current_thread():
            preparing.join()

    def snapshot(self, turn: int, phase: Phase) -> Snapshot:
        """Snapshot the workspace as the `phase` checkpoint of `turn`."""
        with self._lock:
            capture = self.capture(watch=True)
            previous = self.head()
            commit = self.commit(capture.tree, f"{self.session_id}: turn {turn} {phase}",
                                 turn_ref(self.session_id, turn, phase),
                                 event={"event": phase, "turn": turn})
        changed = None
        if previous is not None:
            changed = 0 if previous[1] == capture.tree else len(self.changes(previous[1], capture.tree))
        return Snapshot(commit, capture.tree, changed, tuple(capture.scan.skipped), previous[0] if previous else None)

    def open_window(self, turn: int, label: str) -> OpenWindow:
        """Snapshot the workspace just before a tool call (or job) of `turn` runs."""
        with self._lock:
            previous = self.head()
            capture = self.capture(watch=True)
            again = self._reopened(turn, label, capture.tree, previous)
            if again is not None:
                return again._replace(mark=capture.mark)
            commit = self.commit(capture.tree, f"{self.session_id}: turn {turn} {label} starts",
                                 event={"event": "open", "turn": turn, "tool": label})
        return OpenWindow(turn, label, commit, capture.tree, previous, time.monotonic(), capture.mark)

    def _reopened(self, turn: int, label: str, tree: str,
                  previous: tuple[str, str] | None) -> OpenWindow | None:
        """The last window that changed nothing, opened again when this one would commit the
        very same `open` (same parent, tree, turn, tool and process; only its date would
        differ): the head moves back onto its commit, and no commit is written."""
        unused, self._unused = self._unused, None
        if unused is None or previous is None or (unused.turn, unused.label, unused.tree,
                                                   unused.previous) != (turn, label, tree, previous) \
                or time.monotonic() - unused.made > REUSE_SECONDS:
            return None
        if not self._move_head(unused.commit, reused=True, wait=True):  # (gone, or refused): committed anew
            return None
        self._head = (unused.commit, tree)
        return unused

    def close_window(self, window: OpenWindow, paths: list[str] | None = None) -> None:
        """Snapshot the workspace once the call has ended; what changed since it opened is the
        session's (only `paths` of it, when given; none of what restores wrote meanwhile). A
        call that changed nothing leaves no trace."""
        with self._lock:
            capture = self.capture(watch=True)
            head = self.head()
            if capture.tree == window.tree and head is not None and head[0] == window.commit \
                    and window.previous is not None:
                if not self._forget_pending(window.commit):  # (else git's head never left the previous one)
                    self.update_refs({head_ref(self.session_id): window.previous[0]})
                self._head = window.previous
                self._unused = window
                return
            event: dict[str, Any] = {"event": "close", "turn": window.turn, "window": window.commit,
                                     "paths": paths}
            if capture.mark != window.mark:  # a restore wrote meanwhile (journal.py)
                from .journal import writes_between

                event["outside"] = attribution.entries_to_json(writes_between(self.git, window.mark, capture.mark))
            self.commit(capture.tree, f"{self.session_id}: turn {window.turn} {window.label} ended",
                        event=event)

    def open_quietly(self, turn: int, label: str) -> OpenWindow | None:
        """`open_window` when it can be done at once, without a new git process and without
        waiting for another run: the watch proves the workspace unchanged, the index is the one
        whose tree is known, and the last window that changed nothing opens again, its head's
        move onto it noted in the session's pending file (pending.py), not made in git. None
        when not (nothing is changed then): `open_window` does it, in a thread."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            unused, previous = self._unused, self._head
            if unused is None or previous is None or not self._head_known \
                    or (unused.turn, unused.label, unused.previous) != (turn, label, previous) \
                    or time.monotonic() - unused.made > REUSE_SECONDS:
                return None
            quiet = self._quiet()
            if quiet is None or quiet[0] != unused.tree or not self._note_open(unused):
                return None
            self._unused, self._head = None, (unused.commit, unused.tree)
            return unused if unused.mark == quiet[1] else unused._replace(mark=quiet[1])
        finally:
            self._lock.release()

    def close_quietly(self, window: OpenWindow) -> bool:
        """`close_window` of a call that changed nothing, when that is known at once (as in
        `open_quietly`): the head moves back (the pending file emptied, when git's head never
        left), no git process starts. False when not (nothing is changed then): `close_window`
        does it, in a thread."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            head = self._head
            if window.previous is None or head is None or head[0] != window.commit:
                return False
            quiet = self._quiet()
            if quiet is None or quiet[0] != window.tree:
                return False
            if not self._forget_pending(window.commit) and not self._move_head(window.previous[0]):
                return False
            self._head, self._unused = window.previous, window
            return True
        finally:
            self._lock.release()

    def _quiet(self) -> tuple[str, int] | None:
        """The tree of the workspace and the journal's mark, when the tree is known without
        walking or git; else None."""
        if not self._ready or self._written is None:
            return None
        with self.git.index_locked(wait=False) as held:
            if not held or known_clean(self.git, self.max_file_bytes) is None:
                return None
            stamp = _stamp(self.git.index)
            if stamp is None or stamp != self._written[0]:
                return None
            return self._written[1], self._journal_mark()

    def capture(self, watch: bool = False) -> Capture:
        """Stage the workspace into the kept index and write its tree (no commit, no ref);
        `watch`: more captures follow (a run's), so the workspace is watched from this one on.
        CheckpointsOff when the workspace is over the limits (checked on the first capture)."""
        self._open()
        if self.off is not None:
            raise self.off
        limits = self.limits  # (checked once: by a listing of their own at a first contact, else by the walk)
        if limits is not None and not within_last_limits(self.git, limits):
            try:
                check_size(self.git, limits)
            except CheckpointsOff as exc:
                self.off = exc
                raise
            self.limits = limits = None
        with self.git.index_locked():
            try:
                scan = scan_workspace(self.git, self.max_file_bytes, watch, limits)
            except CheckpointsOff as exc:
                self.off = exc
                raise
            self.limits = None
            if self.max_files and scan.added and index_entries(self.git) + scan.added > self.max_files:
                self.off = CheckpointsOff(f"{self.workspace} grew to over {self.max_files:,} files")
                raise self.off  # (nothing staged: no hashing of what came)
            if not scan.clean:
                stage(self.git, scan)
            tree = self._write_tree()
            mark = self._journal_mark()
        return Capture(tree, scan, mark)

    def _journal_mark(self) -> int:
        """The size of the restores' journal (journal.py), 0 when there is none; to be taken
        holding the index mutex, as restores write it."""
        try:
            return os.stat(self._journal).st_size
        except OSError:
            return 0

    def _write_tree(self) -> str:
        """The tree of the kept index: `git write-tree`, unless the index file is the very one
        this checkpointer last wrote a tree of (git replaces the index by a rename whenever it
        changes it, ours or another process's staging alike, so its inode and times differ)."""
        before = _stamp(self.git.index)
        if before is not None and self._written is not None and self._written[0] == before:
            return self._written[1]
        tree = self.git.run("write-tree").decode().strip()
        after = _stamp(self.git.index)  # (write-tree may store its cache in the index)
        self._written = (after, tree) if after is not None else None
        return tree

    def commit(self, tree: str, subject: str, *refs: str, event: dict[str, Any]) -> str:
        """Commit `tree` on top of the session's head and move the head (and `refs`) there;
        `event` goes into the message for attribution.py to read."""
        with self._lock:
            previous = self.head()
            parents = [previous[0]] if previous else []
            message = attribution.event_message(subject, {**event, "by": self.process})
            date = int(time.time())
            commit = self.pipes.write_commit(commit_text(tree, parents, message, date))
            self.update_refs({ref: commit for ref in (head_ref(self.session_id), *refs)})
            self._head = (commit, tree)
        return commit

    def head(self) -> tuple[str, str] | None:
        """(commit, tree) of the session's latest snapshot, or None before its first."""
        if not self._head_known:
            self._open()
            ref = head_ref(self.session_id)
            commit, tree = self.pipes.resolve(ref, ref + "^{tree}")
            self._head = (commit[0], tree[0]) if commit and tree and commit[1] == "commit" else None
            self._head_known = True
            self._adopt_pending()
        return self._head

    def _adopt_pending(self) -> None:
        """A quiet call's open noted on top of git's head (pending.py: a process killed during
        the call left it, or one running it now) is the head, as if git had moved there: the
        next commit follows it, so that the chain holds the call's window."""
        found = read_pending(self._pending_file.path)
        if found is not None and self._head is not None and found.parent == self._head[0] \
                and self._still_there(found.commit):
            self._head = (found.commit, found.tree)

    def turns(self) -> list[TurnCheckpoints]:
        """Every turn with a checkpoint, in turn order, rewound ones included."""
        if not self._open(create=False):
            return []
        prefix = session_refs(self.session_id)
        out = self.git.run("for-each-ref", "--format=%(refname) %(objectname) %(committerdate:unix)",
                           prefix.rstrip("/")).decode()
        found: dict[int, TurnCheckpoints] = {}
        for line in out.splitlines():
            ref, commit, when = line.split(" ")
            parts = ref[len(prefix):].split("/")
            if len(parts) != 3 or parts[0] not in ("turns", "rewound") or not parts[1].isdigit() \
                    or parts[2] not in ("before", "after"):
                continue
            number = int(parts[1])
            entry = found.get(number) or TurnCheckpoints(number, rewound=parts[0] == "rewound")
            found[number] = (entry._replace(before=commit, time=int(when))
                             if parts[2] == "before" else entry._replace(after=commit))
        return [found[number] for number in sorted(found)]

    def changes(self, old: str, new: str) -> list[FileChange]:
        """The paths that differ between two snapshots (commits or trees)."""
        out = self.git.run("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        fields = out.split(b"\0")
        return [FileChange(fields[i].decode(), os.fsdecode(fields[i + 1]))
                for i in range(0, len(fields) - 1, 2)]

    def diff(self, old: str, new: str, color: bool = False) -> str:
        """A stat and a patch from `old` to `new`, as `git diff` shows them."""
        out = self.git.run("diff", "--stat", "--patch", "-M", "--no-ext-diff", "--no-textconv",
                           "--color=always" if color else "--no-color", old, new)
        return out.decode("utf-8", "replace")

    def history(self, since: str | None = None, now: str | None = None) -> History:
        """The session's tool-call windows after the snapshot `since` (default: all of them);
        windows still open end at `now` (default: the workspace captured when needed)."""
        head = self.head() if self._open(create=False) else None
        current: Callable[[], str] = (lambda: now) if now else (lambda: self.capture().tree)
        if head is None:
            return History(self.git, [], current)
        return attribution.load_history(self.git, head[0], since, current, read_pending(self._pending_file.path))

    def own_diff(self, changes: dict[str, OwnChange], color: bool = False) -> str:
        """`diff` of exactly the session's own `changes`."""
        if not changes:
            return ""
        before, after = attribution.own_trees(self.git, changes)
        return self.diff(before, after, color)

    def entries(self, tree: str) -> dict[str, Entry]:
        """Every file and symlink of a snapshot, by path."""
        return attribution.tree_entries(self.git, tree)

    def update_refs(self, updates: dict[str, str], deletes: tuple[str, ...] = ()) -> None:
        """Set and delete refs in one transaction of the running `git update-ref` (pipes.py):
        git takes its locks and checks that every commit is there; all or nothing. A ref lock
        older than STALE_LOCK_SECONDS (left by a git killed while it held it: a live one holds
        it for microseconds) is removed, and the transaction tried once more."""
        try:
            self.settle()
            self._materialize()
            self.pipes.transaction(updates, deletes)
        except GitCommandError:
            if not self._remove_stale_locks([*updates, *deletes]):
                raise
            self.pipes.transaction(updates, deletes)

    def _remove_stale_locks(self, refs: list[str]) -> bool:
        """Remove the refs' lock files older than STALE_LOCK_SECONDS; whether there was one."""
        removed = False
        for ref in refs:
            lock = self.git.git_dir / (ref + ".lock")
            try:
                if time.time() - lock.lstat().st_mtime > STALE_LOCK_SECONDS:
                    lock.unlink()
                    removed = True
            except OSError:
                continue
        return removed

    def _move_head(self, commit: str, reused: bool = False, wait: bool = False) -> bool:
        """Send git the head's move to `commit`, without waiting for it unless `wait` (pipes.py:
        it is done before anything asked later, and even if this process is killed now); False,
        with nothing changed, when git refuses (`wait`), when a `reused` commit is no longer in the repository (a running `git
        update-ref` may hold it in its memory after a prune: the object store is asked, unless
        its loose file is there) or git cannot be reached."""
        try:
            if reused and not self._still_there(commit):
                return False
            self._materialize()
            if wait:
                self.update_refs({head_ref(self.session_id): commit})
            else:
                self.pipes.transaction({head_ref(self.session_id): commit}, wait=False)
        except GitCommandError:
            return False
        return True

    def _still_there(self, commit: str) -> bool:
        """Whether a reused commit is in the repository still (a running `git update-ref` may
        hold it in its memory after a prune: the object store is asked, unless its loose file
        is there)."""
        return os.path.isfile(f"{self.git.git_dir}/objects/{commit[:2]}/{commit[2:]}") \
            or self.pipes.resolve(commit) == [(commit, "commit")]

    def _note_open(self, window: OpenWindow) -> bool:
        """Note the head's move onto a reused quiet window's commit in the pending file, not in
        git (pending.py); False, with nothing changed, when the commit is gone or the file
        cannot be written."""
        if window.previous is None:
            return False
        event = {"event": "open", "turn": window.turn, "tool": window.label, "by": self.process}
        try:
            if not self._still_there(window.commit):
                return False
            self._materialize()  # (one noted before and not closed, first)
            self._pending_file.note(PendingOpen(window.commit, window.previous[0], window.tree, event))
        except (GitCommandError, OSError):
            return False
        self._pending = window.commit
        return True

    def _forget_pending(self, commit: str) -> bool:
        """Whether `commit` was the noted open (then no longer: the file is emptied), so that git's
        head never left the one before it."""
        if self._pending != commit:
            return False
        self._pending = None
        self._pending_file.clear()
        return True

    def _materialize(self) -> None:
        """Make the head's move that the pending file notes in git before any other move of the
        session's refs (sent, not waited for: git does it first), and empty the file: git then
        goes through the moves it went through before the file existed."""
        commit, self._pending = self._pending, None
        if commit is not None:
            self.pipes.transaction({head_ref(self.session_id): commit}, wait=False)
            self._pending_file.clear()

    def settle(self) -> None:
        """Wait until git has moved the refs it was sent (a quiet window's head); GitCommandError
        when one failed."""
        with self._lock:
            try:
                self.pipes.settle()
            except GitCommandError:
                self._head_known = False  # (where the head is: git is asked again)
                raise

    def close(self) -> None:
        """End the git processes of this checkpointer, once they have done what they were sent,
        and the workspace's watch (a later call starts them again, after a walk)."""
        self.prepared()  # (never ended in the middle of its git commands)
        self._pending_file.close()  # (a window still open stays noted: the next process reads it)
        watch = end_watch(self.git)
        self.pipes.close()
        self.pipes = GitPipes(self.git)
        if watch is not None:
            watch.close()  # (after git's processes: its watches were let go of meanwhile)

    def _open(self, create: bool = True) -> bool:
        """Make sure the shadow repository exists (or, without `create`, say whether it does)."""
        if not self._ready:
            if not self.workspace.is_dir():
                raise CheckpointError(f"the workspace {self.workspace} does not exist")
            if not create and not (self.git.git_dir / "HEAD").is_file():
                return False
            ensure_repo(self.git, self._home)
            self._ready = True
        return True


_PREPARING: weakref.WeakSet[GitCheckpointer] = weakref.WeakSet()  # those `prepare` was called on


def _before_fork() -> None:
    """A fork (`--bg` detaching) waits for the snapshots being prepared: the child would get
    a copy of a checkpointer's lock held by a thread it does not have, and wait on it forever."""
    for checkpointer in list(_PREPARING):
        checkpointer.prepared()


os.register_at_fork(before=_before_fork)


def close_checkpointer(runtime: RuntimeCore) -> None:
    """End the git processes of the runtime's checkpointer, if it has one (its run is over)."""
    checkpointer = runtime.feature(GitCheckpointer)
    if checkpointer is not None:
        checkpointer.close()


def commit_text(tree: str, parents: list[str], message: str, date: int) -> bytes:
    """A commit object's text as `git commit-tree` writes it (seconds since the epoch, UTC)."""
    lines = [f"tree {tree}\n", *(f"parent {p}\n" for p in parents), f"author {AUTHOR} {date} +0000\n",
             f"committer {COMMITTER} {date} +0000\n", "\n", message if message.endswith("\n") else message + "\n"]
    return "".join(lines).encode("utf-8", "surrogateescape")


def _stamp(path: Path) -> tuple[int, ...] | None:
    """What tells one version of a file from another without reading it, or None when it is gone."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
