"""How the prompt is put together from arguments and a piped stdin (SPEC §2, `run`).

stdin that is not a terminal composes with PROMPT, as with `llm` and `claude -p`: alone when
there is no PROMPT (or it is `-`), else appended in a fenced block. `--no-stdin` (or
`RECURSIVE_NO_STDIN=1`) never reads it, for shell loops whose stdin belongs to the loop
(`while read f; do recursive run --no-stdin "fix $f"; done < files.txt`). When a PROMPT was
given and a pipe stays silent, a note on stderr says what we wait for and how not to.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from typing import TextIO

from ..core import utf8

WAIT_NOTICE_SECONDS = 2.0
WAIT_NOTICE = ("note: waiting for stdin, which is added to the prompt (nothing has arrived for "
               "{seconds:.0f} s); to use the prompt alone, pass --no-stdin or run with < /dev/null\n")


def read_prompt(parts: list[str], stdin: TextIO | None = None, *, read_stdin: bool = True,
                notice: bool | None = None, err: TextIO | None = None,
                notice_after: float = WAIT_NOTICE_SECONDS) -> str:
    """PROMPT words, with piped stdin alone (no PROMPT or `-`) or appended in a fenced block.

    With `read_stdin` False, stdin is never touched. `notice` (default: when PROMPT words
    were given) writes a note on `err` if nothing has arrived on stdin after `notice_after`
    seconds. Bytes that are not UTF-8, in the words or on stdin, become U+FFFD.
    """
    prompt = utf8.scrub(" ".join(parts)).strip()
    if not read_stdin:
        return "" if prompt == "-" else prompt
    stdin = sys.stdin if stdin is None else stdin
    if notice is None:
        notice = prompt not in ("", "-")
    piped = _read_piped(stdin, err or sys.stderr, notice_after if notice else None)
    if prompt in ("", "-"):
        return piped.strip()
    if piped.strip():
        return f"{prompt}\n\n```\n{piped.rstrip()}\n```"
    return prompt


def empty_prompt_message(read_stdin: bool = True) -> str:
    """What to say when there is no prompt at all."""
    if read_stdin:
        return "empty prompt: give a PROMPT argument or pipe text on stdin"
    return "empty prompt: give a PROMPT argument (--no-stdin is set, so stdin is not read)"


def _read_piped(stdin: TextIO, err: TextIO, notice_after: float | None) -> str:
    try:
        if stdin is None or stdin.closed or stdin.isatty():
            return ""
        if notice_after is not None and not _arrives_within(stdin, notice_after):
            err.write(WAIT_NOTICE.format(seconds=notice_after))
            err.flush()
        binary = getattr(stdin, "buffer", None)
        if binary is None:
            return utf8.scrub(stdin.read())
        return utf8.decode(binary.read()).replace("\r\n", "\n").replace("\r", "\n")  # as text mode would
    except (OSError, ValueError):
        return ""


def _arrives_within(stdin: TextIO, seconds: float) -> bool:
    """Whether stdin has data (or its end) within `seconds`; True when that cannot be told
    (no descriptor, as in tests) or cannot block (a regular file)."""
    try:
        fd = stdin.fileno()
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        ready, _, _ = select.select([fd], [], [], seconds)
    except (OSError, ValueError, AttributeError):
        return True
    return bool(ready)
