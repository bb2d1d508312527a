"""Exit codes, the `error:` line, and the process's garbage collector and exit while a command runs.

The garbage collector is off while a command starts: start-up builds hundreds of thousands
of objects (modules, classes, pydantic schemas) and almost no garbage, yet their allocations
trigger a hundred collections, 35–70 ms of a one-step run. The CLI's own process pauses it
from the first import of this package (`pause_for_startup`: typer's and pydantic's imports
alone cost two dozen collections), anyone else's from `run_app`. A command that runs an agent
turns it back on once its runtime is built (`end_startup`), with what start-up built frozen
out of later collections; any other command is over before it matters.

A command that ends normally ends the process at once (`exit_now`): by then every session is
closed (written, fsynced, its lock released) and the streams need only a flush, so the
interpreter's teardown — collecting every object the run built, 0.1–0.3 s — buys nothing.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 75  # EX_TEMPFAIL: the model's server stayed unavailable; worth trying again later
EXIT_INTERRUPTED = 130  # SIGINT, as a shell reports a process it ended
_paused: list[bool] = []  # [True] while the garbage collector is held off (pause_for_startup, hold_collector)


def fail(message: str, code: int = EXIT_ERROR) -> int:
    """Print `error: message` on stderr and return `code`."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    return code


def config_code(exc: Exception) -> int:
    """2 for a bad value named on the command line, 1 for one found in a file on disk or the
    environment (an exception with `from_flag` says which; any other is the command line's)."""
    return EXIT_USAGE if getattr(exc, "from_flag", True) else EXIT_ERROR


def pause_for_startup() -> None:
    """Hold the collector off while the CLI's modules load, when this process was started as
    the CLI: the `recursive` script or `python -m recursive_cli` (whose `__main__` are about
    to call `app.main`, and so `run_app`, which keeps it paused or gives it back)."""
    entry = sys.argv[0] if sys.argv else ""
    started_as_cli = (os.path.basename(entry) in ("recursive", "recursive.exe")
                      or entry.endswith(os.path.join("recursive_cli", "__main__.py")))
    if started_as_cli and gc.isenabled() and not _paused:
        gc.disable()
        _paused.append(True)


def hold_collector(owner: bool) -> None:
    """Keep the collector off for the CLI's own process (`owner`); give a program of its own
    that runs the CLI (paused at import all the same) its collector back."""
    if owner and gc.isenabled():
        gc.disable()
        _paused.append(True)
    elif not owner and _paused:
        _paused.clear()
        gc.enable()


def end_startup() -> None:
    """Start-up is over: keep what it built out of later collections and collect again. (A
    no-op unless `run_app` paused the collector: a CLI run inside another program, a test,
    keeps that program's collector as it was.)"""
    if _paused:
        _paused.clear()
        gc.freeze()
        gc.enable()


def exit_now(code: int) -> None:
    """End the process with `code` without the interpreter's teardown, once nothing is left
    to do: the atexit handlers run and stdout and stderr are flushed first. Returns (for the
    ordinary exit) while a thread other than daemons is still running, since the
    interpreter would wait for it, and under a profiler or tracer (`python -m cProfile`,
    coverage), which writes its results after the program has returned."""
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None or sys.getprofile() is not None or sys.gettrace() is not None:
        return
    if any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()
           if thread is not threading.main_thread()):
        return
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed, or a reader that went away (the guard's /dev/null)
            pass
    os._exit(code)
