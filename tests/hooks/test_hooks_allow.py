"""A PreToolUse hook's `allow` answers the permission question, as in Claude Code: a call the
mode would ask about runs without asking (headless, where asking denies), while deny rules and
read-only mode still deny it."""

from __future__ import annotations

from pathlib import Path

from clitools import invoke, json_lines
from hookkit import call, command, recorder, scripted, settings

ALLOW = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


def _go(tmp_path: Path, workspace: Path, *flags: str):
    settings(workspace / ".claude" / "settings.json",
             {"PreToolUse": [command(recorder(tmp_path, tmp_path / "log", ALLOW), "Bash")]})
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="touch made.txt")]},
                               {"text": "done"}])
    return invoke("run", "make it", "-C", str(workspace), "-o", "json", "--no-session", *flags, *args)


def test_hook_allow_runs_a_call_ask_mode_would_deny_headless(tmp_path: Path, workspace: Path) -> None:
    proc = _go(tmp_path, workspace, "--permission-mode", "ask")
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "made.txt").exists()
    assert json_lines(proc.stdout)[0]["permission_denials"] == []


def test_without_the_hook_ask_mode_denies_headless(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="touch made.txt")]},
                               {"text": "could not"}])
    proc = invoke("run", "make it", "-C", str(workspace), "-o", "json", "--no-session",
                  "--permission-mode", "ask", *args)
    assert not (workspace / "made.txt").exists()
    assert [d["tool_name"] for d in json_lines(proc.stdout)[0]["permission_denials"]] == ["run_shell"]


def test_deny_rules_and_read_only_still_win_over_a_hook_allow(tmp_path: Path, workspace: Path) -> None:
    for flags in (["--deny", "run_shell"], ["--permission-mode", "read-only"]):
        proc = _go(tmp_path, workspace, *flags)
        assert not (workspace / "made.txt").exists(), flags
        assert [d["tool_name"] for d in json_lines(proc.stdout)[0]["permission_denials"]] == ["run_shell"]
