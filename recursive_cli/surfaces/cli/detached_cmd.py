"""`recursive agents | logs | queue | stop | attach`: look into and steer sessions running in
other processes (started with `--bg`, or in another terminal)."""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO

from ...core.errors import CliError
from ...core.settings import recursive_home
from ...features.sessions.inbox import queue_message
from ...features.sessions.lock import LockInfo, live_owner
from ...features.sessions.meta import SessionMeta, read_meta
from ...features.sessions.records import SessionError
from ...features.sessions.store import SessionStore
from ...launch.detach import EVENTS_FILE, STDERR_FILE, STDOUT_FILE
from ...launch.errors import EXIT_ERROR, EXIT_USAGE

POLL_SECONDS = 0.1  # how often a follower looks at the files and the owner's pid
_TAIL_BYTES = 16 * 1024  # enough of the transcript's end to find its last record


def _store() -> SessionStore:
    return SessionStore(recursive_home(os.environ))


def _session(ref: str) -> tuple[str, Path]:
    """The id and folder of the session `ref` names; CliError when none (or several) match."""
    store = _store()
    try:
        session_id = store.resolve(ref)
    except SessionError as exc:
        raise CliError(str(exc)) from None
    return session_id, store.folder(session_id)


def agents_command(as_json: bool, all_workspaces: bool, workspace: Path | None) -> int:
    """The running sessions of this workspace (or of all): pid, mode, turn, step, age, cost,
    last event; a table on stdout, or JSON."""
    here = None if all_workspaces else (workspace or Path.cwd()).expanduser().resolve()
    rows = []
    for entry in _store().entries(here):
        folder = _store().folder(entry.id)
        owner = live_owner(folder) if entry.meta is not None else None
        if owner is not None and entry.meta is not None:
            rows.append(_agent(entry.id, folder, entry.meta, owner))
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    if not rows:
        sys.stderr.write(f"no running sessions in {'any workspace' if here is None else here}\n")
        return 0
    names = ("id", "pid", "mode", "turn", "step", "age", "cost", "last event")
    cells = [(row["id"], str(row["pid"]), row["mode"], str(row["turn"]), str(row["step"]),
              _age(row["age_seconds"]), _cost(row["cost_usd"]), row["last_event"]) for row in rows]
    widths = [max(len(name), *(len(str(cell[i])) for cell in cells)) for i, name in enumerate(names)]
    for line in (names, *cells):
        sys.stdout.write("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip() + "\n")
    return 0


def _agent(session_id: str, folder: Path, meta: SessionMeta, owner: LockInfo) -> dict[str, object]:
    created = _parse_iso(meta.created)
    age = time.time() - created if created is not None else None
    event, when = _last_event(folder)
    return {"id": session_id, "pid": owner.pid, "mode": meta.mode, "workspace": meta.workspace,
            "model": meta.model, "turn": meta.turns, "step": meta.steps,
            "age_seconds": round(age, 1) if age is not None else None, "cost_usd": meta.cost_usd,
            "last_event": event, "last_event_time": when, "title": meta.title}


def _parse_iso(text: str) -> float | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _last_event(folder: Path) -> tuple[str, str | None]:
    """The type of the transcript's last whole record (a message's role, a tool's name), and when."""
    try:
        with (folder / "transcript.jsonl").open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - _TAIL_BYTES))
            lines = handle.read().splitlines()
    except OSError:
        return "", None
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        kind = str(record.get("type", ""))
        message = record.get("message")
        if kind == "message" and isinstance(message, dict):
            calls = message.get("tool_calls") or []
            names = ",".join(str((call.get("function") or call).get("name", "?")) for call in calls
                             if isinstance(call, dict))
            kind = f"{message.get('role', 'message')}" + (f" → {names}" if names else "")
        return kind, record.get("time")
    return "", None


