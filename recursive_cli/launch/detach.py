"""`--bg`: the command goes on in a detached process, the one that was started returns at once.

The runtime is built and the session bound in the foreground (so a bad flag or config still
fails there, with its exit code, and the session exists when its id is printed), with stdin
on /dev/null and stdout and stderr already on files in the session folder. Then the process
forks: the child starts a process session of its own (no terminal, no Ctrl-C of the shell's
group reaches it), takes over the session lock and runs the command as a foreground run would;
the parent prints the session id and exits 0. A `kill -9` of the child leaves the session as
any killed run leaves it: `recursive resume ID` continues it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.events import EventSink
    from ..features.sessions.lock import SessionLock

STDOUT_FILE = "stdout.log"  # what the run prints on stdout: the answer, or the JSON lines
STDERR_FILE = "stderr.log"  # its progress, as a foreground run prints it on stderr
EVENTS_FILE = "events.jsonl"  # its stream-json lines, whatever -o says (`logs -o stream-json`)


class Detachment:
    """The standard streams moved onto the session's files; `restore` puts them back."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.folder = folder
        self._saved = [os.dup(fd) for fd in (0, 1, 2)]
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(folder / STDOUT_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        err = os.open(folder / STDERR_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for source, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(source, target)
            os.close(source)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]

    def restore(self) -> None:
        """The streams as they were (a launch that failed says why on the user's terminal)."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        for fd, saved in zip((0, 1, 2), self._saved):
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = []

    def discard(self) -> None:
        """The streams as they were, and the files made for them gone when no session came to be."""
        self.restore()
        if not (self.folder / "transcript.jsonl").exists():
            for name in (STDOUT_FILE, STDERR_FILE, EVENTS_FILE):
                with contextlib.suppress(OSError):
                    (self.folder / name).unlink()
            with contextlib.suppress(OSError):
                self.folder.rmdir()  # (only if nothing else is in it)

    def fork(self, session_id: str, lock: SessionLock) -> None:
        """Return in the detached child (its own process session, the lock its own); the
        parent prints `session_id` on its stdout and exits 0 once the child holds the lock."""
        ready, told = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the detached session
            os.close(ready)
            os.setsid()
            lock.hand_over()
            os.write(told, b"1")
            os.close(told)
            for saved in self._saved:
                os.close(saved)
            self._saved = []
            return
        os.close(told)
        started = os.read(ready, 1)  # (empty if the child died before it held the lock)
        self.restore()
        if not started:
            sys.stderr.write(f"error: the detached session {session_id} ended as it started; "
                             f"see {self.folder / STDERR_FILE}\n")
            sys.stderr.flush()
            os._exit(1)
        sys.stdout.write(session_id + "\n")
        sys.stdout.flush()
        os._exit(0)  # nothing of the runtime is the parent's to close: the child owns it now


def events_sink(folder: Path, session_id: str, prices: Any) -> EventSink:
    """The stream-json sink of a detached run, into `events.jsonl`."""
    from ..core.pricing import Price
    from ..sinks.claude_stream import ClaudeStreamSink

    handle = open(folder / EVENTS_FILE, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (the process's to the end)
    return ClaudeStreamSink(handle, session_id, whole_runs=True, stream=True, api_key_source="none",
                            cost_of=lambda model, usage: Price(model, prices)(usage))
