"""Verbose diagnostics: with `-v`, what caused a failure and where, on stderr.

By default a failure is reported in one line (a ProviderError's `reason`, a tool's error
result). The cause behind that line — the SDK exception, the socket error, the traceback — is
logged here at debug level and printed only once `enable_verbose` has been called (the CLI
does so for `-v`). Secrets are masked before anything is logged.
"""

from __future__ import annotations

import logging
import re
import traceback
from typing import TextIO

LOGGER_NAME = "recursive_cli"
MASK = "***"
# A secret at least this long is masked wherever it appears; a shorter one (the README's
# `RECURSIVE_API_KEY=x` for a local server) only where it stands as a token of its own, so that
# "does not exist" does not become "does not e***ist".
MIN_EMBEDDED_SECRET = 8

log = logging.getLogger(LOGGER_NAME)


def enable_verbose(stream: TextIO) -> None:
    """Print debug diagnostics to `stream` (once per process, however often it is called)."""
    if any(getattr(handler, "_recursive_verbose", False) for handler in log.handlers):
        return
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("debug: %(message)s"))
    handler._recursive_verbose = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)


def log_cause(summary: str, cause: BaseException, secret: str | None = None) -> None:
    """Log the one-line `summary` of a failure with the traceback of its `cause`."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    text = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)).rstrip()
    log.debug("%s\n%s", redact(summary, secret), redact(text, secret))


def redact(text: str, secret: str | None) -> str:
    """`text` with `secret` masked: everywhere when it is long, as a whole token when it is short."""
    if not secret or secret not in text:
        return text
    if len(secret) >= MIN_EMBEDDED_SECRET:
        return text.replace(secret, MASK)
    return re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", MASK, text)
