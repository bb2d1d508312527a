"""A cheap fingerprint of a workspace's files, to tell whether a turn changed any.

It hashes each entry's path, size and mtime — no file contents — in a fixed (sorted) walk
order, skipping version-control folders and not following symlinks. The walk stops after
MAX_ENTRIES entries, so a huge tree costs a bounded time; a change beyond that cap goes
unseen, which can only make a turn that also made no tool call look stalled.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MAX_ENTRIES = 20_000
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


def workspace_fingerprint(root: Path, max_entries: int = MAX_ENTRIES) -> str:
    """A digest that changes when a file under `root` is created, deleted, resized or touched."""
    digest = hashlib.blake2b(digest_size=16)
    seen = 0
    pending = [root]
    while pending and seen < max_entries:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries[: max_entries - seen]:
            seen += 1
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if is_dir and entry.name in SKIPPED_DIRS:
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            digest.update(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode(errors="replace"))
            if is_dir:
                pending.append(Path(entry.path))
    return digest.hexdigest()
