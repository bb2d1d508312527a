"""Which header names and values may go on the wire: none holding CR, LF or NUL.

A value is written after `Name: ` on one line, so a CR or LF in it would end that line and
start another header of the sender's choosing ("1\\r\\nX-Injected: 1"), or end the head and
start a body. Values come from places a user (or whoever wrote the file) controls: an
`.mcp.json` entry's `headers`, an API key from the environment. This module is light (no
import beyond the standard `re`) so that the configuration readers check what they read
before anything is started, and the transport (http1.py) checks again before it sends.
"""

from __future__ import annotations

import re

_BREAKS = re.compile(r"[\r\n\0]")
_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a token (RFC 9110 §5.1)


def refused_header(name: str, value: str) -> str | None:
    """Why `name: value` cannot be sent as one header (None: it can)."""
    if _BREAKS.search(name) or _BREAKS.search(value):
        what = "name" if _BREAKS.search(name) else "value"
        return f"its {what} holds a line break or NUL (CR, LF or NUL would start another header)"
    if not _NAME.fullmatch(name):
        return "its name is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"
    return None
