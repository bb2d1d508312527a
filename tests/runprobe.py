"""One real `recursive run` of a single model call, in a fresh interpreter, and what it loaded.

Several test modules check what a real run imports (no SDK: tests/providers/test_own_client.py;
no `importlib.metadata` and no other command's definitions: tests/test_startup_rss.py; no loop
feature with checkpoints on: tests/test_startup_pass2.py). Each such run is a fresh
interpreter (this one has imported everything already) and costs about half a second of CPU;
the checks read the same run, so `observed_run` makes one per provider and streaming mode for
the whole test session, and its users carry `ONE_WORKER` so that under pytest-xdist one worker
runs them all. The observation is read-only (frozen), so no test can change what another sees.

    run = observed_run("openai", stream=True, tmp_path_factory=tmp_path_factory)
    assert run.returncode == 0 and "recursive_cli.net.http1" in run.modules
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from fakeserver import FakeLLMServer

ANSWER = "all done"
ONE_WORKER = pytest.mark.xdist_group("one-step-run")

# `python -m recursive_cli ARGS` (runpy, as -m does), reporting at exit what the process loaded.
PROBE = """
import atexit, json, runpy, sys

def report():
    modules = sorted(sys.modules)  # (before this report imports anything itself)
    import httpx2, httpcore2
    metadata = sys.modules.get("importlib.metadata")
    seen = {"modules": modules, "httpx2": httpx2.__version__, "httpcore2": httpcore2.__version__,
            "metadata": type(metadata).__name__ if metadata is not None else None}
    sys.__stderr__.write("OBSERVED " + json.dumps(seen) + "\\n")

atexit.register(report)  # (the CLI ends the process with the atexit handlers run)
sys.argv = ["recursive", *json.loads(sys.argv[1])]
runpy.run_module("recursive_cli", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class ObservedRun:
    """A finished one-step run: what the user saw, what the server got, what was imported."""

    returncode: int
    stdout: str
    stderr: str
    requests: int  # model requests the server received
    modules: frozenset[str]  # every module loaded when the process ended
    versions: tuple[tuple[str, str], ...]  # httpx2's and httpcore2's __version__, as the run saw them
    metadata: str | None  # the type of sys.modules["importlib.metadata"], if it was loaded


_runs: dict[tuple[str, bool], ObservedRun] = {}


def observed_run(provider: str, stream: bool, tmp_path_factory: pytest.TempPathFactory) -> ObservedRun:
    """`recursive run "say done" -C WS --provider PROVIDER --api-base LOOPBACK -m fake-model`
    (with `--no-stream` unless `stream`) against a fake server answering "all done", in an
    empty workspace and home of its own (checkpoints on, as by default); made once per session."""
    key = (provider, stream)
    if key not in _runs:
        root = tmp_path_factory.mktemp(f"run-{provider}-{'stream' if stream else 'whole'}")
        workspace = root / "ws"
        workspace.mkdir()
        env = {name: value for name, value in os.environ.items() if not name.startswith("RECURSIVE_")}
        env.update(RECURSIVE_HOME=str(root / "home"), RECURSIVE_API_KEY="sk-test")
        with FakeLLMServer([{"text": ANSWER}]) as server:
            base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
            args = ["run", "say done", "-C", str(workspace), "--provider", provider, "--api-base", base,
                    "-m", "fake-model", *([] if stream else ["--no-stream"])]
            proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True,
                                  text=True, timeout=120, stdin=subprocess.DEVNULL, env=env, check=False)
            requests = len(server.requests)
        lines = [line for line in proc.stderr.splitlines() if line.startswith("OBSERVED ")]
        assert len(lines) == 1, proc.stderr[-3000:]
        seen: dict[str, Any] = json.loads(lines[0].removeprefix("OBSERVED "))
        _runs[key] = ObservedRun(proc.returncode, proc.stdout, proc.stderr, requests, frozenset(seen["modules"]),
                                 (("httpx2", seen["httpx2"]), ("httpcore2", seen["httpcore2"])), seen["metadata"])
    return _runs[key]
