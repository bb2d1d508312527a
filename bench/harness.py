"""Shared pieces of the bench scripts: the instant server as a process, timed children, tables."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
PYTHON = sys.executable
RECURSIVE = str(Path(PYTHON).with_name("recursive"))


@dataclass
class ChildRun:
    """One finished child process: wall seconds, CPU seconds (user+sys, its children included), peak RSS;
    `started`: its perf_counter start, on the clock the instant server stamps requests with."""

    wall: float
    cpu: float
    maxrss_mb: float
    returncode: int
    started: float = 0.0


def run_child(argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None) -> ChildRun:
    """Run `argv` with output discarded; time it and read its rusage with `wait4`."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
    return ChildRun(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, started)


class ServerProcess:
    """`instant_server.py` in its own process, so its CPU is not charged to the client.

    `tool`, `arguments`, `final_arguments`: what each step's reply calls (see instant_server.py).
    """

    def __init__(self, steps: int, tool: str = "run_shell", arguments: dict[str, Any] | None = None,
                 final_arguments: dict[str, Any] | None = None) -> None:
        argv = [PYTHON, str(BENCH / "instant_server.py"), "--steps", str(steps), "--tool", tool]
        if arguments is not None:
            argv += ["--arguments", json.dumps(arguments)]
        if final_arguments is not None:
            argv += ["--final-arguments", json.dumps(final_arguments)]
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.port = int(self._proc.stdout.readline())

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (`…/v1`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """The Anthropic-style base URL (the SDK appends `/v1/messages`)."""
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}") as response:
            return bytes(response.read())

    def stats(self) -> dict[str, Any]:
        """`arrivals`: perf_counter seconds at which each chat request arrived; `sizes`: their bytes."""
        return dict(json.loads(self.get("/stats")))

    def arrivals(self) -> list[float]:
        return list(self.stats()["arrivals"])

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._proc.terminate()
        self._proc.wait()


# Byte-compiled modules are cached here, beside no source file: a real install has its .pyc
# files, so a child must not pay for compiling (PYTHONDONTWRITEBYTECODE may be set around us).
# In the checkout's git-ignored build/ folder, not a shared temp folder another user could fill.
PYCACHE = Path(__file__).resolve().parent.parent / "build" / "bench-pycache"


def child_env(**extra: str) -> dict[str, str]:
    """Our environment for a child under test, with its bytecode cached like a real install's."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(PYCACHE), **extra}


def agent_env(home: str) -> dict[str, str]:
    """The environment for a `recursive run` under test: a throwaway home, a dummy key."""
    return child_env(RECURSIVE_HOME=home, RECURSIVE_API_KEY="x")


# The model named on the openai rows: with another server than OpenAI's and no -m, recursive
# asks the server's /v1/models first (issue 32); the benchmarks name the model the run used to
# default to, so no row pays for that lookup and the figures stay comparable with earlier ones.
BENCH_MODEL = "gpt-4.1-mini"


def model_flag(provider: str) -> list[str]:
    """`-m BENCH_MODEL` for the openai provider; the anthropic provider's default model is used as it is."""
    return ["-m", BENCH_MODEL] if provider == "openai" else []


def agent_argv(base_url: str, max_steps: int, workspace: str, extra: Sequence[str] = ()) -> list[str]:
    """`recursive run` against the instant server."""
    return [RECURSIVE, "run", "--provider", "openai", "--api-base", base_url, "-m", BENCH_MODEL,
            "--max-steps", str(max_steps),
            "-C", workspace, *extra, "run true until told to stop"]


_scratch_root: list[str] = []


def scratch_dir(prefix: str) -> str:
    """A fresh temporary directory, removed with all the others when this process exits."""
    if not _scratch_root:
        _scratch_root.append(tempfile.mkdtemp(prefix="recursive-bench-"))
        atexit.register(shutil.rmtree, _scratch_root[0], ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{prefix}-", dir=_scratch_root[0])


def request_template(env: dict[str, str], workspace: str) -> Path:
    """The first request body of a real run, for the raw loop to replay."""
    with ServerProcess(1) as server:
        run_child(agent_argv(server.base_url, 10, workspace), env=env)
        body = json.loads(server.get("/first"))
    path = Path(scratch_dir("template")) / "first.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def step_intervals(arrivals: Sequence[float]) -> list[float]:
    """Seconds between consecutive requests: interval i is step i+1 (tool run + next request)."""
    return [b - a for a, b in zip(arrivals, arrivals[1:])]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain left-aligned text table; floats get 3 significant decimals."""
    cells = [[_cell(v) for v in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def write_json(path: str | None, results: Any) -> None:
    """Write `results` as JSON when a path was given."""
    if path:
        Path(path).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def machine() -> dict[str, str]:
    """Where and when the figures were taken: cores, CPU model, Python, date, git commit."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    commit = subprocess.run(["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {"nproc": str(os.cpu_count()), "cpu": cpu, "python": sys.version.split()[0],
            "date": time.strftime("%Y-%m-%d %H:%M %Z"), "commit": commit or "unknown"}
