"""The session writer: an event sink that appends each record to `transcript.jsonl` as it happens.

Each record is one `os.write` of a whole line on an O_APPEND descriptor, so it is in the OS
the moment the event is emitted (a `kill -9` cannot lose it); the file is fsynced and
`meta.json` rewritten at every turn end and when the run finishes. Totals are kept in memory:
nothing is ever re-read or re-serialised.

A write that fails (disk full, quota, I/O error) ends the recording: a half-written record is
cut off again, so the transcript stays a clean, resumable prefix of the run, nothing more is
appended, meta.json keeps its last good state until the final rewrite, and the first error is
kept in `error`. From then on the events that come before an action — a turn's start and
every message — raise it, so the kernel stops before it runs a tool whose record would be
lost; the runtime turns that into the `io_error` finish reason (exit 1). Other events never
raise (they come from callbacks and end-of-run code): `cli/launch.py` reads `error` when it
makes the run's result, and a failure after the result is made is warned of once.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...core.events import AgentEvent, MessageAdded, Notice, RunFinished, TurnFinished, TurnStarted, notice_fields
from .meta import META_FILE, SessionMeta, fsync_dir, make_title, write_meta
from .records import (
    MessageRecord,
    SessionExistsError,
    SessionHeader,
    SessionWriteError,
    TurnEndRecord,
    TurnStartRecord,
    dump_record,
    now_iso,
)

TRANSCRIPT_FILE = "transcript.jsonl"
_INTERRUPTED_EXITS = (130, 141, 143)  # SIGINT, a closed stdout pipe, SIGTERM
_BEFORE_ACTIONS = (TurnStarted, MessageAdded)  # what follows them is a model call or a tool run
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _stderr_warning(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr, flush=True)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class JsonlSessionWriter:
    """Appends a session's events to its transcript and keeps its meta.json current."""

    def __init__(self, folder: Path, meta: SessionMeta, fd: int,
                 warn: Callable[[str], None] | None = None) -> None:
        self.folder = folder
        self.path = folder / TRANSCRIPT_FILE
        self.meta = meta
        self.error: SessionWriteError | None = None  # the first failure; nothing is appended after it
        self._fd: int | None = fd
        self._size = os.fstat(fd).st_size  # the end of the last whole record
        self._synced = self._size  # how much of it the last fsync made durable
        self._result_made = False  # RunFinished was seen: a failure now can only be warned of
        self._warn = warn or _stderr_warning
        self._handlers: dict[type, Callable[[Any], None]] = {
            MessageAdded: self._on_message, TurnStarted: self._on_turn_started,
            TurnFinished: self._on_turn_finished, RunFinished: self._on_run_finished,
        }

    @classmethod
    def create(cls, folder: Path, meta: SessionMeta,
               warn: Callable[[str], None] | None = None) -> JsonlSessionWriter:
        """Start a new session in `folder`; refuses a folder that already holds a transcript."""
        path = folder / TRANSCRIPT_FILE
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if path.exists() or (folder / META_FILE).exists():
                raise FileExistsError(path)
            # meta.json first: a crash right after still leaves the settings and the prompt. Its
            # name is made durable with the transcript's, by one fsync of the folder (_opened).
            write_meta(folder, meta, durable=False)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise SessionExistsError(f"session {meta.id} already exists ({folder})") from None
        except OSError as exc:
            raise SessionWriteError(f"cannot create session folder {folder}: {_reason(exc)}") from None
        header = SessionHeader(id=meta.id, created=meta.created, workspace=meta.workspace)
        try:  # (meta.json is as just written: only the transcript's header is to come)
            return cls._opened(folder, meta, fd, warn, dump_record(header), rewrite_meta=False)
        except SessionWriteError:
            with contextlib.suppress(OSError):
                path.unlink()  # ours (O_EXCL): leave no half-made session behind
            raise

    @classmethod
    def reopen(cls, folder: Path, meta: SessionMeta,
               warn: Callable[[str], None] | None = None) -> JsonlSessionWriter:
        """Append to an existing session (resume); its status becomes `running` again."""
        path = folder / TRANSCRIPT_FILE
        try:
            torn = path.exists() and ends_torn(path)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            if os.fstat(fd).st_size == 0:  # a crash came between meta.json and the transcript
                header = SessionHeader(id=meta.id, created=meta.created, workspace=meta.workspace)
                os.write(fd, dump_record(header))
        except OSError as exc:
            raise SessionWriteError(f"cannot reopen session transcript {path}: {_reason(exc)}") from None
        meta.status, meta.finish_reason, meta.exit_code = "running", None, None
        # A torn last line must not swallow the next record: end it, the reader reports it.
        return cls._opened(folder, meta, fd, warn, b"\n" if torn else b"")

    @classmethod
    def _opened(cls, folder: Path, meta: SessionMeta, fd: int, warn: Callable[[str], None] | None,
                first: bytes, rewrite_meta: bool = True) -> JsonlSessionWriter:
        """Write `first` (and meta.json, with `rewrite_meta`), raising SessionWriteError (and
        closing fd) on failure."""
        try:
            writer = cls(folder, meta, fd, warn)
            writer._append(first)
            writer._size += len(first)
            os.fsync(fd)
            writer._synced = writer._size
            fsync_dir(folder)  # (the transcript's name, and a new meta.json's)
            if rewrite_meta:
                meta.updated = now_iso()
                write_meta(folder, meta)
        except OSError as exc:
            os.close(fd)
            raise SessionWriteError(f"cannot write session {folder}: {_reason(exc)}") from None
        return writer

    def emit(self, event: AgentEvent) -> None:
        """Record the events that make up the session; others are ignored.

        Raises SessionWriteError for a turn start or a message once the session cannot be
        written, so that no action follows whose record would be lost.
        """
        handler = self._handlers.get(type(event))
        if handler is None and isinstance(event, Notice):
            handler = self._on_notice
        if handler is not None:
            handler(event)
        if self.error is not None and isinstance(event, _BEFORE_ACTIONS):
            raise SessionWriteError(str(self.error))

    def write_record(self, record: Any) -> None:
        """Append any other record (repair, wakeup, goal_evaluation, ...) and flush it;
        SessionWriteError when the session cannot be written."""
        self._write(dump_record(record))
        if self.error is not None:
            raise SessionWriteError(str(self.error))

    def update_meta(self, **changes: Any) -> None:
        """Set meta fields (e.g. `state` for loop and goal runs) and rewrite meta.json."""
        for name, value in changes.items():
            setattr(self.meta, name, value)
        self._save_meta()

    def sync(self) -> None:
        """fsync the transcript and rewrite meta.json."""
        self._fsync()
        self._save_meta()

    def close(self) -> None:
        """fsync and close the transcript; safe to call twice."""
        if self._fd is None:
            return
        self._fsync()
        fd, self._fd = self._fd, None
        try:
            os.close(fd)
        except OSError as exc:
            self._failed(exc)

    def __enter__(self) -> JsonlSessionWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _on_notice(self, event: Notice) -> None:
        if event.recorded:
            self._write(json.dumps(session_record(event), ensure_ascii=False,
                                   separators=(",", ":")).encode() + b"\n")

    def _on_message(self, event: MessageAdded) -> None:
        record = MessageRecord(turn=event.turn, message=event.message, time=now_iso(), uuid=event.uuid)
        if self._write(dump_record(record)):
            self.meta.messages += 1  # counts what is on disk: `resume` checks the transcript by it

    def _on_turn_started(self, event: TurnStarted) -> None:
        record = TurnStartRecord(turn=event.turn, prompt=event.prompt, time=now_iso())
        if not self._write(dump_record(record)):
            return
        self.meta.turns += 1
        if not self.meta.title:
            self.meta.title = make_title(event.prompt)
        # So that `sessions list` shows the title and turn even if the run is killed; the turn's
        # end makes it durable (its records are not fsynced before then either).
        self._save_meta(durable=False)

    def _on_turn_finished(self, event: TurnFinished) -> None:
        meta = self.meta
        meta.steps += event.steps
        meta.usage = meta.usage + event.usage
        # The runtime's budget is seeded from meta on resume, so this is the session's total.
        meta.cost_usd = event.cost_usd
        meta.finish_reason = event.finish_reason.value
        self._write(dump_record(TurnEndRecord(
            turn=event.turn, finish_reason=event.finish_reason.value, steps=event.steps,
            usage=event.usage, cost_usd=event.cost_usd, detail=event.detail, time=now_iso())))
        self.sync()

    def _on_run_finished(self, event: RunFinished) -> None:
        self._result_made = True
        if event.exit_code == 0:
            self.meta.status = "completed"
        elif event.exit_code in _INTERRUPTED_EXITS:
            self.meta.status = "interrupted"
        else:
            self.meta.status = "failed"
        self.meta.finish_reason = event.finish_reason
        self.meta.exit_code = event.exit_code  # (`recursive logs` ends with it)
        # The run's totals are the session's; they include requests made between turns
        # (a goal's judge), which no turn_end counted.
        self.meta.usage, self.meta.cost_usd = event.usage, event.total_cost_usd
        self._fsync()
        # Even after a failure: meta.json then says `failed` (so `resume` does not count the
        # steps of the saved prefix twice) and keeps the totals spent, if there is room.
        self._save_meta(final=True)

    def _write(self, data: bytes) -> bool:
        """Append `data`; False when it was not written (now or since an earlier failure)."""
        if self._fd is None or self.error is not None:
            return False
        try:
            self._append(data)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)  # shrinking needs no space: no torn record
            self._failed(exc)
            return False
        self._size += len(data)
        return True

    def _append(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def _fsync(self) -> None:
        """fsync the transcript, unless nothing was appended since the last time (a run's end
        right after its turn's: one fsync, not three)."""
        if self._fd is None or self._synced == self._size:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._failed(exc)
            return
        self._synced = self._size

    def _save_meta(self, final: bool = False, durable: bool = True) -> None:
        """Rewrite meta.json; after a failure only the final rewrite is tried, so meta.json never
        counts a turn or a message that the transcript lacks."""
        if self.error is not None and not final:
            return
        self.meta.updated = now_iso()
        try:
            write_meta(self.folder, self.meta, durable)
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        """Keep the first error: it ends the run (see the module docstring), or, once the
        result is made, is warned of."""
        if self.error is not None:
            return
        where = f"cannot write session {self.meta.id} ({self.folder}): {_reason(exc)}"
        if self._result_made:
            self.error = SessionWriteError(where)
            self._warn(f"{where}; its meta.json may not show how the run ended")
            return
        when = "there is room" if exc.errno in _NO_ROOM else "the session can be written again"
        self.error = SessionWriteError(f"{where}; the run stopped so that nothing goes unrecorded; "
                                       f"`recursive resume {self.meta.id}` continues once {when}")


def session_record(event: Notice) -> dict[str, Any]:
    """A driver's or feature's event as a transcript record (read back as an ExtraRecord)."""
    return {"type": event.type, **notice_fields(event), "time": now_iso()}


def ends_torn(path: Path) -> bool:
    """True when the file's last byte is not a newline (a torn last line)."""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return False
        handle.seek(size - 1)
        return handle.read(1) != b"\n"
