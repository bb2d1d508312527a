"""How the prompt is put together from arguments and a piped stdin (SPEC §2, `run`)."""

from __future__ import annotations

import sys
from typing import TextIO


def read_prompt(parts: list[str], stdin: TextIO | None = None) -> str:
    """PROMPT words, with piped stdin alone (no PROMPT or `-`) or appended in a fenced block."""
    stdin = sys.stdin if stdin is None else stdin
    prompt = " ".join(parts).strip()
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
        return stdin.read()
    except (OSError, ValueError):
        return ""
