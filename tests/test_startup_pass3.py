"""Issue 16, start-up third pass: what our own modules cost a one-step run to load.

A `run` without hooks or a session to resume imports neither the hook engine nor the session
reader; the CLI's process collects no garbage while its modules load (`errors.pause_for_startup`),
and a headless session still gets its collector back; no model a run builds has pydantic parse
a builtin's signature (which compiles the tokenizer's pattern); and the value classes of the
run path are slotted classes (`core/slotted.py`), not dataclasses compiled at import, that
behave as their dataclasses did.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import runprobe
from fakeserver import FakeLLMServer

from recursive_cli.core.budget import Limits, Spent
from recursive_cli.core.events import FinishReason
from recursive_cli.core.kernel import TurnOutcome
from recursive_cli.core.messages import Usage
from recursive_cli.core.settings import LoadedSettings, Settings
from recursive_cli.core.slotted import replace
from recursive_cli.core.tool import ProcessTracker, ToolResult
from recursive_cli.features.checkpoints.checkpointer import Snapshot
from recursive_cli.features.checkpoints.git import ShadowGit
from recursive_cli.features.checkpoints.scan import Skipped

# `python -m recursive_cli ARGS` (runpy, as -m does), reporting at exit what start-up did: at
# each garbage collection from the import of typer on, whether the runtime was built by then
# (launch.py and the façade loaded); whether tokenize compiled its pattern; our dataclasses.
PROBE = """
import atexit, gc, json, runpy, sys

collections = []  # once typer is loading (the CLI's first import): whether the runtime is built by then
gc.callbacks.append(lambda phase, info: phase == "start" and "typer" in sys.modules
                    and collections.append({"recursive_cli.launch.run", "recursive_cli.agent"}
                                           <= sys.modules.keys()))

def report():
    tokenize = sys.modules.get("tokenize")
    ours = [module for name, module in list(sys.modules.items()) if name.startswith("recursive_cli.")]
    classes = sorted(f"{value.__module__}.{value.__qualname__}" for module in ours
                     for value in list(vars(module).values())
                     if isinstance(value, type) and value.__module__ == module.__name__
                     and "__dataclass_fields__" in value.__dict__)  # (decorated, not only inheriting)
    seen = {"collections": collections, "enabled": gc.isenabled(), "dataclasses": classes,
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


@runprobe.ONE_WORKER  # (the run is shared with test_startup_rss.py, test_startup_pass2.py, …)
def test_a_run_without_hooks_or_a_resume_loads_neither_the_hook_engine_nor_the_session_reader(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    run = runprobe.observed_run("openai", True, tmp_path_factory)
    assert run.returncode == 0 and run.stdout == f"{runprobe.ANSWER}\n", run.stderr
    assert "recursive_cli.features.hooks.config" in run.modules  # the settings files were read for hooks
    assert not run.modules & {"recursive_cli.features.hooks.engine", "recursive_cli.features.hooks.runner",
                              "recursive_cli.tools.claude_names", "recursive_cli.features.sessions.reader",
                              "recursive_cli.features.sessions.resume", "recursive_cli.launch.sessions",
                              "pprint"}


def test_the_cli_collects_no_garbage_until_its_runtime_is_built(
        one_step_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    proc, seen = one_step_run
    assert proc.returncode == 0 and proc.stdout == "all done\n", proc.stderr
    assert all(seen["collections"]), seen["collections"]  # none while typer, pydantic and ours loaded
    assert seen["enabled"]  # and it collects again for the rest of the run


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


def test_a_runs_value_classes_are_compiled_with_its_modules_not_written_at_import(
        one_step_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    _, seen = one_step_run
    # ModelPrice stays one: Settings has pydantic validate `[prices]` tables into it. (providers/
    # is another pass's.)
    assert [name for name in seen["dataclasses"] if not name.startswith("recursive_cli.providers.")] == [
        "recursive_cli.core.pricing.ModelPrice"]


def test_the_slotted_classes_behave_as_their_dataclasses_did() -> None:
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

    snapshot = Snapshot("c1", "t1", 2, [Skipped("big.bin", "too large")])
    for copied in (pickle.loads(pickle.dumps(snapshot)), copy.copy(snapshot), copy.deepcopy(snapshot)):
        assert copied == snapshot and type(copied) is Snapshot
    assert copy.deepcopy(snapshot).skipped is not snapshot.skipped
    assert ToolResult("x", is_error=True) == ToolResult("x", True, "")

    # fields a dataclass kept out of its repr are still kept out
    assert "env=" not in repr(LoadedSettings(Settings(), env={"SECRET": "1"}))
    assert repr(ProcessTracker(run_marker="m")) == "ProcessTracker(groups=set(), run_marker='m')"


def test_version_loads_no_other_command_and_no_pydantic() -> None:
    """`recursive --version` answers from the root alone: none of the lazy commands' modules
    (hooks, mcp, loop… — hooks pulled in settings, pricing and pydantic: 0.22 s → 0.08 s)."""
    probe = ("import runpy, sys\n"
             "sys.argv = ['recursive', '--version']\n"
             "try:\n"
             "    runpy.run_module('recursive_cli', run_name='__main__', alter_sys=True)\n"
             "except SystemExit:\n"
             "    pass\n"
             "sys.__stderr__.write(' '.join(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.stdout.startswith("recursive ") and proc.stdout.count("\n") == 1, proc.stdout + proc.stderr
    loaded = set(proc.stderr.split())
    from recursive_cli.surfaces.cli.app import LAZY_COMMANDS
    assert not loaded & set(LAZY_COMMANDS.values())
    assert "pydantic" not in loaded and "recursive_cli.surfaces.cli.config_cmd" not in loaded
