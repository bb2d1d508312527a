"""Session ids: sortable by creation time, never colliding (UTC time plus a random suffix)."""

from __future__ import annotations

import datetime
import re
import secrets

_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def new_session_id() -> str:
    """E.g. `20261129-204512-3f9a1c`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def check_session_id(session_id: str) -> str | None:
    """Why `session_id` cannot name a session folder, or None when it is fine."""
    if not _VALID.match(session_id) or ".." in session_id:
        return f"invalid session id {session_id!r}: use letters, digits, '.', '_' and '-'"
    return None
