"""Writing a snapshot's commit object without running git, as `git commit-tree` writes it.

Every snapshot and every window that opens a new `open` commit ran `git commit-tree`: a
process (≈ 2–5 ms here) for what is, in git's object store, one small zlib-compressed file
named after the SHA-1 of its contents. Here the commit is written the way git 2.x writes it
(`commit_tree_extended` and `write_loose_object`):

    tree <tree>\\n  parent <parent>\\n  author <ident> <time> +0000\\n  committer …\\n  \\n  <message>

hashed as `commit <size>\\0` + that text, deflated into a temporary file beside its final
name, read-only, and linked into place (an object already there is the same object: its time
is refreshed instead, as git refreshes it for gc). No fsync: git does not sync loose objects
unless `core.fsync` says so, and the shadow repository's config does not. Same bytes in, same
object id out: `tests/checkpoints/test_commit_objects.py` checks ours against git's.

Only the plain case is done here, and git does anything else (`write_commit` answers None):
a SHA-1 repository with no object-format or commit-encoding setting, a tree and parents that
are loose objects of the repository (git asserts that they exist; a loose file is proof, and
anything packed is left to git to look up), a message that is UTF-8 and ends with a newline.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import zlib
from collections.abc import Sequence
from pathlib import Path

from .refs import has_loose_object

_SHA1 = re.compile(r"[0-9a-f]{40}")
_PLAIN_CONFIG: dict[str, bool] = {}  # git dir → whether its config leaves commits plain
_UNUSUAL = re.compile(rb"objectformat|commitencoding|compatobjectformat", re.IGNORECASE)


def write_commit(git_dir: Path, tree: str, parents: Sequence[str], message: str, author: str,
                 committer: str, date: int) -> str | None:
    """The id of the commit of `tree` on `parents` with `message`, by `author` and `committer`
    ("Name <email>") at `date` (seconds since the epoch, UTC), written into the repository's
    objects; None (nothing written) when git must do it."""
    objects = f"{git_dir}/objects"
    if not _plain(git_dir) or not message.endswith("\n") or "\0" in message \
            or not all(_SHA1.fullmatch(oid) and has_loose_object(git_dir, oid) for oid in (tree, *parents)):
        return None
    text = "".join([f"tree {tree}\n", *(f"parent {p}\n" for p in parents), f"author {author} {date} +0000\n",
                    f"committer {committer} {date} +0000\n", "\n", message])
    try:
        body = text.encode("utf-8")  # (a lone surrogate: not UTF-8, git warns; left to it)
    except UnicodeEncodeError:
        return None
    data = b"commit %d\0" % len(body) + body
    oid = hashlib.sha1(data).hexdigest()
    return oid if _store(objects, oid, data) else None


def _plain(git_dir: Path) -> bool:
    """Whether the repository's config leaves commits as `write_commit` writes them."""
    key = str(git_dir)
    known = _PLAIN_CONFIG.get(key)
    if known is None:
        try:
            config = (git_dir / "config").read_bytes()
        except OSError:
            return False  # (not cached: it may be there next time)
        known = _PLAIN_CONFIG[key] = not _UNUSUAL.search(config)
    return known


def _deflate(data: bytes) -> bytes:
    """`data` as a zlib stream, as fast as git's default for loose objects; with a small window
    and little state (a commit is a few hundred bytes), so a short run's memory peak does not
    grow by zlib's default quarter of a megabyte. Any zlib stream is a valid loose object."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 9, 1)
    return packer.compress(data) + packer.flush()


def _store(objects: str, oid: str, data: bytes) -> bool:
    """Write the object unless it is there already (then refresh its time); False on failure."""
    folder = f"{objects}/{oid[:2]}"
    final = f"{folder}/{oid[2:]}"
    if os.path.isfile(final):
        with contextlib.suppress(OSError):
            os.utime(final)
        return True
    temp = f"{folder}/tmp_obj_{secrets.token_hex(6)}"
    try:
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o444)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o444)
        try:
            packed = _deflate(data)
            if os.write(fd, packed) != len(packed):
                return False
        finally:
            os.close(fd)
        try:
            os.link(temp, final)
        except FileExistsError:  # written meanwhile by someone else: the same object
            pass
        except OSError:  # no hard links here: git's fallback is a rename
            os.rename(temp, final)
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
