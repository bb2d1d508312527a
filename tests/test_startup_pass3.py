"""Issue 16, start-up third pass: what our own modules cost a one-step run to load.

A headless session gets its garbage collector back after start-up (`errors.pause_for_startup`);
no model a run builds has pydantic parse a builtin's signature (which compiles the tokenizer's
pattern); and the value classes of the run path behave as their dataclasses did. (Which and
how many modules a command loads: tests/test_startup_budget.py.)
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer

from recursive_cli.core.budget import Limits, Spent
from recursive_cli.core.events import FinishReason
from recursive_cli.core.kernel import TurnOutcome
from recursive_cli.core.messages import Usage
from recursive_cli.core.settings import LoadedSettings, Settings
from recursive_cli.core.tool import ProcessTracker, ToolResult
from recursive_cli.features.checkpoints.checkpointer import Snapshot
from recursive_cli.features.checkpoints.git import ShadowGit
from recursive_cli.features.checkpoints.scan import Skipped

# `python -m recursive_cli ARGS` (runpy, as -m does), reporting at exit whether the process
# collects garbage and whether tokenize compiled its pattern.
PROBE = """
import atexit, gc, json, runpy, sys

def report():
    tokenize = sys.modules.get("tokenize")
    seen = {"enabled": gc.isenabled(),
            "tokenizer_compiled": tokenize._compile.cache_info().currsize if tokenize else 0}
    sys.__stderr__.write("OBSERVED " + json.dumps(seen) + "\\n")

atexit.register(report)
sys.argv = ["recursive", *json.loads(sys.argv[1])]
runpy.run_module("recursive_cli", run_name="__main__", alter_sys=True)
"""


def observe(args: list[str], root: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`recursive ARGS` in a fresh interpreter against a fake server answering "all done"."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("RECURSIVE_")}
    env.update(RECURSIVE_HOME=str(root / "home"), RECURSIVE_API_KEY="sk-test")
    workspace = root / "ws"
    workspace.mkdir()
    with FakeLLMServer([{"text": "all done"}]) as server:
        argv = [*args, "-C", str(workspace), "--provider", "openai", "--api-base", server.openai_base_url,
                "-m", "fake-model"]
        proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, env=env, check=False)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("OBSERVED ")]
    assert len(lines) == 1, proc.stderr[-3000:]
    return proc, json.loads(lines[0].removeprefix("OBSERVED "))


@pytest.fixture(scope="module")
def one_step_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One `recursive run "say done"` (checkpoints on, as by default), observed by `PROBE`."""
    return observe(["run", "say done"], tmp_path_factory.mktemp("pass3-run"))


def test_a_headless_session_keeps_its_garbage_collector(tmp_path: Path) -> None:
    proc, seen = observe(["-p", "say done"], tmp_path)
    assert proc.returncode == 0 and proc.stdout == "all done\n", proc.stderr
    assert seen["enabled"]


def test_no_model_of_a_run_has_pydantic_tokenize_a_signature(
        one_step_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    # `Field(default_factory=list)` has pydantic read `list`'s text signature with the
    # tokenizer, whose pattern alone takes milliseconds to compile; `= []` is copied per model
    _, seen = one_step_run
    assert seen["tokenizer_compiled"] == 0


def test_the_value_classes_keep_the_behaviour_callers_rely_on() -> None:
    limits = Limits(max_steps=3)
    assert repr(limits) == "Limits(max_steps=3, max_cost=None, max_duration=None, max_messages=50000)"
    assert limits == Limits(3) and limits != Limits(4) and limits != (3, None, None, 50000)
    assert hash(limits) == hash(Limits(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_steps = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):  # (FrozenInstanceError is one, as before)
        del limits.max_cost  # type: ignore[misc]
    git = ShadowGit("git", Path("/r/repo"), Path("/w"), Path("/r/index"))
    assert {git: 1}[ShadowGit("git", Path("/r/repo"), Path("/w"), Path("/r/index"))] == 1

    outcome = TurnOutcome(FinishReason.COMPLETED, text="ok")
    outcome.steps += 1  # not frozen
    with pytest.raises(TypeError):
        hash(outcome)  # compared by value and mutable: no hash
    assert replace(outcome, detail="why") == TurnOutcome(FinishReason.COMPLETED, text="ok", steps=1, detail="why")
    assert Spent().usage == Usage() and Spent().usage is not Spent().usage  # a default made for each

    snapshot = Snapshot("c1", "t1", 2, (Skipped("big.bin", "too large"),))
    for copied in (pickle.loads(pickle.dumps(snapshot)), copy.copy(snapshot), copy.deepcopy(snapshot)):
        assert copied == snapshot and type(copied) is Snapshot
    assert copy.deepcopy(snapshot).skipped is not snapshot.skipped
    assert ToolResult("x", is_error=True) == ToolResult("x", True, "")

    # fields a dataclass kept out of its repr are still kept out
    assert "env=" not in repr(LoadedSettings(Settings(), env={"SECRET": "1"}))
    assert repr(ProcessTracker(run_marker="m")) == "ProcessTracker(groups=set(), run_marker='m')"