def _age(seconds: object) -> str:
    if not isinstance(seconds, (int, float)):
        return "?"
    whole = int(seconds)
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m" if whole >= 3600 else f"{whole // 60}m{whole % 60:02d}s"


def _cost(cost: object) -> str:
    return f"${cost:.4f}" if isinstance(cost, (int, float)) else "-"


def logs_command(ref: str, follow: bool, output_format: str) -> int:
    """Print the session's progress from the start (its stream-json lines with `-o
    stream-json`); with `-f` follow it until it ends, and exit with its exit code."""
    session_id, folder = _session(ref)
    files = [folder / EVENTS_FILE] if output_format == "stream-json" else [folder / STDERR_FILE]
    if not files[0].exists():
        raise CliError(f"session {session_id} was not started with --bg, so it has no log; "
                       f"see `recursive sessions show {session_id}`")
    tail = [] if output_format == "stream-json" else [folder / STDOUT_FILE]
    return _follow(session_id, folder, files, tail, follow)


def _follow(session_id: str, folder: Path, files: list[Path], tail: list[Path], follow: bool,
            stop: threading.Event | None = None) -> int:
    """Copy `files` to stdout as they grow while the session's process runs (once without
    `follow`), then `tail`; the session's exit code (0 while it still runs, unfollowed)."""
    readers = [_Reader(path) for path in files]
    while True:
        running = live_owner(folder) is not None
        for reader in readers:
            reader.copy(sys.stdout)
        if not running or not follow or (stop is not None and stop.is_set()):
            break
        time.sleep(POLL_SECONDS)
    for reader in readers:
        reader.copy(sys.stdout)  # what was written as it ended
    if stop is not None and stop.is_set():
        return 0
    if running:
        return 0
    for path in tail:
        _Reader(path).copy(sys.stdout)
    return _exit_code(session_id, folder)


def _exit_code(session_id: str, folder: Path) -> int:
    """The exit code the session's last command ended with; 1, said on stderr, when its process
    died without one (killed)."""
    try:
        meta = read_meta(folder)
    except SessionError as exc:
        raise CliError(str(exc)) from None
    if meta.exit_code is None:
        sys.stderr.write(f"session {session_id} ended without a result (its process was killed); "
                         f"`recursive resume {session_id}` continues it\n")
        return EXIT_ERROR
    return meta.exit_code


class _Reader:
    """Copies what has been appended to a file since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def copy(self, out: IO[str]) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return
        whole = data.rfind(b"\n") + 1  # whole lines only: the rest next time
        if whole:
            self.offset += whole
            out.write(data[:whole].decode("utf-8", "replace"))
            out.flush()


def queue_command(ref: str, words: list[str]) -> int:
    """Leave a message for the session: its running process takes it at its next turn (a
    loop waiting for a wakeup at once); a session not running gets it on `resume`."""
    session_id, folder = _session(ref)
    text = " ".join(words) if words else ("" if sys.stdin.isatty() else sys.stdin.read())
    if not text.strip():
        raise CliError("nothing to queue: give MESSAGE, or pipe it on stdin", EXIT_USAGE)
    message_id = queue_message(folder, text)
    owner = live_owner(folder)
    sys.stdout.write(message_id + "\n")
    if owner is not None:
        sys.stderr.write(f"queued for session {session_id} (pid {owner.pid}): it takes it at its next turn\n")
    else:
        sys.stderr.write(f"queued for session {session_id}, which is not running: "
                         f"`recursive resume {session_id}` delivers it\n")
    return 0


def stop_command(ref: str, now: bool, wait: bool = True) -> int:
    """Stop the session's process at its next step boundary (`--now`: at once, its tool
    commands killed); it ends `interrupted`, and `resume` continues it."""
    session_id, folder = _session(ref)
    owner = live_owner(folder)
    if owner is None:
        raise CliError(f"session {session_id} is not running")
    try:
        os.kill(owner.pid, signal.SIGTERM if now else signal.SIGUSR1)
    except ProcessLookupError:
        raise CliError(f"session {session_id} is not running") from None
    except PermissionError:
        raise CliError(f"session {session_id} runs as another user (pid {owner.pid}): not stopped") from None
    if wait:
        while live_owner(folder) is not None:
            time.sleep(POLL_SECONDS)
    sys.stderr.write(f"stopped session {session_id}; `recursive resume {session_id}` continues it\n")
    return 0


def attach_command(ref: str) -> int:
    """Follow a running session's progress; each line typed is queued for it, `/stop` stops
    it, Ctrl-C detaches (the session goes on)."""
    session_id, folder = _session(ref)
    if not (folder / STDERR_FILE).exists() or live_owner(folder) is None:
        raise CliError(f"session {session_id} is not running detached (started with --bg); "
                       f"see `recursive logs {session_id}` or `recursive resume {session_id}`")
    sys.stderr.write(f"attached to session {session_id}: type a message to queue it, /stop to stop it, "
                     "Ctrl-C to detach\n")
    threading.Thread(target=_read_input, args=(session_id, folder), daemon=True).start()
    try:
        return _follow(session_id, folder, [folder / STDERR_FILE], [folder / STDOUT_FILE], follow=True)
    except KeyboardInterrupt:
        sys.stderr.write(f"\ndetached from session {session_id}; it goes on "
                         f"(`recursive attach {session_id}` to come back)\n")
        return 0


def _read_input(session_id: str, folder: Path) -> None:
    """Each line of stdin: `/stop` stops the session, any other text is queued for it."""
    for line in sys.stdin:
        text = line.strip()
        if text == "/stop":
            stop_command(session_id, now=False, wait=False)
        elif text:
            queue_message(folder, text)
            sys.stderr.write("✉ queued\n")
