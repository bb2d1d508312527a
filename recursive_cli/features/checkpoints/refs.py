"""Moving an existing ref of a shadow repository without running git, under git's own lock.

A tool call that changes nothing still moves the session's `head` twice (onto its `open`
commit before the call, back after it). `git update-ref` costs a process (≈ 5 ms here) for
what is, in git's "files" ref store, a 41-byte file written under a lock: git creates
`<ref>.lock` with O_CREAT | O_EXCL (the lock every git process honours: `pack-refs`, `gc`,
another `update-ref`), writes `<id>\n` into it and renames it over `<ref>`. No fsync: git
syncs refs only when `core.fsync` names them, and the shadow repository's config does not.
A ref that exists only in `packed-refs` (after `git gc`) is updated by writing its loose
file, which git reads before the packed one.

Here the lock is taken the same way, and then (IN_PLACE) a loose ref file that already holds
an id of the same length is overwritten where it is, in one write, and the lock removed: on
ext4, renaming over a file that was itself written a moment ago waits for that file's
writeback (0.3–0.6 ms per move on this machine, against 0.02 ms in place). A write of 41
bytes is all or nothing for a kill -9 and, the blocks being allocated already, for a crash;
a reader racing it within the same microsecond could in principle read a mix of the two ids
(git would report a broken ref once). Any other file (none yet, a different length, a
symlink, a second link) is written into the lock file and renamed over, as git does.

The lock is taken by hard-linking a spare, empty file of the ref's own (kept under
`<git dir>/recursive/lock-spares/<ref>`) to `<ref>.lock`: link() fails when the name exists
just as O_EXCL does, so git and every other process see the same lock, but no inode is
allocated and freed per move. On this ext4 (`discard`) a fresh lock file cost 0.5–0.7 ms
inside a run against 0.04 ms for the link; the lock file's contents are never read (git
writes its own lock file and renames it; ours is only the name). Where hard links cannot be
made (another filesystem, no spare folder), and for the rename path, the lock file is
created with O_EXCL as git does. A held link lock's age is its inode's change time (link()
sets it; the spare is this ref's alone, so nothing else touches it).

Only the plain cases are done here: an existing ref of a files-backend repository with no
reflog, moved to a well-formed object id; and a new ref (`create_ref`: the turn refs of every
turn, a new session's head), whose file is written into git's lock file and renamed into
place, as git creates one, when nothing stands in its way: no folder of its path is a file
and no packed ref is a folder of it or under it. Anything else (a held lock, a reftable
repository, a reflog to append to, a filesystem error) answers False and the caller runs
`git update-ref`, which decides as it always did; being asked to write again is harmless,
since both write the same value. `absent` tells a ref that surely does not exist without
asking git (a new session has no head yet). A lock left by a process killed between creating it and
removing it (a few microseconds) is taken over once it is STALE_LOCK_SECONDS old: a live
git holds a ref lock for milliseconds.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import time
from pathlib import Path

STALE_LOCK_SECONDS = 30.0
IN_PLACE = True  # an existing loose ref is rewritten where it is (see the module's doc)
SPARES = Path("recursive") / "lock-spares"  # in the git dir: each ref's spare for its link lock
_OBJECT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
# Names as our refs are spelled (repo.py): no component starting with a dot or ending in
# ".lock", none of the characters git refuses, no "..", "@{", "//".
_REF_NAME = re.compile(r"refs(/[A-Za-z0-9_+=-][A-Za-z0-9._+=-]*)+")
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


@functools.lru_cache(maxsize=256)
def plain_ref_name(ref: str) -> bool:
    """Whether `ref` is a name this module may write (git would accept it as it is)."""
    return bool(_REF_NAME.fullmatch(ref)) and ".." not in ref and not any(
        part.endswith(".lock") or part.endswith(".") for part in ref.split("/"))


def files_backend(git_dir: Path) -> bool:
    """Whether the repository keeps its refs as files (not in a reftable)."""
    return (git_dir / "refs").is_dir() and not (git_dir / "reftable").exists()


def has_loose_object(git_dir: Path, oid: str) -> bool:
    """Whether `oid` is a loose object of the repository (False says nothing about packs)."""
    return os.path.isfile(f"{git_dir}/objects/{oid[:2]}/{oid[2:]}")


def movable(git_dir: Path, ref: str, oid: str) -> bool:
    """Whether moving `ref` to `oid` is the plain case (see the module's doc): a well-formed
    name and id, a ref that exists (loose or packed), no reflog."""
    if not _OBJECT_ID.fullmatch(oid) or not plain_ref_name(ref):
        return False
    files = _files(git_dir, ref)
    return not os.path.exists(files.log) and (os.path.isfile(files.ref) or _packed(git_dir, ref))


def absent(git_dir: Path, ref: str) -> bool:
    """Whether `ref` surely does not exist: a plain name of a files-backend repository with
    no file or folder of that name and no packed line. False when git must be asked."""
    if not plain_ref_name(ref) or not files_backend(git_dir):
        return False
    return not os.path.lexists(_files(git_dir, ref).ref) and not _packed(git_dir, ref)


def create_ref(git_dir: Path, ref: str, oid: str) -> bool:
    """Create `ref` (`absent`) at `oid` as `git update-ref` would: its folders made, its
    file written into `<ref>.lock` and renamed into place. False, with no ref written, when
    it is not the plain case (see the module's doc) or the lock is held."""
    if not _OBJECT_ID.fullmatch(oid) or not plain_ref_name(ref):
        return False
    files = _files(git_dir, ref)
    if os.path.lexists(files.log) or _in_the_way(git_dir, ref):
        return False
    try:
        os.makedirs(os.path.dirname(files.ref), exist_ok=True)
    except OSError:  # (a file where a folder of the path should be)
        return False
    fd = _lock(files.lock)
    if fd is None:
        return False
    try:
        try:
            written = os.write(fd, (oid + "\n").encode())
        finally:
            os.close(fd)
        if written != len(oid) + 1 or os.path.isdir(files.ref):
            raise OSError("not written")
        os.rename(files.lock, files.ref)
    except OSError:
        _remove(files.lock)
        return False
    return True


def _in_the_way(git_dir: Path, ref: str) -> bool:
    """Whether a ref stands where `ref`'s folders or `ref` itself would go: a loose file
    named as one of its folders, or a packed ref named as one of them or under `ref`."""
    parts = ref.split("/")
    folders = ["/".join(parts[:end]) for end in range(2, len(parts))]
    if any(os.path.isfile(git_dir / folder) for folder in folders):
        return True
    try:
        data = (git_dir / "packed-refs").read_bytes()
    except OSError:
        return False
    return b" " + ref.encode() + b"/" in data or any(_packed(git_dir, folder) for folder in folders)


class _RefFiles:
    """The file names of one ref, as strings (pathlib would rebuild them on every move)."""

    __slots__ = ("ref", "lock", "spare", "log")

    def __init__(self, git_dir: Path, ref: str) -> None:
        self.ref = str(git_dir / ref)
        self.lock = self.ref + ".lock"
        self.spare = str(git_dir / SPARES / ref)
        self.log = str(git_dir / "logs" / ref)


@functools.lru_cache(maxsize=256)
def _files(git_dir: Path, ref: str) -> _RefFiles:
    return _RefFiles(git_dir, ref)


def move_ref(git_dir: Path, ref: str, oid: str) -> bool:
    """Point `ref` (`movable`) at `oid` as `git update-ref` would; False, with nothing
    changed, when its lock is held or the file cannot be written."""
    files = _files(git_dir, ref)
    path, lock = files.ref, files.lock
    line = (oid + "\n").encode()
    if IN_PLACE:
        linked = _link_lock(files.spare, lock)
        if linked is False:
            return False
        if linked:
            try:
                if _overwrite(path, line):
                    return True
            finally:
                _remove(lock)
            # Not a file to write over: git's way, under a lock file of its own.
    fd = _lock(lock)
    if fd is None:
        return False
    try:
        if IN_PLACE and _overwrite(path, line):
            os.close(fd)
            os.unlink(lock)
            return True
        try:
            written = os.write(fd, line)
        finally:
            os.close(fd)
        if written != len(line):
            raise OSError("short write")
        os.rename(lock, path)
    except OSError:
        _remove(lock)
        return False
    return True


def _overwrite(path: str | Path, line: bytes) -> bool:
    """Write `line` over the ref file's bytes, in one write, when the file holds a line of
    the same length (an id of the same kind): False, with the file untouched, otherwise."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(line) or info.st_nlink != 1:
            return False
        return os.pwrite(fd, line, 0) == len(line)
    except OSError:
        return False
    finally:
        os.close(fd)


def _link_lock(spare: str | Path, lock: str | Path) -> bool | None:
    """Take `lock` by linking `spare` to it: True when held, False when someone holds it,
    None when no link can be made here (then `_lock` creates the file)."""
    took_over = made_spare = False
    while True:  # (each way round at most once)
        try:
            os.link(spare, lock, follow_symlinks=False)
            return True
        except FileExistsError:
            if took_over or not _stale(lock):
                return False
            _remove(lock)
            took_over = True
        except FileNotFoundError:  # no spare yet (or no ref folder: `_lock` makes it)
            if made_spare or not os.path.isdir(os.path.dirname(lock)) or not _make_spare(spare):
                return None
            made_spare = True
        except OSError:  # EXDEV, EPERM (no hard links here), EMLINK, ...
            return None


def _make_spare(spare: str | Path) -> bool:
    try:
        os.makedirs(os.path.dirname(spare), exist_ok=True)
        os.close(os.open(spare, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644))
    except OSError:
        return False
    return True


def _lock(lock: str | Path) -> int | None:
    """The created lock file's descriptor, or None when it is held (or cannot be made)."""
    for attempt in range(2):
        try:
            return os.open(lock, _OPEN_FLAGS, 0o666)
        except FileExistsError:
            if attempt or not _stale(lock):
                return None
            _remove(lock)
        except FileNotFoundError:  # a packed-only ref whose folder gc removed
            if attempt:
                return None
            try:
                os.makedirs(os.path.dirname(lock), exist_ok=True)
            except OSError:
                return None
        except OSError:
            return None
    return None


def _stale(lock: str | Path) -> bool:
    """Whether the lock is older than STALE_LOCK_SECONDS: a lock file's age is its mtime; a
    link lock (a second name of a spare) was made when its inode last changed."""
    try:
        info = os.stat(lock, follow_symlinks=False)
    except OSError:
        return False
    made = info.st_ctime if info.st_nlink > 1 else info.st_mtime
    return time.time() - made > STALE_LOCK_SECONDS


def _remove(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _packed(git_dir: Path, ref: str) -> bool:
    """Whether `packed-refs` holds `ref` (a line `<id> <ref>`)."""
    try:
        data = (git_dir / "packed-refs").read_bytes()
    except OSError:
        return False
    needle = b" " + ref.encode() + b"\n"
    at = data.find(needle)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        if not data.startswith((b"#", b"^"), start):
            return True
        at = data.find(needle, at + 1)
    return False
