"""Knowing that the workspace did not change since the last scan, without looking at every file.

An unchanged workspace still costs `scan.py` a walk that lstats every tracked file — some
200 ms at 100,000 files. On Linux, once a process has scanned a workspace twice, it watches
every folder git walks (inotify: one watch per folder, not per file), and a scan that comes
after no event at all is known to be clean without asking git.

Only what inotify reports reliably is trusted: a local filesystem (ext4, xfs, btrfs, tmpfs,
overlay, …; not NFS, SMB, FUSE or a VM's shared folder, whose remote writers it never
hears), every folder watched (too many folders, or one that cannot be watched, and the
workspace is always walked), no lost events (a queue overflow counts as a change). A write
through a hard link from outside the workspace or through a shared memory map is not seen
by inotify; so that such a change is caught all the same, the watch is trusted for
`TRUST_SECONDS` after a walk at most, and any event (a write, a new file, a new folder, a
changed `.gitignore`) makes the next scan a walk. New or moved folders, a changed
`.gitignore`, and lost events also rebuild the watch list.
"""

from __future__ import annotations

import contextlib
import os
import struct
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from ...core.errors import WatchUnavailable
from .git import ShadowGit

MAX_WATCHED_DIRS = 20_000
TRUST_SECONDS = 30.0
# Filesystems whose changes all go through this kernel, so inotify sees every one of them.
LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs",
                               "overlay", "reiserfs", "jfs", "bcachefs", "nilfs2", "ramfs"})

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x1000000, 0x2000000, 0x40000000
WATCH_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
              | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
_ENTRY_EVENTS = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_LOST = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then `len` bytes of name)


