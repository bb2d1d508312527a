"""SIGKILL, SIGTERM and SIGINT at random moments of a run (seeded, bounded trials): each leaves a
session that `recursive sessions show` loads and `recursive resume` finishes."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .doctable import Row, check_row
from .harness import (SessionView, agent, call, exit_text, inspect_session, scripted_args,
                      start_agent, wait_for)

SEED = 20240611
TRIALS = 2  # per signal
STEPS = 16  # about 0.06 s each: a run lasts a second or more, even on a fast machine
LATEST_SIGNAL = 0.5  # seconds after the first turn starts
EXPECTED_EXIT = {signal.SIGKILL: -signal.SIGKILL, signal.SIGTERM: 143, signal.SIGINT: 130}
SEES = {signal.SIGKILL: "nothing: the process is gone"}


def steps_script() -> list[dict]:
    steps = [{"delay": 0.03, "tool_calls": [call("run_shell", {"command": f"sleep 0.03; echo step {i}"})]}
             for i in range(STEPS)]
    return [*steps, {"text": "finished"}]


@dataclass
class Trial:
    signum: signal.Signals
    delay: float
    code: int
    stderr: str
    status: str  # the session's status right after the signal
    resume_code: int
    resume_stdout: str
    session: SessionView


def run_trial(tmp_path: Path, home: Path, name: str, signum: signal.Signals, delay: float) -> Trial:
    """Start a run, signal it `delay` s after its first turn starts, then load and resume it."""
    workspace = tmp_path / name
    workspace.mkdir()
    args = ["-C", str(workspace), *scripted_args(tmp_path / f"{name}.json", steps_script())]
    transcript = home / "sessions" / name / "transcript.jsonl"
    proc = start_agent("run", "work through the steps", *args, "--session-id", name,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: transcript.exists() and b'"turn_start"' in transcript.read_bytes())
    time.sleep(delay)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    status = inspect_session(home, name).status  # `sessions show` loads what the signal left
    resumed = agent("resume", name, *args)
    return Trial(signum, delay, proc.returncode, stderr, status, resumed.code, resumed.stdout,
                 inspect_session(home, name))


def test_signals_at_random_points(tmp_path: Path, isolated_home: Path) -> None:
    rng = random.Random(SEED)
    plan = [(f"{sig.name.lower()}-{i}", sig, rng.uniform(0.0, LATEST_SIGNAL))
            for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT) for i in range(TRIALS)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        trials = list(pool.map(lambda p: run_trial(tmp_path, isolated_home, *p), plan))
    by_signal: dict[signal.Signals, list[Trial]] = {}
    for trial in trials:
        where = f"{trial.signum.name} after {trial.delay:.2f} s"
        assert trial.code == EXPECTED_EXIT[trial.signum], (where, trial.stderr)
        assert "Traceback" not in trial.stderr, (where, trial.stderr)
        if trial.signum != signal.SIGKILL:
            assert [line for line in trial.stderr.splitlines() if line.startswith("error:")] == \
                ["error: interrupted"], (where, trial.stderr)
        assert trial.resume_code == 0 and trial.resume_stdout == "finished\n", where
        assert trial.session.status == "completed", where
        assert trial.session.unanswered_calls() == [], where
        if trial.signum != signal.SIGKILL:  # (a torn line from kill -9 is reported on every load)
            assert trial.session.warnings == [], (where, trial.session.warnings)
        calls = sum(len(m.tool_calls) for m in trial.session.messages)
        assert 1 <= calls <= STEPS, where  # replies replayed after a crash are not doubled
        by_signal.setdefault(trial.signum, []).append(trial)
    for signum, group in by_signal.items():
        statuses = {trial.status for trial in group}
        assert len(statuses) == 1, (signum.name, statuses)
        sees = SEES.get(signum, "error: interrupted")
        check_row(Row(signum.name.lower(), (sees,), exit_text(group[0].code),
                      f"`{statuses.pop()}`; `sessions show` loads it; `resume` finishes the run "
                      f"(exit 0) with every tool call answered — {len(group)} of {TRIALS} trials"))


def test_a_second_sigint_exits_at_once(tmp_path: Path, isolated_home: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [{"tool_calls": [call("run_shell", {"command": "sleep 31.5"})]}, {"text": "finished"}]
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", script)]
    proc = start_agent("run", "wait", *args, "--session-id", "twice", "-o", "stream-json",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"tool_use"' in line:
            break
    time.sleep(0.2)
    sent = time.monotonic()
    while proc.poll() is None and time.monotonic() - sent < 5:  # Ctrl-C, Ctrl-C, Ctrl-C…
        proc.send_signal(signal.SIGINT)
        time.sleep(0.01)
    _, stderr = proc.communicate(timeout=10)
    # 130, or killed by SIGINT itself when a last one lands while the interpreter shuts down
    # (its handlers are gone by then): a shell reports both as $? = 130.
    assert proc.returncode in (130, -signal.SIGINT) and time.monotonic() - sent < 5, stderr
    assert "Traceback" not in stderr, stderr
    # The second signal either cut the shutdown short or found it already done: both are fine.
    at_once = "interrupted twice: exiting now" in stderr
    assert at_once or "error: interrupted" in stderr, stderr
    status = inspect_session(isolated_home, "twice").status
    assert status == ("running" if at_once else "interrupted")
    still_running = subprocess.run(["pgrep", "-f", "sleep 31.5"], capture_output=True)
    assert still_running.returncode == 1, "the shell command outlived the run"
    shown = agent("sessions", "show", "twice")
    resumed = agent("resume", "twice", *args)
    session = inspect_session(isolated_home, "twice")
    assert shown.code == 0 and resumed.code == 0 and resumed.stdout == "finished\n", resumed.stderr
    assert session.unanswered_calls() == []
    check_row(Row("sigint-twice", ("interrupted twice: exiting now (or `error: interrupted` when the "
                                   "first signal had already finished the shutdown)",),
                  "130 (as `$?`)", "`running` after the exit at once (else `interrupted`); "
                  "`sessions show` loads it; `resume` answers the cut-off call and finishes (exit 0)"))
