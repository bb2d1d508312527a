"""Plan mode end to end (issue 33): nothing changes, the plan is the answer, resume carries it out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import invoke, json_lines, write_script

from recursive_cli.features.permissions import PermissionPolicy, read_only_command

PLAN = "1. Write notes.txt with 'hi'.\n2. Check it with cat."


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def scripted(tmp_path: Path, name: str, replies: list[dict]) -> list[str]:
    return ["--provider", "scripted", "--script", str(write_script(tmp_path / name, replies))]


@pytest.mark.parametrize(("command", "read_only"), [
    ("ls -la", True), ("cat a | grep b | head -3", True), ("git status", True), ("git log --oneline", True),
    ("rm x", False), ("echo hi > x", False), ("ls; rm x", False), ("find . -delete", False),
    ("git push", False), ("sort -o out x", False), ("cat $(echo x)", False), ("git diff --output=f", False),
])
def test_read_only_commands(command: str, read_only: bool) -> None:
    assert read_only_command(command) is read_only
    verdict, reason = PermissionPolicy("plan").verdict("run_shell", "shell", command)
    assert verdict == ("allow" if read_only else "deny")
    assert read_only or "plan mode allows only read-only commands" in reason


def test_allow_rules_do_not_open_plan_mode() -> None:
    policy = PermissionPolicy("plan", allow=["write_file"])
    assert policy.verdict("write_file", "edit", "a.txt")[0] == "deny"
    assert policy.verdict("exit_plan_mode", "other", "")[0] == "allow"


def test_plan_run_refuses_changes_prints_the_plan_and_resume_carries_it_out(
        tmp_path: Path, workspace: Path) -> None:
    (workspace / "x").write_text("keep me\n")
    args = scripted(tmp_path, "plan.json", [
        {"tool_calls": [call("write_file", path="notes.txt", content="hi\n")]},
        {"tool_calls": [call("run_shell", command="rm x")]},
        {"tool_calls": [call("run_shell", command="ls")]},
        {"tool_calls": [call("exit_plan_mode", plan=PLAN)]},
        # the resume's replies (the scripted provider goes on where the session stopped)
        {"tool_calls": [call("write_file", path="notes.txt", content="hi\n")]},
        {"text": "Done: notes.txt written."},
    ])
    result = invoke("run", "-C", str(workspace), "--permission-mode", "plan", "-o", "stream-json",
                    *args, "make notes.txt")
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    final = lines[-1]
    assert final["type"] == "result" and final["result"] == PLAN and final["subtype"] == "success"
    results = [block for line in lines if line["type"] == "user"
               for block in line["message"]["content"] if block.get("type") == "tool_result"]
    texts = [json.dumps(block["content"]) for block in results]
    assert "plan mode: write_file may change something" in texts[0]
    assert "plan mode allows only read-only commands" in texts[1]
    assert "x" in texts[2] and "permission denied" not in texts[2]
    assert sorted(p.name for p in workspace.iterdir()) == ["x"]  # nothing written, nothing removed
    assert (workspace / "x").read_text() == "keep me\n"
    init = lines[0]
    assert "exit_plan_mode" in init["tools"] and init["permissionMode"] == "plan"

    text = invoke("run", "-C", str(workspace), "--permission-mode", "plan", *scripted(
        tmp_path, "plan2.json", [{"tool_calls": [call("exit_plan_mode", plan=PLAN)]}]), "again")
    assert text.returncode == 0 and text.stdout.strip() == PLAN

    session = final["session_id"]
    go = invoke("resume", session, "-C", str(workspace), "--permission-mode", "auto", "-o", "json", "go")
    assert go.returncode == 0, go.stderr
    assert json.loads(go.stdout)["result"] == "Done: notes.txt written."
    assert (workspace / "notes.txt").read_text() == "hi\n"



def test_a_goal_in_plan_mode_ends_with_the_plan(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, "goal.json", [{"tool_calls": [call("exit_plan_mode", plan=PLAN)]},
                                            {"text": "never asked: the plan ends the goal run"}])
    result = invoke("goal", "-C", str(workspace), "--permission-mode", "plan", "--check", "test -f notes.txt",
                    "-o", "json", *args, "make notes.txt")
    assert result.returncode == 0 and json.loads(result.stdout)["result"] == PLAN, result.stderr
    assert not (workspace / "notes.txt").exists()


def test_exit_plan_mode_is_listed_only_in_plan_mode(workspace: Path) -> None:
    plan = invoke("tools", "-C", str(workspace), "--permission-mode", "plan", "--json")
    auto = invoke("tools", "-C", str(workspace), "--json")
    assert "exit_plan_mode" in [tool["name"] for tool in json.loads(plan.stdout)]
    assert "exit_plan_mode" not in [tool["name"] for tool in json.loads(auto.stdout)]
