"""Session ids: sortable by creation time, never colliding (UTC time plus a random suffix).

`YYYYmmdd-HHMMSS-<12 hex>`: the second it was made, then 47 random bits, so ids made at the
same second on many machines at once (a fleet of runs) still do not collide. Within one
process, an id made in the same second as the previous one takes the previous suffix plus
one, so a process's ids sort in the order it made them; the 47 bits leave room for that.
Older ids (`…-<6 hex>`) stay valid: any plain name is.

Sessions of Claude Code's headless mode (`recursive -p`) get a UUID instead (`new_uuid_session_id`),
as Claude's Agent SDKs find a session by one (`list_sessions`, `get_session_messages`): a
version 7 UUID, whose first 48 bits are the Unix time in milliseconds, so those ids too sort
by creation time; the rest is random, counted up within one millisecond of one process.
"""

from __future__ import annotations

import datetime
import os
import re
import secrets
import threading
import time
import uuid

_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SUFFIX_BITS = 47
SUFFIX_DIGITS = 12
_lock = threading.Lock()
_last: list[tuple[int, str, int]] = []  # (pid, second, suffix) of this process's latest id
_last_uuid: list[tuple[int, int, int]] = []  # (pid, millisecond, random part) of the latest UUID id
_RANDOM_BITS = 74  # a version 7 UUID's random bits (128 - 48 time - 4 version - 2 variant)


def new_session_id() -> str:
    """E.g. `20261129-204512-3f9a1c08d2e7`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    second = f"{now:%Y%m%d-%H%M%S}"
    with _lock:
        suffix = secrets.randbits(SUFFIX_BITS)
        pid = os.getpid()  # a forked child must not continue its parent's sequence
        if _last and _last[0][0] == pid and _last[0][1] >= second:  # same second (or the clock went back)
            second, suffix = _last[0][1], _last[0][2] + 1
        _last[:] = [(pid, second, suffix)]
    return f"{second}-{suffix:0{SUFFIX_DIGITS}x}"


def new_uuid_session_id() -> str:
    """E.g. `019ae39c-5b1e-7a3c-8f2d-1c9e0b7a4d21`: a UUID that sorts by creation time."""
    with _lock:
        millis, rand, pid = time.time_ns() // 1_000_000, secrets.randbits(_RANDOM_BITS), os.getpid()
        if _last_uuid and _last_uuid[0][0] == pid and _last_uuid[0][1] >= millis:
            millis, rand = _last_uuid[0][1], _last_uuid[0][2] + 1
        _last_uuid[:] = [(pid, millis, rand)]
    high, low = rand >> 62, rand & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (high << 64) | (0b10 << 62) | low
    return str(uuid.UUID(int=value))


def is_uuid(text: str) -> bool:
    """Whether `text` is a UUID in its usual 8-4-4-4-12 form (what Claude's tools take)."""
    try:
        return len(text) == 36 and str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def check_session_id(session_id: str) -> str | None:
    """Why `session_id` cannot name a session folder, or None when it is fine."""
    if not _VALID.match(session_id) or ".." in session_id:
        return f"invalid session id {session_id!r}: use letters, digits, '.', '_' and '-'"
    return None
