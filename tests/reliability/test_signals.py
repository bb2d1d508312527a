"""SIGKILL, SIGTERM and SIGINT at random moments of a run (seeded, bounded trials): each leaves a
session that `recursive sessions show` loads and `recursive resume` finishes. And a second
SIGINT that exits at once while the shutdown of the first is still waiting.

The runs that get signals are real processes; every signal goes out when a marker says the run
is where the case wants it (a tool result saved, a process waiting on a lock), not after a
sleep that a loaded machine can outrun. Loading and resuming the sessions afterwards needs no
process of its own and runs in this one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from clitools import alive, host_pid, invoke, wait_gone, wait_until

from recursive_cli.features.checkpoints.repo import shadow_folder

from .doctable import Row, check_row
from .harness import BASE_ENV, call, exit_text, inspect_session, scripted_args, start_agent

SEED = 20240611
TRIALS = 2  # per signal
STEPS = 16
STEP_SECONDS = 0.04  # a step: the model thinks 0.02 s, then its shell command runs 0.02 s
EXPECTED_EXIT = {signal.SIGKILL: -signal.SIGKILL, signal.SIGTERM: 143, signal.SIGINT: 130}
SEES = {signal.SIGKILL: "nothing: the process is gone"}


def steps_script(paced: bool = True) -> list[dict]:
    """The run's replies; `paced`: each step takes STEP_SECONDS, for a signal to land in (the
    resume that finishes the run needs no time to land in: the same steps, unpaced)."""
    pause = {"delay": 0.02} if paced else {}
    sleep = "sleep 0.02; " if paced else ""
    steps = [{**pause, "tool_calls": [call("run_shell", {"command": f"{sleep}echo step {i}"})]}
             for i in range(STEPS)]
    return [*steps, {"text": "finished"}]


def tool_results(transcript: Path) -> int:
    """How many tool results the transcript holds so far (a line being written is not counted)."""
    count = 0
    for line in transcript.read_bytes().splitlines() if transcript.exists() else []:
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            count += record["type"] == "message" and record["message"]["role"] == "tool"
    return count


@dataclass
class Trial:
    signum: signal.Signals
    after: int  # tool results saved before the signal
    jitter: float  # seconds from that marker to the signal
    code: int
    stderr: str

    @property
    def where(self) -> str:
        return f"{self.signum.name} {self.jitter:.3f} s after tool result {self.after}"


def signal_trial(tmp_path: Path, home: Path, name: str, signum: signal.Signals, after: int,
                 jitter: float) -> Trial:
    """Start a run and signal it `jitter` s after its `after`-th tool result is saved."""
    workspace = tmp_path / name
    workspace.mkdir()
    args = ["-C", str(workspace), *scripted_args(tmp_path / f"{name}.json", steps_script())]
    transcript = home / "sessions" / name / "transcript.jsonl"
    proc = start_agent("run", "work through the steps", *args, "--session-id", name,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_until(lambda: transcript.exists() and b'"turn_start"' in transcript.read_bytes()
               and tool_results(transcript) >= after, proc=proc)
    time.sleep(jitter)  # anywhere in the next step: the model's wait or the tool's run
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    return Trial(signum, after, jitter, proc.returncode, stderr)


def check_trial(tmp_path: Path, home: Path, name: str, trial: Trial) -> str:
    """Check what the signal left, resume the run and check that; returns the status it left."""
    where = trial.where
    assert trial.code == EXPECTED_EXIT[trial.signum], (where, trial.stderr)
    assert "Traceback" not in trial.stderr, (where, trial.stderr)
    if trial.signum != signal.SIGKILL:
        assert [line for line in trial.stderr.splitlines() if line.startswith("error:")] == \
            ["error: interrupted"], (where, trial.stderr)
    status = inspect_session(home, name).status  # `sessions show` loads what the signal left
    args = ["-C", str(tmp_path / name), *scripted_args(tmp_path / f"{name}-resume.json", steps_script(paced=False))]
    resumed = invoke("resume", name, *args, env=BASE_ENV)
    session = inspect_session(home, name)
    assert resumed.returncode == 0 and resumed.stdout == "finished\n", (where, resumed.stderr)
    assert session.status == "completed", where
    assert session.unanswered_calls() == [], where
    if trial.signum != signal.SIGKILL:  # (a torn line from kill -9 is reported on every load)
        assert session.warnings == [], (where, session.warnings)
    calls = sum(len(m.tool_calls) for m in session.messages)
    assert max(1, trial.after) <= calls <= STEPS, where  # replies replayed are not doubled
    return status


def test_signals_at_random_points(tmp_path: Path, isolated_home: Path) -> None:
    rng = random.Random(SEED)
    # after 0 to STEPS - 3 results, so at least two steps are left to land in
    plan = [(f"{sig.name.lower()}-{i}", sig, rng.randrange(STEPS - 2), rng.uniform(0.0, STEP_SECONDS))
            for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT) for i in range(TRIALS)]
    by_signal: dict[signal.Signals, list[tuple[Trial, str]]] = {}
    with ThreadPoolExecutor(max_workers=3) as pool:  # the signalled runs, in parallel: they wait, mostly
        trials = pool.map(lambda p: signal_trial(tmp_path, isolated_home, *p), plan)
        for (name, *_), trial in zip(plan, trials):  # each is checked here while later ones run
            status = check_trial(tmp_path, isolated_home, name, trial)
            by_signal.setdefault(trial.signum, []).append((trial, status))
    for signum, group in by_signal.items():
        statuses = {status for _, status in group}
        assert len(statuses) == 1, (signum.name, statuses)
        sees = SEES.get(signum, "error: interrupted")
        check_row(Row(signum.name.lower(), (sees,), exit_text(group[0][0].code),
                      f"`{statuses.pop()}`; `sessions show` loads it; `resume` finishes the run "
                      f"(exit 0) with every tool call answered — {len(group)} of {TRIALS} trials"))


@contextlib.contextmanager
def index_held_by_another_run(home: Path, workspace: Path) -> Iterator[None]:
    """Hold the workspace's checkpoint index as a second run snapshotting it would: a snapshot
    of ours then waits (`ShadowGit.index_locked`)."""
    mutex = shadow_folder(home, workspace) / "index.mutex"
    fd = os.open(mutex, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def waiting_for_a_lock(pid: int) -> bool:
    """Whether process `pid` is blocked waiting for a file lock (a `->` line of /proc/locks)."""
    waiters = [line.split() for line in Path("/proc/locks").read_text().splitlines() if " -> " in line]
    return any(fields[5:6] == [str(pid)] for fields in waiters)  # "1: -> FLOCK ADVISORY WRITE PID …"


def test_a_second_sigint_exits_at_once(tmp_path: Path, isolated_home: Path) -> None:
    # The first SIGINT kills the tool's processes at once, but the shutdown after it can still
    # wait: here its after-turn checkpoint waits for an index that another run holds. A second
    # SIGINT must not wait for it. With that second SIGINT ignored this run would sit until the
    # lock is let go (5 s below), end `interrupted` and say `error: interrupted`: all asserted.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # The tool is a shell and a child in its process group: the whole group must go.
    command = call("run_shell", {"command": "sleep 31.5 & echo $! > child.pid; echo $$ > tool.pid; wait"})
    script: list[dict] = [{"tool_calls": [command]}, {"text": "finished"}]
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", script)]
    proc = start_agent("run", "wait", *args, "--session-id", "twice", "-o", "stream-json",
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tool_pid = workspace / "tool.pid"
    wait_until(lambda: tool_pid.exists() and tool_pid.read_text().strip() != "", proc=proc)
    tool, child = host_pid(tool_pid), host_pid(workspace / "child.pid")
    assert alive(tool) and alive(child)
    with index_held_by_another_run(isolated_home, workspace):
        proc.send_signal(signal.SIGINT)
        wait_until(lambda: waiting_for_a_lock(proc.pid), proc=proc)  # the shutdown is stuck
        assert not alive(tool) and not alive(child), "the first SIGINT left the tool's processes running"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        elapsed = time.monotonic() - sent
    _, stderr = proc.communicate(timeout=10)
    assert elapsed < 2, f"the second SIGINT waited {elapsed:.1f} s for the shutdown"
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert "interrupted twice: exiting now" in stderr and "error: interrupted" not in stderr, stderr
    assert wait_gone(tool) and wait_gone(child)
    assert inspect_session(isolated_home, "twice").status == "running"  # no time to record more
    resumed = invoke("resume", "twice", *args, env=BASE_ENV)
    session = inspect_session(isolated_home, "twice")
    assert resumed.returncode == 0 and resumed.stdout == "finished\n", resumed.stderr
    assert session.unanswered_calls() == []
    check_row(Row("sigint-twice", ("interrupted twice: exiting now",), "130",
                  "`running`: the exit did not wait for the shutdown; `sessions show` loads it; "
                  "`resume` answers the cut-off call and finishes (exit 0)"))
