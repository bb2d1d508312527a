"""How big a workspace a run snapshots: a file count and a time budget, checked once.

A run's first snapshot of a workspace checks what snapshots would hold: over `max_files`
files, or a listing longer than `budget` seconds, and the session goes on without
checkpoints, saying so once. At a first contact (no kept index yet, or one over the limit)
that is a bounded `git ls-files --cached --others` of its own (`.gitignore` applied), before
anything is watched or walked; when the last snapshot was within the limits, the first walk
itself is the bounded check (the kept index's paths and the new ones it lists, read while
they stay within the limits): one git process fewer at every run's start. Within the limits
every later walk stays bounded too (a few tens of milliseconds per 10,000 files). Folders
that are no project — the home folder itself, the temporary folder itself, `/` — are never
snapshotted.

The limits come from `RECURSIVE_CHECKPOINT_MAX_FILES` (0: no limit) and
`RECURSIVE_CHECKPOINT_BUDGET` (seconds).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from ...core.errors import CheckpointsOff
from .git import ShadowGit

MAX_FILES = 20_000
BUDGET_SECONDS = 2.0
MAX_FILES_VARIABLE = "RECURSIVE_CHECKPOINT_MAX_FILES"
BUDGET_VARIABLE = "RECURSIVE_CHECKPOINT_BUDGET"
HOW = ("add big folders to .gitignore, raise " + MAX_FILES_VARIABLE
       + ", or pass --no-checkpoints to silence this")


class Limits(NamedTuple):
    """The most files a snapshot may hold (0: any number) and the seconds its walk may take."""

    max_files: int = MAX_FILES
    budget: float = BUDGET_SECONDS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        """The limits the environment sets (a malformed value keeps the default)."""
        env = os.environ if env is None else env
        limits = cls()
        try:
            limits = cls(max(int(env.get(MAX_FILES_VARIABLE, MAX_FILES)), 0), limits.budget)
        except ValueError:
            pass
        try:
            budget = float(env.get(BUDGET_VARIABLE, BUDGET_SECONDS))
            if budget > 0:
                limits = cls(limits.max_files, budget)
        except ValueError:
            pass
        return limits


def not_a_project(workspace: Path) -> str | None:
    """Why `workspace` is no folder to snapshot (the home folder, the temporary folder, `/`),
    or None for any other."""
    here = workspace.resolve()
    if here == Path(here.anchor):
        return f"{here} is the root folder"
    if here == Path.home().resolve():
        return f"{here} is the home folder"
    if here in {Path(tempfile.gettempdir()).resolve(), Path("/tmp").resolve()}:
        return f"{here} is the temporary folder"
    return None


def check_size(git: ShadowGit, limits: Limits) -> None:
    """Raise CheckpointsOff when the workspace holds more files than `limits.max_files` (the
    ones snapshots would hold) or listing them takes longer than `limits.budget`."""
    if limits.max_files:
        bounded_listing(git, ("ls-files", "-z", "--cached", "--others", "--exclude-standard"), limits,
                        lambda listed: listed.count(b"\0"), keep=False)


def index_entries(git: ShadowGit) -> int:
    """How many paths the kept index holds (its header says), 0 when there is none."""
    try:
        with open(git.index, "rb") as index:
            header = index.read(12)
    except OSError:
        return 0
    return int.from_bytes(header[8:12], "big") if header[:4] == b"DIRC" else 0


def within_last_limits(git: ShadowGit, limits: Limits) -> bool:
    """Whether the kept index (the last snapshot's files) holds no more than `limits.max_files`:
    then the first walk itself can be the bounded check (`bounded_listing`), without the
    separate listing `check_size` makes at a first contact with the workspace."""
    return 0 < index_entries(git) <= limits.max_files


def bounded_listing(git: ShadowGit, args: tuple[str, ...], limits: Limits, count: Callable[[bytes | bytearray], int],
                    keep: bool = True) -> bytes:
    """The output of `git ARGS` (b"" unless `keep`), read while `count(output so far)` stays
    within `limits.max_files` and the time within `limits.budget`; CheckpointsOff (git killed)
    when either is passed. `count` is given all of the output read so far."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen([git.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=git.env(), cwd=git.work_tree, start_new_session=True)
    except OSError:  # (what is wrong with git: said by the snapshot's own call, or by this one's)
        return git.run(*args) if keep else b""
    assert proc.stdout is not None
    listed = bytearray()
    counted = 0
    os.set_blocking(proc.stdout.fileno(), True)
    try:
        while counted <= limits.max_files:
            left = limits.budget - (time.monotonic() - started)
            if left <= 0:
                break
            chunk = _read(proc, left)
            if chunk is None:
                break
            if not chunk:
                if proc.wait() and keep:  # git failed: its error is that of the same call made plainly
                    return git.run(*args)
                return bytes(listed)
            if keep:
                listed += chunk
                counted = count(listed)
            else:
                counted += count(chunk)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    where = git.work_tree
    if counted > limits.max_files:
        raise CheckpointsOff(f"{where} holds over {limits.max_files:,} files")
    raise CheckpointsOff(f"listing the files of {where} took over {limits.budget:g} s")


def _read(proc: subprocess.Popen[bytes], timeout: float) -> bytes | None:
    """What `proc` wrote next (b"" at its end), or None when nothing came within `timeout`."""
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return None
    return os.read(proc.stdout.fileno(), 1 << 16)
