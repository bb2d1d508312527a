"""The Harbor adapter (integrations/harbor) under Harbor's own trial runner, with no Docker.

Harbor (PyPI, Python 3.12: tests/harbortools.py) runs a whole trial of a tiny task
(tests/integrations/harbor_task): it sets the agent up (installs `recursive` from this checkout,
or finds it "in the image"), runs it on the task's instruction against the loopback fake model,
runs the task's verifier, and fills the agent's context from the ATIF trajectory. The task's
"container" is this machine under bubblewrap (harbor_local.py), Harbor's environment interface
implemented here; what a Docker environment adds (building the task's image) is not run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer
from harbortools import assert_valid_atif, run_harbor_python

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TASK = HERE / "harbor_task"
INSTRUCTION = (TASK / "instruction.md").read_text().strip()

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"),
                                reason="the local Harbor environment needs bubblewrap")

WRITE_HELLO = {"text": "Writing it.", "tool_calls": [
    {"name": "write_file", "arguments": {"path": "/app/hello.txt", "content": "hello harbor\n"}}]}


def _trial(tmp_path: Path, base_url: str, kwargs: dict[str, Any],
           env: dict[str, str] | None = None, agent: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one trial of the task with the recursive agent; Harbor's TrialResult as JSON."""
    config = {"task": {"path": str(TASK)}, "trials_dir": str(tmp_path / "trials"),
              "agent": {"import_path": "recursive_harbor:RecursiveAgent",
                        "model_name": "openai/fake-model",
                        "kwargs": {"api_base": base_url, **kwargs}, **(agent or {})},
              "environment": {"import_path": "harbor_local:LocalEnvironment", "type": None}}
    child = {**os.environ, "HARBOR_TELEMETRY": "0", "OPENAI_API_KEY": "sk-test",
             "PYTHONPATH": os.pathsep.join([str(ROOT / "integrations" / "harbor"), str(HERE)]),
             "PATH": _path_without_recursive(), **(env or {})}
    child.pop("RECURSIVE_HOME", None)  # (the agent keeps its home in the trial's logs)
    done = run_harbor_python(str(HERE / "harbor_trial.py"), json.dumps(config), env=child,
                             timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _path_without_recursive() -> str:
    """PATH without the folders that hold a `recursive` (this venv's): the trial must use the
    one the adapter installs."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and not (Path(f) / "recursive").exists())


def _image_with_recursive(tmp_path: Path) -> dict[str, str]:
    """PATH with a `recursive` of this checkout, as an image that has it baked in would."""
    folder = tmp_path / "image-bin"
    folder.mkdir()
    launcher = folder / "recursive"
    launcher.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m recursive_cli \"$@\"\n")
    launcher.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{_path_without_recursive()}"}


def _agent_dir(result: dict[str, Any]) -> Path:
    return Path(result["trial_uri"].removeprefix("file://")) / "agent"


def test_a_trial_installs_recursive_runs_the_task_and_reports_the_trajectory(tmp_path: Path) -> None:
    with FakeLLMServer([WRITE_HELLO, {"text": "Done: /app/hello.txt says hello harbor."}],
                       model="fake-model") as server:
        result = _trial(tmp_path, server.openai_base_url, {})
        requests = list(server.requests)
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_result"]["rewards"] == {"reward": 1.0}
    agent = result["agent_result"]
    assert (agent["n_input_tokens"], agent["n_output_tokens"], agent["n_cache_tokens"]) == (20, 10, 0)
    assert agent["cost_usd"] is None  # the fake model has no price: unknown, not 0
    assert agent["metadata"]["exit_code"] == 0
    assert agent["metadata"]["final_answer"] == "Done: /app/hello.txt says hello harbor."
    assert result["agent_info"]["name"] == "recursive" and result["agent_info"]["version"] == "0.1.0"
    first = requests[0].body
    assert first["model"] == "fake-model"
    assert [m["content"] for m in first["messages"] if m["role"] == "user"] == [INSTRUCTION]
    assert "write_file" in {tool["function"]["name"] for tool in first["tools"]}
    trajectory = _agent_dir(result) / "trajectory.json"
    assert_valid_atif(trajectory)
    steps = json.loads(trajectory.read_text())["steps"]
    assert [step["source"] for step in steps] == ["user", "agent", "agent"]
    assert steps[1]["tool_calls"][0]["arguments"]["path"] == "/app/hello.txt"


def test_a_goal_run_that_is_not_met_is_judged_by_the_verifier_not_failed(tmp_path: Path) -> None:
    """`mode=goal`: the judge says no, the turns run out (exit 4): the agent step still ends
    normally, the verifier scores the workspace, and the evaluation is in the trajectory."""
    with FakeLLMServer([{"text": "I could not do it."},
                        {"text": '{"achieved": false, "reason": "no /app/hello.txt"}'}],
                       model="fake-model") as server:
        result = _trial(tmp_path, server.openai_base_url,
                        {"mode": "goal", "max_turns": 1, "skip_install": True},
                        env=_image_with_recursive(tmp_path))
        judged = server.requests[-1].body
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_result"]["rewards"] == {"reward": 0.0}
    assert result["agent_result"]["metadata"]["exit_code"] == 4
    assert "tools" not in judged or not judged["tools"]  # the judge is asked without tools
    trajectory = _agent_dir(result) / "trajectory.json"
    assert_valid_atif(trajectory)
    goal = json.loads(trajectory.read_text())["steps"][-1]
    assert goal["source"] == "system" and goal["message"].startswith("goal not met after turn 1/1")
    assert goal["observation"]["results"][-1]["content"] == "no /app/hello.txt"


def test_the_model_name_names_the_provider_or_the_option_does() -> None:
    """`-m provider/model` as Harbor passes it; an explicit `--ak provider=openai` takes the whole
    name as the model (OpenRouter-style names); another prefix is refused with a way out."""
    script = """
from recursive_harbor.agent import split_model
print(split_model("anthropic/claude-sonnet-4-5", None), split_model("openai/gpt-5", None),
      split_model("gpt-5", None), split_model("qwen/qwen3-coder", "openai"),
      split_model("openai/gpt-5", "openai"))
try:
    split_model("qwen/qwen3-coder", None)
except ValueError as exc:
    print(exc)
"""
    done = run_harbor_python("-c", script, env={**os.environ, "PYTHONPATH": str(ROOT / "integrations" / "harbor")})
    assert done.returncode == 0, done.stderr[-3000:]
    first, refused = done.stdout.strip().splitlines()
    assert first == ("('anthropic', 'claude-sonnet-4-5') ('openai', 'gpt-5') ('openai', 'gpt-5') "
                     "('openai', 'qwen/qwen3-coder') ('openai', 'gpt-5')")
    assert "--ak provider=openai" in refused


def test_a_provider_error_fails_the_agent_step_and_still_leaves_the_trajectory(tmp_path: Path) -> None:
    """Exit 1 (the API refused the key) is an agent error for Harbor, classified from the stderr
    the run echoes; the session's trajectory is exported all the same."""
    refused = {"error": {"status": 401, "message": "Incorrect API key provided"}}
    with FakeLLMServer([refused], model="fake-model") as server:
        result = _trial(tmp_path, server.openai_base_url, {"skip_install": True},
                        env=_image_with_recursive(tmp_path))
    error = result["exception_info"]
    assert error is not None and error["exception_type"] == "AgentAuthenticationError", error
    assert "exit 1" in error["exception_message"]
    assert_valid_atif(_agent_dir(result) / "trajectory.json")
    assert (_agent_dir(result) / "recursive.exit").read_text().strip() == "1"


def test_a_run_cut_short_by_harbor_still_reports_its_trajectory(tmp_path: Path) -> None:
    """Harbor's agent timeout kills the run mid-turn, before it exports: the trajectory is
    exported on Harbor's side from the session in the agent's logs, so the steps done are kept."""
    with FakeLLMServer([WRITE_HELLO, {"text": "late", "delay": 20}], model="fake-model") as server:
        result = _trial(tmp_path, server.openai_base_url, {"skip_install": True},
                        env=_image_with_recursive(tmp_path), agent={"override_timeout_sec": 3})
    assert result["exception_info"]["exception_type"] == "AgentTimeoutError"
    trajectory = _agent_dir(result) / "trajectory.json"
    assert_valid_atif(trajectory)
    steps = json.loads(trajectory.read_text())["steps"]
    assert [step["source"] for step in steps] == ["user", "agent"]
    assert steps[1]["observation"]["results"][0]["source_call_id"] == steps[1]["tool_calls"][0]["tool_call_id"]
    assert result["agent_result"]["n_input_tokens"] == 10
