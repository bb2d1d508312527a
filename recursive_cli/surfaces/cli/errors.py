"""The top of the `recursive` process: run the typer app; a closed stdout pipe exits quietly
(141), Ctrl-C 130, an ordinary end at once (`exit_now`). See launch/errors.py for why the
garbage collector is held off while a command starts."""

from __future__ import annotations

import os
import sys
from typing import Any

from ...launch import stdio
from ...launch.errors import exit_now, hold_collector


def run_app(app: Any) -> None:
    """Run the typer app; a closed stdout pipe exits quietly, an unexpected crash says so in one line."""
    owner = _owns_process()
    hold_collector(owner)
    stdio.install()
    try:
        app()
    except SystemExit as exc:
        if stdio.pipe_broken():  # the reader went away: 141, as if SIGPIPE had ended us
            sys.exit(stdio.EXIT_BROKEN_PIPE)
        if (exc.code is None or isinstance(exc.code, int)) and owner:
            exit_now(exc.code or 0)
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


def _owns_process() -> bool:
    """Whether the program running is the CLI itself (the `recursive` script or `python -m
    recursive_cli`, both of whose `__main__` call `app.main`), not a program that runs the CLI
    inside its own interpreter (`runpy`, a test): that one gets its SystemExit back."""
    from .app import main

    return getattr(sys.modules.get("__main__"), "main", None) is main
