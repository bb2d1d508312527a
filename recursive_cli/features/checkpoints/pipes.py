"""Long-lived git processes of one checkpointer: git writes the refs and objects, not us.

A tool call that changes nothing still moves the session's `head` twice (onto its `open`
commit before the call, back after it), and every window that changes something writes a
commit. One `git update-ref` or `git commit-tree` per move costs a process (≈ 2–5 ms here);
instead, three git processes are started on first use and kept for the checkpointer's life:

    git update-ref --stdin          ref transactions (start, update/delete…, prepare, commit):
                                    git takes its own locks, all or nothing, as any git would
    git hash-object -w --stdin-paths -t commit
                                    a commit's text (written into a file of ours, its path on
                                    stdin) stored as a loose object; git checks its format
    git cat-file --batch-check      what a ref or `<ref>^{tree}` names, or "missing"

A round trip costs ≈ 0.1 ms (a ref transaction, git's lock file renamed over the ref) against
≈ 0.02–0.6 ms for the ref file written here under git's lock that this replaced (its module
admitted a torn read within the same microsecond); the per-step figure is in bench/README.md.

Each process runs in a session of its own (a Ctrl-C meant for the agent does not reach it)
with the shadow repository's environment (git.py). `close` ends them by closing their stdin
(git then exits by itself: an open transaction is rolled back) and reaps them; it runs when
the run ends and, failing that, when the interpreter exits. A process that dies (git answers
a bad transaction with `fatal:` and exits) is reaped, its error raised as GitCommandError,
and a new one starts on the next call.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from . import GitCommandError
from .git import ShadowGit, first_error

CLOSE_SECONDS = 2.0  # how long a closed process gets to exit before it is killed


class _Pipe:
    """One git process answering a line (or a few) per request on stdout."""

    def __init__(self, git: ShadowGit, args: tuple[str, ...]) -> None:
        self.git = git
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.RLock()

    def ask(self, request: bytes, answers: int) -> list[bytes]:
        """Send `request`, read `answers` lines back (without their newlines)."""
        with self.lock:
            proc = self.proc or self._start()
            stdin, stdout = _streams(proc)
            try:
                stdin.write(request)
                stdin.flush()
                lines = [stdout.readline() for _ in range(answers)]
            except OSError:
                lines = [b""]
            if not all(line.endswith(b"\n") for line in lines):
                raise self._died()
            return [line[:-1] for line in lines]

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            self.proc = subprocess.Popen(
                [self.git.executable, *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, cwd=self.git.git_dir, env=self.git.env(bare=True),
                start_new_session=True)
        except OSError as exc:
            raise GitCommandError(f"cannot run git: {exc.strerror or exc}") from None
        return self.proc

    def _died(self) -> GitCommandError:
        """The error of a process that stopped answering; it is reaped, and forgotten."""
        proc, self.proc = self.proc, None
        assert proc is not None
        _, stderr = _end(proc)
        return GitCommandError(f"git {self.args[0]} failed (exit {proc.returncode}): {first_error(stderr)}")

    def close(self) -> None:
        with self.lock:
            proc, self.proc = self.proc, None
            if proc is not None:
                _end(proc)


def _streams(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None
    return proc.stdin, proc.stdout


def _end(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Close the process's stdin, wait for it (killed after CLOSE_SECONDS), reap it."""
    try:  # (communicate closes stdin first)
        out, err = proc.communicate(timeout=CLOSE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out or b"", err or b""


class GitPipes:
    """The long-lived git processes of one shadow repository (see the module's doc)."""

    def __init__(self, git: ShadowGit) -> None:
        self.refs = _Pipe(git, ("update-ref", "--stdin"))
        self.objects = _Pipe(git, ("hash-object", "-w", "-t", "commit", "--stdin-paths"))
        self.reads = _Pipe(git, ("cat-file", "--batch-check=%(objectname) %(objecttype)"))
        self._text = git.git_dir / f"commit-{os.getpid()}-{id(self):x}.txt"
        self._finalizer = weakref.finalize(self, _close_all, (self.refs, self.objects, self.reads), self._text)

    def transaction(self, updates: dict[str, str], deletes: Iterable[str] = ()) -> None:
        """Set and delete refs in one transaction; GitCommandError (nothing changed) on failure."""
        lines = ["start", *(f"update {ref} {oid}" for ref, oid in updates.items()),
                 *(f"delete {ref}" for ref in deletes), "prepare", "commit"]
        self.refs.ask(("\n".join(lines) + "\n").encode(), 3)

    def write_commit(self, text: bytes) -> str:
        """Store a commit object of `text` (git checks it is one); its id."""
        with self.objects.lock:  # (the file is shared by every request of this process)
            self._text.write_bytes(text)
            return self.objects.ask(os.fsencode(self._text) + b"\n", 1)[0].decode()

    def resolve(self, *names: str) -> list[tuple[str, str] | None]:
        """(id, type) of what each name (a ref, `<ref>^{tree}`) names; None where nothing."""
        if any("\n" in name for name in names):
            raise GitCommandError("a ref name holds a newline")
        answers = self.reads.ask("".join(name + "\n" for name in names).encode(), len(names))
        found: list[tuple[str, str] | None] = []
        for answer in answers:
            fields = answer.decode().split(" ")
            found.append((fields[0], fields[1]) if len(fields) == 2 and fields[1] != "missing" else None)
        return found

    def close(self) -> None:
        """End every process started (waited for: no zombie is left), and remove the commit file."""
        self._finalizer()


def _close_all(pipes: tuple[_Pipe, ...], text: Path) -> None:
    for pipe in pipes:
        pipe.close()
    with contextlib.suppress(OSError):
        text.unlink()
