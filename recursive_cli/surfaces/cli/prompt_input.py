"""How the prompt is put together from arguments and a piped stdin (SPEC §2, `run`)."""

from __future__ import annotations

import sys
from typing import TextIO

from ...core import utf8


def read_prompt(parts: list[str], stdin: TextIO | None = None) -> str:
    """PROMPT words, with piped stdin alone (no PROMPT or `-`) or appended in a fenced block.

    Bytes that are not UTF-8, in the words or on stdin, become U+FFFD.
    """
    stdin = sys.stdin if stdin is None else stdin
    prompt = utf8.scrub(" ".join(parts)).strip()
    piped = _read_piped(stdin)
    if prompt in ("", "-"):
        return piped.strip()
    if piped.strip():
        return f"{prompt}\n\n```\n{piped.rstrip()}\n```"
    return prompt


def _read_piped(stdin: TextIO) -> str:
    try:
        if stdin is None or stdin.closed or stdin.isatty():
            return ""
        binary = getattr(stdin, "buffer", None)
        if binary is None:
            return utf8.scrub(stdin.read())
        return utf8.decode(binary.read()).replace("\r\n", "\n").replace("\r", "\n")  # as text mode would
    except (OSError, ValueError):
        return ""