class _Inotify:
    """A non-blocking inotify descriptor (through libc, as the standard library has none).

    `ctypes` is imported here, when a watch starts (a run's first walk of the workspace), not
    with this module: `checkpoints` commands and `--no-checkpoints` runs never load it (its
    modules, `_ctypes` and libffi are ≈ 1.5 ms and 0.4 MB).
    """

    def __init__(self) -> None:
        if not sys.platform.startswith("linux"):
            raise WatchUnavailable("inotify is Linux only")
        import ctypes

        self._ctypes = ctypes
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._add_watch = libc.inotify_add_watch
        except (OSError, AttributeError) as exc:
            raise WatchUnavailable(f"no inotify: {exc}") from None
        self._add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._rm_watch = libc.inotify_rm_watch
        self._rm_watch.argtypes = (ctypes.c_int, ctypes.c_int)
        self._watches: list[int] = []
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise WatchUnavailable(f"inotify_init1: {os.strerror(ctypes.get_errno())}")

    def add(self, folder: bytes) -> None:
        watch = self._add_watch(self.fd, folder, WATCH_MASK)
        if watch < 0:
            raise WatchUnavailable(f"cannot watch {os.fsdecode(folder)}: {os.strerror(self._ctypes.get_errno())}")
        self._watches.append(watch)

    def events(self) -> Iterable[tuple[int, bytes]]:
        """The (mask, name) of every event queued so far; none when nothing happened."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:  # the descriptor is gone: nothing it said can be trusted
                yield IN_Q_OVERFLOW, b""
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                _, mask, _, size = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                yield mask, data[start:start + size].rstrip(b"\0")
                offset = start + size

    def unwatch(self) -> None:
        """Remove every watch; the descriptor stays open until `close`. Closing a descriptor
        that still holds watches waits for the kernel to let go of them (an RCU grace period,
        10–20 ms here, paid at process exit too when it is left open); removed beforehand, they
        are let go of meanwhile, and a close a moment later does not wait."""
        for watch in self._watches:
            self._rm_watch(self.fd, watch)
        self._watches.clear()

    def close(self) -> None:
        self.unwatch()
        with contextlib.suppress(OSError):
            os.close(self.fd)


class WorkspaceWatch:
    """The folders of one workspace under watch, and what their events said since `restart`."""

    def __init__(self, inotify: _Inotify, folders: int) -> None:
        self._inotify = inotify
        self.folders = folders
        self.changed = False  # something may differ from what the last walk saw
        self.restructured = False  # the watch list itself may be out of date

    def poll(self) -> bool:
        """Take in the events queued so far; whether anything may have changed."""
        for mask, name in self._inotify.events():
            if name == b".git" and not mask & _ENTRY_EVENTS:
                continue  # git's own folder: never snapshotted; only its coming and going matters
            self.changed = True
            if mask & _LOST or name == b".gitignore" or (mask & IN_ISDIR and mask & _ENTRY_EVENTS):
                self.restructured = True
        return self.changed

    def restart(self) -> None:
        """A walk starts now: what happened so far is in it."""
        self.poll()
        self.changed = False

    def end(self) -> None:
        """Stop watching (nothing is heard from now on); `close` it a moment later."""
        self._inotify.unwatch()
        self.changed = True

    def close(self) -> None:
        self._inotify.close()


def watch_workspace(git: ShadowGit) -> WorkspaceWatch:
    """Watch every folder git would walk in the workspace, and those holding tracked files.

    Raises WatchUnavailable when the workspace cannot be watched reliably.
    """
    root = git.work_tree
    _require_local(root)
    skipped = _ignored_folders(git)
    inside_skipped = _tracked_under(git, skipped)
    inotify = _Inotify()
    try:
        count = 0
        for folder in _folders(os.fsencode(root), skipped, inside_skipped):
            count += 1
            if count > MAX_WATCHED_DIRS:
                raise WatchUnavailable(f"more than {MAX_WATCHED_DIRS:,} folders")
            inotify.add(folder)
        return WorkspaceWatch(inotify, count)
    except BaseException:
        inotify.close()
        raise


def _folders(root: bytes, skipped: set[bytes], keep: set[bytes]) -> Iterable[bytes]:
    """`root` and every folder below it but `.git` folders and the `skipped` (ignored) ones,
    inside which only the folders in `keep` (they lead to tracked files) are taken."""
    yield root
    stack: list[tuple[bytes, bool]] = [(b"", False)]
    while stack:
        relative, ignored = stack.pop()
        try:
            entries = list(os.scandir(root + b"/" + relative if relative else root))
        except OSError as exc:
            raise WatchUnavailable(f"cannot list {os.fsdecode(relative) or '.'}: {exc.strerror}") from None
        for entry in entries:
            if entry.name == b".git" or not entry.is_dir(follow_symlinks=False):
                continue
            path = relative + b"/" + entry.name if relative else entry.name
            inside = ignored or path in skipped
            if inside and path not in keep:
                continue
            yield entry.path
            stack.append((path, inside))


def _ignored_folders(git: ShadowGit) -> set[bytes]:
    """The folders git does not walk because an ignore rule names them (not those that merely
    hold ignored files only, which `ls-files -i --directory` lists too)."""
    out = git.run("ls-files", "-z", "--others", "--ignored", "--directory", "--exclude-standard")
    candidates = [entry[:-1] for entry in out.split(b"\0") if entry.endswith(b"/")]
    if not candidates:
        return set()
    # check-ignore takes no pathspec magic, not even "literal": "./" keeps a name that
    # starts with ":" from reading as magic.
    env = {key: value for key, value in git.env().items() if key != "GIT_LITERAL_PATHSPECS"}
    try:
        proc = subprocess.run([git.executable, "check-ignore", "-z", "--stdin"], capture_output=True,
                              input=b"".join(b"./" + c + b"\0" for c in candidates), cwd=git.work_tree,
                              env=env, start_new_session=True)
    except OSError as exc:
        raise WatchUnavailable(f"cannot run git check-ignore: {exc}") from None
    if proc.returncode not in (0, 1):  # 1: none of them is ignored
        raise WatchUnavailable("git check-ignore failed")
    return {entry.removeprefix(b"./") for entry in proc.stdout.split(b"\0") if entry}


def _tracked_under(git: ShadowGit, folders: set[bytes]) -> set[bytes]:
    """The ignored `folders` (and folders below them) that hold tracked files."""
    if not folders:
        return set()
    out = git.run("ls-files", "-z", "--", *(os.fsdecode(f) + "/" for f in sorted(folders)))
    found: set[bytes] = set()
    for path in out.split(b"\0"):
        parent = path.rpartition(b"/")[0]
        while parent and parent not in found:
            found.add(parent)
            parent = parent.rpartition(b"/")[0]
    return found


def _require_local(root: Path) -> None:
    """Raise WatchUnavailable unless `root` and every mount below it are local filesystems."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise WatchUnavailable(f"cannot read the mount table: {exc}") from None
    here = str(root).rstrip("/") + "/"
    holder: tuple[str, str] | None = None  # the mount the workspace is on (the last one wins)
    for line in lines:
        fields = line.split(" ")
        if "-" not in fields[5:] or len(fields) < 5:
            continue
        point = _unescape(fields[4]).rstrip("/") + "/"
        kind = fields[fields.index("-", 5) + 1]
        if here.startswith(point) and (holder is None or len(point) >= len(holder[0])):
            holder = (point, kind)
        elif point.startswith(here) and kind not in LOCAL_FILESYSTEMS:
            raise WatchUnavailable(f"{point} is on {kind}, whose changes inotify may not hear")
    if holder is None:
        raise WatchUnavailable("no mount holds the workspace")
    if holder[1] not in LOCAL_FILESYSTEMS:
        raise WatchUnavailable(f"the workspace is on {holder[1]}, whose changes inotify may not hear")


def _unescape(field: str) -> str:
    """A mountinfo path: spaces, tabs, newlines and backslashes come octal-escaped."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
