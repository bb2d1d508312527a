"""Command hooks (settings files, `--settings`) for `SubagentStart` and `SubagentStop`, as Claude
Code defines them: matched by the agent's type; SubagentStart's `additionalContext` joins the
subagent's prompt; a SubagentStop block keeps the subagent working with the reason (once: the
next is sent `stop_hook_active: true` and not obeyed). Through `recursive run` and `-p`; the
workspace's own hooks only once it is trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clitools import invoke, json_lines, run_cli
from fakeserver import FakeLLMServer
from hooks.hookkit import command, inputs, recorder, script, settings

from .test_run_agents import REVIEWER_MD, call, task

# A SubagentStop hook that logs its input to $1 and blocks (exit 2) while stop_hook_active is false.
BLOCK_ONCE = """#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(event) + "\\n")
if not event["stop_hook_active"]:
    print("Also look at b.py.", file=sys.stderr)
    sys.exit(2)
"""

REPLIES = [{"tool_calls": [task("call_t")]},
           {"text": "a.py is fine."},
           {"text": "b.py is fine too."},
           {"text": "The reviewer found nothing."}]


def _hooks(tmp_path: Path, matcher: str = "reviewer") -> tuple[dict[str, Any], Path, Path]:
    started, stopped = tmp_path / "start.jsonl", tmp_path / "stop.jsonl"
    stop = script(tmp_path / "hooks" / "block_once.py", BLOCK_ONCE)
    context = {"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "CONTEXT FROM HOOK"}}
    return ({"SubagentStart": [command(recorder(tmp_path, started, context), matcher),
                               command(recorder(tmp_path, tmp_path / "other.jsonl"), "other-agent")],
             "SubagentStop": [command(f"{stop} {stopped}", matcher)]}, started, stopped)


def _agents(workspace: Path) -> None:
    (workspace / ".claude" / "agents").mkdir(parents=True, exist_ok=True)
    (workspace / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER_MD, encoding="utf-8")


def _check(tmp_path: Path, result: Any, bodies: list[dict[str, Any]], started: Path, stopped: Path) -> None:
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert lines[-1]["result"] == "The reviewer found nothing."
    task_id = next(line["task_id"] for line in lines if line.get("subtype") == "task_started")
    (start,) = inputs(started)
    assert {key: start[key] for key in ("hook_event_name", "agent_id", "agent_type")} == {
        "hook_event_name": "SubagentStart", "agent_id": task_id, "agent_type": "reviewer"}
    assert not (tmp_path / "other.jsonl").exists()  # (its matcher names another agent type)
    assert bodies[1]["messages"][1]["content"] == "Review app.py.\n\nCONTEXT FROM HOOK"
    # The block kept the subagent going, its reason as its next user message...
    assert bodies[2]["messages"][-1] == {"role": "user", "content": "SubagentStop hook: Also look at b.py."}
    assert len(bodies) == 4
    # ...and the parent got the report it wrote after it.
    assert [m["content"] for m in bodies[3]["messages"] if m["role"] == "tool"] == ["b.py is fine too."]
    stops = inputs(stopped)
    assert [(s["hook_event_name"], s["agent_id"], s["agent_type"], s["stop_hook_active"],
             s["last_assistant_message"]) for s in stops] == [
        ("SubagentStop", task_id, "reviewer", False, "a.py is fine."),
        ("SubagentStop", task_id, "reviewer", True, "b.py is fine too.")]
    assert all(s["agent_transcript_path"] and s["session_id"] for s in stops)


def test_recursive_run_fires_subagent_start_and_stop_hooks(tmp_path: Path, workspace: Path) -> None:
    _agents(workspace)
    hooks, started, stopped = _hooks(tmp_path)
    with FakeLLMServer(REPLIES) as server:
        result = invoke("run", "review app.py", "-C", str(workspace), "--provider", "openai", "--api-base",
                        server.openai_base_url, "-m", "fake-model", "--no-checkpoints", "--trust-workspace",
                        "--settings", json.dumps({"hooks": hooks}), "-o", "stream-json")
        bodies = [r.body for r in server.requests]

    _check(tmp_path, result, bodies, started, stopped)


def test_headless_p_fires_them_too(tmp_path: Path, workspace: Path) -> None:
    _agents(workspace)
    hooks, started, stopped = _hooks(tmp_path)
    given = settings(tmp_path / "given.json", hooks)
    with FakeLLMServer(REPLIES) as server:
        result = run_cli("-p", "review app.py", "-C", str(workspace), "--provider", "openai", "--api-base",
                        server.openai_base_url, "-m", "fake-model", "--no-checkpoints", "--settings", str(given),
                        "--agents", json.dumps({"reviewer": {"description": "Reviews code",
                                                             "prompt": "You are REVIEWER."}}),
                        "--output-format", "stream-json", "--verbose", input="")
        bodies = [r.body for r in server.requests]

    _check(tmp_path, result, bodies, started, stopped)


def test_the_workspaces_own_subagent_hooks_wait_for_trust(tmp_path: Path, workspace: Path) -> None:
    _agents(workspace)
    log = tmp_path / "start.jsonl"
    settings(workspace / ".claude" / "settings.json", {"SubagentStart": [command(recorder(tmp_path, log))]})
    agents = json.dumps({"reviewer": {"description": "Reviews code", "prompt": "You are REVIEWER."}})

    def review(*flags: str) -> None:
        replies = [{"tool_calls": [call("task", "call_t", description="review", prompt="Review.",
                                        subagent_type="reviewer")]}, {"text": "fine"}, {"text": "done"}]
        with FakeLLMServer(replies) as server:
            result = invoke("run", "review", "-C", str(workspace), "--provider", "openai", "--api-base",
                            server.openai_base_url, "-m", "fake-model", "--no-checkpoints", "--agents", agents,
                            *flags)
        assert result.returncode == 0, result.stderr

    review()
    assert inputs(log) == []  # an untrusted workspace's hooks do not run
    review("--trust-workspace")
    assert [event["agent_type"] for event in inputs(log)] == ["reviewer"]
