"""Claude Code's truncating resume: `--resume-session-at UUID` and `--resume-drops-turn UUID`.

`--resume-session-at` keeps the conversation up to and including the message with that uuid
(the `uuid` of its stream line, or of `get_session_messages()`) and drops the rest from the
conversation. `--resume-drops-turn` declares the prompt whose turn that drops: the resume is
refused unless everything dropped is that prompt and what answered it (replies, tool results),
so that nothing the caller has not seen (a message queued mid-turn) is lost unknowingly. The
messages and refusals are Claude Code's, word for word, so that what a program matches on holds.

Nothing is deleted: a `rewind` record (`{"type": "rewind", "after": UUID}`, features/sessions/
reader.py) takes the dropped part out of the conversation, and the transcript keeps it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...core.errors import ResumePointError, SessionWriteError
from ...features.sessions.ids import is_uuid
from ...features.sessions.reader import LoadedSession, kept_messages
from ...features.sessions.records import MessageRecord, now_iso
from ...features.sessions.writer import ends_torn

DROP_GUARD = "Resume rejected by --resume-drops-turn:"


def truncate(session: LoadedSession, at: str, drops: str | None, *, apply: bool = True) -> bool:
    """Take what follows message `at` out of the session's conversation (with `apply` off, only
    check that it can be); ResumePointError when no message has that uuid or the drop guard
    refuses. True when something was taken out (the session must then be read again)."""
    records = [record for record in kept_messages(session.records) if record.message.role != "system"]
    index = next((i for i, record in enumerate(records) if record.uuid == at), None)
    if index is None:
        raise ResumePointError(f"No message found with message.uuid of: {at}")
    dropped = records[index + 1:]
    if drops is not None:
        reason = refusal(dropped, drops)
        if reason:
            raise ResumePointError(f"{DROP_GUARD} resuming at {at} would discard entries not attributable "
                                   f"to turn {drops}: {reason}")
    if not dropped or not apply:
        return False
    rewind = {"type": "rewind", "turn": records[index].turn + 1, "after": at, "time": now_iso()}
    _append(session.transcript_path, json.dumps(rewind, separators=(",", ":")).encode() + b"\n")
    return True


def refusal(dropped: list[MessageRecord], turn: str) -> str:
    """Why dropping `dropped` is not dropping the turn of prompt `turn` ("" when it is)."""
    if not is_uuid(turn):
        return f"declared turn id is not a UUID: {turn}"
    if not dropped:
        return ""
    first = dropped[0]
    if not (_is_prompt(first) and first.uuid == turn):
        return f"range does not start with the declared turn prompt; first discarded {_entry(first, 0)}"
    for number, record in enumerate(dropped[1:], 1):
        if _is_prompt(record) and record.uuid != turn:
            return f"range contains a user entry not attributable to the declared turn; {_entry(record, number)}"
    return ""


def _is_prompt(record: MessageRecord) -> bool:
    return record.message.role == "user"


def _entry(record: MessageRecord, number: int) -> str:
    kind = "assistant" if record.message.role == "assistant" else "user"  # (a tool result is a user entry)
    return f"entry {number} [type={kind}, uuid={record.uuid}]"


def _append(path: Path, line: bytes) -> None:
    """One whole line at the end of the transcript (the session's lock is held), fsynced."""
    try:
        prefix = b"\n" if ends_torn(path) else b""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, prefix + line)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise SessionWriteError(f"cannot write {path}: {exc.strerror or exc}") from None
