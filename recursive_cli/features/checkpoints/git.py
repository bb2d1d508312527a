"""Running `git` against a shadow repository: a clean environment, one-line errors, an index mutex.

Every command runs with the caller's `GIT_*` variables removed and the shadow repository's
own set: no system or user config is read (so a user's hooks, signing, autocrlf or excludes
never apply), pathspecs are literal, and commits get a fixed identity, so it works on a
machine with no git configuration at all. Commands run in their own process session, so a
Ctrl-C meant for the agent does not cut a snapshot in half.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import GitCommandError, GitMissingError

IDENTITY = {"GIT_AUTHOR_NAME": "recursive", "GIT_AUTHOR_EMAIL": "checkpoints@recursive.invalid",
            "GIT_COMMITTER_NAME": "recursive", "GIT_COMMITTER_EMAIL": "checkpoints@recursive.invalid"}


def find_git() -> str | None:
    """The git executable on PATH, or None."""
    return shutil.which("git")


def require_git() -> str:
    """The git executable; GitMissingError when there is none."""
    git = find_git()
    if git is None:
        raise GitMissingError("git is not installed (or not on PATH); checkpoints need it")
    return git


@dataclass(frozen=True, slots=True)
class ShadowGit:
    """One shadow repository (`git_dir`) whose work tree is a workspace, with its own index."""

    executable: str
    git_dir: Path
    work_tree: Path
    index: Path

    def env(self, index: Path | None = None, date: int | None = None,
            bare: bool = False) -> dict[str, str]:
        """The environment git runs with; `date` fixes commit times (seconds since the epoch),
        `bare` leaves the work tree out (`git init` refuses one for a bare repository)."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
        env.update(IDENTITY)
        env.update({
            "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.work_tree),
            "GIT_INDEX_FILE": str(index or self.index), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_LITERAL_PATHSPECS": "1",
            "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1", "LC_ALL": "C",
        })
        if bare:
            del env["GIT_WORK_TREE"]
        if date is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
        return env

    def run(self, *args: str, input: bytes | None = None, index: Path | None = None,
            date: int | None = None, bare: bool = False) -> bytes:
        """stdout of `git ARGS` (in the work tree, or the repository when `bare`);
        GitCommandError when it fails."""
        try:
            proc = subprocess.run([self.executable, *args], input=input, capture_output=True,
                                  cwd=self.git_dir if bare else self.work_tree,
                                  env=self.env(index, date, bare), start_new_session=True,
                                  stdin=None if input is not None else subprocess.DEVNULL)
        except FileNotFoundError:
            folder = self.git_dir if bare else self.work_tree
            if not folder.is_dir():
                raise GitCommandError(f"{folder} does not exist") from None
            raise GitMissingError(f"git is not installed (or not on PATH): {self.executable}") from None
        except OSError as exc:
            raise GitCommandError(f"cannot run git: {exc.strerror or exc}") from None
        if proc.returncode != 0:
            raise GitCommandError(f"git {args[0]} failed (exit {proc.returncode}): "
                                  f"{first_error(proc.stderr)}")
        return proc.stdout

    @contextlib.contextmanager
    def index_locked(self, wait: bool = True) -> Iterator[bool]:
        """Hold the index for this process: other runs on the same workspace wait their turn
        (without `wait`, it yields False at once when another holds it, and True when held).

        The kernel drops the lock when its holder dies, so while we hold it a leftover
        `index.lock` can only come from a snapshot that was killed, and is removed.
        """
        mutex, stale = _lock_names(self.index)
        try:
            fd = os.open(mutex, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            self.index.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(mutex, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            if wait:  # (a quick look, without waiting, runs no git: a stale lock is in no one's way)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(stale)
            yield True
        finally:
            os.close(fd)


@functools.lru_cache(maxsize=64)
def _lock_names(index: Path) -> tuple[str, str]:
    """The mutex's file name of the index `index` and that of git's own lock on it."""
    return str(index.with_name("index.mutex")), str(index.with_name(index.name + ".lock"))


def first_error(stderr: bytes) -> str:
    """The most telling line of git's stderr (`fatal:`/`error:` first), cut to one line."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line[:300]
    return (lines[0] if lines else "no error message")[:300]
