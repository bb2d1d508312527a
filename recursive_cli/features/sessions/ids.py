"""Session ids: sortable by creation time, never colliding (UTC time plus a random suffix).

`YYYYmmdd-HHMMSS-<12 hex>`: the second it was made, then 47 random bits, so ids made at the
same second on many machines at once (a fleet of runs) still do not collide. Within one
process, an id made in the same second as the previous one takes the previous suffix plus
one, so a process's ids sort in the order it made them; the 47 bits leave room for that.
Older ids (`…-<6 hex>`) stay valid: any plain name is.
"""

from __future__ import annotations

import datetime
import os
import re
import secrets
import threading

_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SUFFIX_BITS = 47
SUFFIX_DIGITS = 12
_lock = threading.Lock()
_last: list[tuple[int, str, int]] = []  # (pid, second, suffix) of this process's latest id


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


def check_session_id(session_id: str) -> str | None:
    """Why `session_id` cannot name a session folder, or None when it is fine."""
    if not _VALID.match(session_id) or ".." in session_id:
        return f"invalid session id {session_id!r}: use letters, digits, '.', '_' and '-'"
    return None
