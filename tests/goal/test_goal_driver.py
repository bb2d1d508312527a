"""The goal driver as a library (`AgentRuntime.run_goal_loop` and friends) and its parts."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from recursive_cli import AgentRuntime, FinishReason, Settings
from recursive_cli.core.events import Notice
from recursive_cli.core.values import parse
from recursive_cli.drivers.checks import OUTPUT_TAIL_BYTES, run_check
from recursive_cli.drivers.fingerprint import workspace_fingerprint
from recursive_cli.drivers.goal import GoalEvaluated, feedback_prompt
from recursive_cli.drivers.goal_state import Evaluation, GoalState
from recursive_cli.providers.scripted import ScriptedProvider

from .goaltools import say, verdict, write


class Collect:
    def __init__(self) -> None:
        self.events: list = []

    def emit(self, event: object) -> None:
        self.events.append(event)


def _runtime(workspace: Path, replies: list[dict]) -> tuple[AgentRuntime, Collect]:
    sink = Collect()
    runtime = (AgentRuntime.builder().settings(Settings(workspace=workspace)).mode("goal")
               .provider(ScriptedProvider(replies)).sink(sink).build())
    return runtime, sink


def test_set_goal_then_run_goal_loop(workspace: Path) -> None:
    runtime, sink = _runtime(workspace, [write("x"), say("made x"), verdict(True, "x is there")])
    runtime.set_goal("x exists", max_turns=3, checks=["test -f x"])
    goal = runtime.current_goal()
    assert goal is not None and goal.until == "x exists" and goal.max_turns == 3 and goal.turns == 0
    outcome = asyncio.run(runtime.run_goal_loop("make x"))
    assert outcome.finish_reason is FinishReason.COMPLETED and outcome.text == "made x"
    done = runtime.current_goal()
    assert done is not None and done.status == "met" and done.turns == 1 and done.checks == ["test -f x"]
    (notice,) = [e for e in sink.events if isinstance(e, Notice)]
    assert isinstance(notice, GoalEvaluated) and notice.recorded and notice.achieved is True
    assert runtime.goal_summary is not None and runtime.goal_summary.status == "met"

    runtime.clear_goal()
    assert runtime.current_goal() is None and "goal" not in runtime.state


def test_run_goal_loop_needs_a_condition_or_a_check(workspace: Path) -> None:
    runtime, _ = _runtime(workspace, [])
    with pytest.raises(ValueError):
        asyncio.run(runtime.run_goal_loop("anything"))


def test_goal_state_is_saved_through_the_state_saver(workspace: Path) -> None:
    runtime, _ = _runtime(workspace, [say("no"), say("still no")])
    saved: list[dict] = []
    runtime.set_state_saver(lambda state: saved.append(state))
    outcome = asyncio.run(runtime.run_goal_loop("x", checks=["false"], max_turns=2))
    assert outcome.finish_reason is FinishReason.GOAL_NOT_MET
    last = parse(GoalState, saved[-1]["goal"])
    assert last.status == "not_met" and last.turns == 2 and last.evaluated == 2
    assert [v.turn for v in last.verdicts] == [1, 2]
    assert last.next_prompt.startswith("The goal is not met yet (after turn 2 of 2)")


def test_fingerprint_sees_created_changed_and_deleted_files(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("a")
    base = workspace_fingerprint(workspace)
    assert workspace_fingerprint(workspace) == base
    (workspace / "src" / "a.py").write_text("ab")
    changed = workspace_fingerprint(workspace)
    assert changed != base
    (workspace / "src" / "b.py").write_text("")
    created = workspace_fingerprint(workspace)
    assert created != changed
    (workspace / "src" / "b.py").unlink()
    assert workspace_fingerprint(workspace) != created


def test_fingerprint_ignores_git_and_stops_at_its_cap(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    base = workspace_fingerprint(workspace)
    (workspace / ".git" / "scratch").write_text("x")
    assert workspace_fingerprint(workspace) == base
    for i in range(10):
        (workspace / f"f{i}").write_text("")
    capped = workspace_fingerprint(workspace, max_entries=3)
    (workspace / "f9").write_text("beyond the cap")
    assert workspace_fingerprint(workspace, max_entries=3) == capped


def test_check_keeps_the_tail_of_long_output(workspace: Path) -> None:
    runtime, _ = _runtime(workspace, [])
    command = "for i in $(seq 1 5000); do echo line $i; done; exit 3"
    result = asyncio.run(run_check(command, runtime.tool_context, timeout=30))
    assert result.exit_code == 3 and not result.passed and not result.timed_out
    assert result.output_tail.endswith("line 5000")
    assert "earlier bytes left out" in result.output_tail.splitlines()[0]
    assert len(result.output_tail.encode()) < OUTPUT_TAIL_BYTES + 100


def test_check_runs_in_the_workspace_without_api_keys(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    runtime, _ = _runtime(workspace, [])
    result = asyncio.run(run_check('pwd; echo "key=${OPENAI_API_KEY:-none}"', runtime.tool_context, 30))
    assert result.passed
    assert result.output_tail.splitlines() == [os.path.realpath(workspace), "key=none"]


def test_feedback_prompt_fences_output_and_warns_about_stalling() -> None:
    from recursive_cli.drivers.checks import CheckResult

    state = GoalState(prompt="p", until="it works", checks=["make test"], max_turns=5, turns=2, stalled=1)
    failing = CheckResult(command="make test", exit_code=2, output_tail="```\nboom")
    prompt = feedback_prompt(state, Evaluation(turn=2, achieved=False, checks=[failing]))
    assert prompt.startswith("The goal is not met yet (after turn 2 of 5). Keep working until this "
                             "condition holds: it works and these checks pass (exit 0): `make test`.")
    assert "Check `make test` failed: exit 2. End of its output:\n````\n```\nboom\n````" in prompt
    assert "Your last 1 turn(s) made no tool call and changed no file" in prompt
