"""Top-level error handling: one clear line on stderr and a meaningful exit code, never a traceback."""

from __future__ import annotations

import os
import sys
from typing import Any

EXIT_ERROR = 1
EXIT_USAGE = 2


def fail(message: str, code: int = EXIT_ERROR) -> int:
    """Print `error: message` on stderr and return `code`."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    return code


def run_app(app: Any) -> None:
    """Run the typer app; a closed stdout pipe exits quietly, an unexpected crash says so in one line."""
    from . import stdio

    stdio.install()
    try:
        app()
    except SystemExit:
        if stdio.pipe_broken():  # the reader went away: 141, as if SIGPIPE had ended us
            sys.exit(stdio.EXIT_BROKEN_PIPE)
        raise
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(stdio.EXIT_BROKEN_PIPE)
    except KeyboardInterrupt:
        sys.exit(130)


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
