"""Long-lived git processes of one checkpointer: git writes the refs and objects, not us.

Every window that changes something writes a commit and moves the session's `head` (a tool
call that changes nothing notes its open beside the head instead and sends git nothing:
pending.py). One `git update-ref` or `git commit-tree` per move costs a process (≈ 2–5 ms here);
instead, up to three git processes are started on first use and kept for the checkpointer's life:

    git update-ref --stdin          ref transactions (start, update/delete…, prepare, commit):
                                    git takes its own locks, all or nothing, as any git would
    git hash-object -w --stdin-paths -t commit
                                    a commit's text (written into a file of ours, its path on
                                    stdin) stored as a loose object; git checks its format
    git cat-file --batch-check      what a ref or `<ref>^{tree}` names, or "missing"

Waiting for each head move would cost the per-step figure: git renames its lock file over
the ref, and on ext4 a rename over a file written a moment ago waits for that file's
writeback. A quiet window (open and close on the event loop, a 5 ms gap between) measured
here, same machine, alternating (/tmp quiet-window loop, 300 steps, median of means):

    ref files written in place by our own code (before)     0.40–0.49 ms/step
    git update-ref --stdin, each transaction waited for      1.3–3.7 ms/step
    git update-ref --stdin, quiet moves not waited for       0.31–0.76 ms/step

So the head's moves around a quiet window, when git makes them (pending.py says when), are
sent and not waited for (`_Pipe.send`): git does them in order
while the tool call runs, before anything asked after them (every `ask` first reads the
answers owed), and even when this process is killed meanwhile (the requests are in git's
pipe: it reads them before the end of its input). When git refused one (a lock held by
another git), it and those sent after it are sent again, each waited for, by the next `ask`,
and its error is that call's. Everything else (commits, a turn's refs, restores) waits.

What it costs, measured on a quiet machine (load 0.0, 2 cores), alternating with the version
that wrote ref and object files itself (commit dae36d9), two rounds each:

    bench/snapshot.py --files 1000 --repeats 7      before          after
      unchanged (a turn that only read files)        0.52–0.56 ms    1.13–1.28 ms
      10 files changed                               35–36 ms        41–44 ms
      restore a 10-file turn                         10.8–11.2 ms    9.6–11.9 ms
    bench/step_overhead.py --files 1000, default     5.8 ms/step     6.1 ms/step (wall)
      its checkpoint share (vs --no-checkpoints)     within noise of each other

So an unchanged snapshot pays ≈ 0.6 ms more and a 10-file one ≈ 6–8 ms more than when we
wrote the files ourselves: round trips to git (a pipe write, a switch into git and back) where
there was a file write. A quiet call used to move the head twice, not waited for, but not
free: git's transactions take 0.13 ms of CPU each here (ext4: the lock file's rename over the
ref; 0.08 on tmpfs), 0.3–0.5 ms a step on the wall clock and 0.66 ms of CPU in a 50-step loop
of `true` (2026-12-03); its open is now noted in a file of the session's (pending.py). A
run's first snapshot also starts the processes (a fork and a git start-up each, ≈ 2 ms apiece
here: the reader only when a resumed session's head must be read) and its end waits for them
to exit, side by side. We keep this design all the same: git takes its own locks and checks
what it stores, so no reader can see a torn ref and no format of git's is written by hand.

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
MAX_PENDING = 64  # requests sent without waiting, at most (their answers fill a pipe, else)


class _Pipe:
    """One git process answering a line (or a few) per request on stdout."""

    def __init__(self, git: ShadowGit, args: tuple[str, ...]) -> None:
        self.git = git
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending: list[tuple[bytes, int]] = []  # sent, not answered yet: (request, answer lines)
        self.ending: list[subprocess.Popen[bytes]] = []  # told to end (`finish`), not reaped yet
        self.lock = threading.RLock()

    def ask(self, request: bytes, answers: int) -> list[bytes]:
        """Send `request`, read `answers` lines back (without their newlines), once every
        request sent before it is answered."""
        with self.lock:
            self._settle()
            return self._exchange(request, answers)

    def send(self, request: bytes, answers: int) -> None:
        """Send `request` without waiting: its `answers` lines are read by the next `ask` or
        `settle`, and should git have stopped before answering, it and every request sent
        after it are sent again then, in order, each waited for."""
        with self.lock:
            if len(self.pending) >= MAX_PENDING:
                self._settle()
            proc = self.proc or self._start()
            with contextlib.suppress(OSError):  # (git is gone: `_settle` sends it again)
                stdin = _streams(proc)[0]
                stdin.write(request)
                stdin.flush()
            self.pending.append((request, answers))

    def start(self) -> None:
        """Start the process now, if it is not running (it is, else, on first use)."""
        with self.lock:
            if self.proc is None:
                self._start()

    def settle(self) -> None:
        """Wait until every request sent is answered; GitCommandError when one fails."""
        with self.lock:
            self._settle()

    def _settle(self) -> None:
        pending, self.pending = self.pending, []
        for done, (_, answers) in enumerate(pending):
            if self.proc is not None and _read(self.proc, answers) is not None:
                continue
            if self.proc is not None:
                self._died()  # (reaped; its error is git's answer to a request sent again now)
            for request, count in pending[done:]:
                self._exchange(request, count)
            return

    def _exchange(self, request: bytes, answers: int) -> list[bytes]:
        proc = self.proc or self._start()
        try:
            stdin = _streams(proc)[0]
            stdin.write(request)
            stdin.flush()
            lines = _read(proc, answers)
        except OSError:
            lines = None
        if lines is None:
            raise self._died()
        return lines

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

    def finish(self) -> None:
        """Wait for the answers owed, then close the process's stdin: git exits by itself
        meanwhile, beside the others being finished (`close` reaps it; a call made after this
        starts a new one)."""
        with self.lock:
            with contextlib.suppress(GitCommandError):  # (ending: nothing is left to tell it to)
                self._settle()
            proc, self.proc = self.proc, None
            if proc is not None:
                self.ending.append(proc)
                with contextlib.suppress(subprocess.TimeoutExpired):  # (stdin closed, output read so far)
                    proc.communicate(timeout=0)

    def close(self) -> None:
        self.finish()
        with self.lock:
            ending, self.ending = self.ending, []
        for proc in ending:
            _end(proc)  # (a communicate that timed out goes on where it was)


def _streams(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None
    return proc.stdin, proc.stdout


def _read(proc: subprocess.Popen[bytes], answers: int) -> list[bytes] | None:
    """`answers` lines of the process's stdout (without their newlines); None when it ended first."""
    stdout = _streams(proc)[1]
    lines = [stdout.readline() for _ in range(answers)]
    return [line[:-1] for line in lines] if all(line.endswith(b"\n") for line in lines) else None


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

    def start(self) -> None:
        """Start the processes that write now (GitCommandError when git cannot run); the one
        that reads starts on first use (a new session's head is known without asking)."""
        for pipe in (self.objects, self.refs):
            pipe.start()

    def transaction(self, updates: dict[str, str], deletes: Iterable[str] = (), wait: bool = True) -> None:
        """Set and delete refs in one transaction; GitCommandError (nothing changed) on failure.
        Without `wait`, git is only sent it (see `_Pipe.send`): done in order, before anything
        asked later, and even if this process is killed meanwhile."""
        lines = ["start", *(f"update {ref} {oid}" for ref, oid in updates.items()),
                 *(f"delete {ref}" for ref in deletes), "prepare", "commit"]
        request = ("\n".join(lines) + "\n").encode()
        if wait:
            self.refs.ask(request, 3)
        else:
            self.refs.send(request, 3)

    def settle(self) -> None:
        """Wait until git has done every transaction sent without waiting."""
        self.refs.settle()

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
    for pipe in pipes:  # (all told to end first: they exit side by side)
        pipe.finish()
    for pipe in pipes:
        pipe.close()
    with contextlib.suppress(OSError):
        text.unlink()
