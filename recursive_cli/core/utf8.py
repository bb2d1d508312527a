"""Text that leaves the process as UTF-8: lone surrogates are replaced, never fatal.

A Python string can hold lone surrogates — undecodable bytes kept by the `surrogateescape`
error handler (file names from `os.listdir`, words of `sys.argv`, a piped stdin) or a JSON
`\\ud800` escape a model sent — and encoding one as UTF-8 raises. Request bodies, session
files and stdout go through here, so such text costs a U+FFFD instead of the run.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a str holds no surrogate pairs)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def encode(text: str) -> bytes:
    """`text` as UTF-8; lone surrogates become U+FFFD instead of raising."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return scrub(text).encode()


def decode(data: bytes) -> str:
    """UTF-8 bytes as text; invalid sequences become U+FFFD."""
    return data.decode("utf-8", "replace")
