"""Messages queued for a session from other processes (`recursive queue ID MESSAGE`).

Each message is a file `queue/<id>.msg` in the session folder, written to a temp name and
renamed into place, so it is there whole or not at all. The process that owns the session
claims one by renaming it to `<id>.claimed` (a rename succeeds once), records
`queue_delivered` in the transcript, starts the turn on it (its user message is recorded), and
only then deletes the file. After a `kill -9` a claimed file is looked up in the transcript:
delivered and followed by its user message → deleted; otherwise it waits again, for the next
process (resume) to deliver. So a message is never lost and never delivered twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from ...core.events import AgentEvent, MessageAdded, QueueDelivered
from .meta import fsync_dir

QUEUE_DIR = "queue"
WAITING, CLAIMED = ".msg", ".claimed"
POLL_SECONDS = 0.2  # how often a waiting loop looks into queue/ (no portable file watch in the stdlib)


def queue_message(folder: Path, text: str) -> str:
    """Leave `text` for the session in `folder`; returns the message's id."""
    queue = folder / QUEUE_DIR
    queue.mkdir(mode=0o700, exist_ok=True)
    message_id = f"{time.time_ns():020d}-{secrets.token_hex(3)}"
    temp = queue / f".{message_id}.tmp"
    with temp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(temp, queue / (message_id + WAITING))
    fsync_dir(queue)
    return message_id


def waiting_messages(folder: Path) -> list[Path]:
    """The messages not yet claimed, oldest first."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder / QUEUE_DIR) if entry.name.endswith(WAITING))
    except FileNotFoundError:
        return []
    return [folder / QUEUE_DIR / name for name in names]


class SessionInbox:
    """The owning process's side of the queue: claims messages, settles them once recorded.
    Also an event sink: the user message that follows a delivery settles it."""

    def __init__(self, folder: Path, emit: Callable[[AgentEvent], None]) -> None:
        self.folder = folder
        self._emit = emit
        self._claimed: list[Path] = []

    def recover(self) -> None:
        """Settle the messages a dead process had claimed: deleted if their turn started, else
        waiting again."""
        confirmed = _confirmed_deliveries(self.folder / "transcript.jsonl")
        try:
            claimed = [path for path in (self.folder / QUEUE_DIR).iterdir() if path.name.endswith(CLAIMED)]
        except FileNotFoundError:
            return
        for path in claimed:
            message_id = path.name[: -len(CLAIMED)]
            if message_id in confirmed:
                path.unlink(missing_ok=True)
            else:
                os.rename(path, path.with_name(message_id + WAITING))

    def has_waiting(self) -> bool:
        """Whether a message waits."""
        return bool(waiting_messages(self.folder))

    def take(self) -> str | None:
        """Claim the oldest waiting message and record its delivery; None when none waits."""
        for path in waiting_messages(self.folder):
            message_id = path.name[: -len(WAITING)]
            claimed = path.with_name(message_id + CLAIMED)
            try:
                os.rename(path, claimed)
            except FileNotFoundError:
                continue
            text = claimed.read_text(encoding="utf-8")
            self._claimed.append(claimed)
            self._emit(QueueDelivered(id=message_id, message=text))
            return text
        return None

    async def arrival(self) -> None:
        """Return once a message waits."""
        while not waiting_messages(self.folder):
            await asyncio.sleep(POLL_SECONDS)

    def emit(self, event: AgentEvent) -> None:
        """A user message recorded after a delivery: the claimed file has served."""
        if isinstance(event, MessageAdded) and event.message.role == "user" and self._claimed:
            for path in self._claimed:
                with contextlib.suppress(OSError):
                    path.unlink()
            self._claimed.clear()


def _confirmed_deliveries(transcript: Path) -> set[str]:
    """Ids of the queued messages whose delivery record is followed by a user message."""
    confirmed: set[str] = set()
    pending: str | None = None
    try:
        lines = transcript.read_bytes().splitlines()
    except OSError:
        return confirmed
    for line in lines:
        if b'"queue_delivered"' not in line and b'"role":"user"' not in line.replace(b" ", b""):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("type") == "queue_delivered":
            pending = str(record.get("id"))
        elif record.get("type") == "message" and (record.get("message") or {}).get("role") == "user":
            if pending is not None:
                confirmed.add(pending)
            pending = None
    return confirmed
