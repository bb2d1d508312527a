"""How a loop's wait is shown: one plain line when piped, a live countdown on a TTY."""

from __future__ import annotations

import io
import time

from recursive_cli.core.events import LoopWaiting, TurnStarted
from recursive_cli.features.loop.jobs import JobRecord
from recursive_cli.features.loop.reports import waiting_text
from recursive_cli.features.loop.wakeup import Wakeup
from recursive_cli.sinks.terminal import PlainTerminalSink, RichTerminalSink, _WaitText


def job(n: int, command: str) -> JobRecord:
    return JobRecord(id=f"job-{n}", command=command, output="", pgid=0, marker="", started=time.time())


def test_the_waiting_line_names_the_wakeup_and_the_jobs() -> None:
    wakeup = Wakeup(due=0.0, prompt="p", reason="check the build")
    text = waiting_text(wakeup, [job(1, "pytest -q"), job(2, "make bench")])
    assert text == ("waiting — waking up at 1970-01-01T00:00:00+00:00: check the build · "
                    "2 jobs running: job-1 (pytest -q), job-2 (make bench)")


def test_the_countdown_counts_down_in_whole_seconds() -> None:
    assert _WaitText("w", time.time() + 3725.2).__rich__() == "w · 1:02:06 left"
    assert _WaitText("w", time.time() + 0.3).__rich__() == "w · 0:00:01 left"
    assert _WaitText("w", time.time() - 5).__rich__() == "w · 0:00:00 left"
    assert _WaitText("w", None).__rich__() == "w · 0 s"


def test_sinks_show_a_wait_and_move_on() -> None:
    notice = LoopWaiting(wakeup_due=None, running_jobs=["job-1"], countdown_to=None,
                         shown="waiting — job-1")

    plain = io.StringIO()
    PlainTerminalSink(plain).emit(notice)
    assert plain.getvalue() == "waiting — job-1\n"
    rich = RichTerminalSink(io.StringIO())
    rich.emit(notice)
    rich.emit(TurnStarted(turn=2, prompt="next"))  # the next event ends the live line
