"""A hook's `continue: false` ends the turn at once, through the real CLI: nothing more runs,
no further model call is made, every call the model asked for is answered in the session, and
the run ends as a needed action denied (exit 6) with the hook's `stopReason` as the error."""

from __future__ import annotations

from pathlib import Path

from clitools import invoke, json_lines
from fakeserver import FakeLLMServer
from hookkit import KEY, call, command, fake_args, recorder, settings

STOP = {"continue": False, "stopReason": "the release freeze is on"}
TWO_CALLS = {"tool_calls": [call("run_shell", command="touch first.txt"),
                            call("run_shell", command="touch second.txt")]}


def _run(tmp_path: Path, workspace: Path, event: str, replies: list) -> tuple:
    settings(workspace / ".claude" / "settings.json",
             {event: [command(recorder(tmp_path, tmp_path / "log", STOP), "Bash")]})
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "ship it", "-C", str(workspace), "-o", "json", "--session-id", "h1",
                      *fake_args(server), env=KEY)
        requests = len(server.requests)
    return proc, requests


def test_pre_tool_use_continue_false_stops_before_the_call(tmp_path: Path, workspace: Path) -> None:
    proc, requests = _run(tmp_path, workspace, "PreToolUse", [TWO_CALLS, {"text": "never asked for"}])
    assert proc.returncode == 6, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["subtype"] == "error_permission"
    assert result["errors"] == ["a PreToolUse hook stopped the run: the release freeze is on"]
    assert [d["tool_name"] for d in result["permission_denials"]] == ["run_shell"]
    assert "the release freeze is on" in proc.stderr
    assert requests == 1  # no model call after the stop
    assert not (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()


def test_post_tool_use_continue_false_stops_after_the_call(tmp_path: Path, workspace: Path) -> None:
    proc, requests = _run(tmp_path, workspace, "PostToolUse", [TWO_CALLS, {"text": "never asked for"}])
    assert proc.returncode == 6, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["errors"] == ["a PostToolUse hook stopped the run: the release freeze is on"]
    assert requests == 1
    assert (workspace / "first.txt").exists()  # it ran before the hook said stop
    assert not (workspace / "second.txt").exists()


def test_the_stopped_session_resumes_with_every_call_answered(tmp_path: Path, workspace: Path) -> None:
    proc, _ = _run(tmp_path, workspace, "PreToolUse", [TWO_CALLS])
    assert proc.returncode == 6
    (workspace / ".claude" / "settings.json").unlink()
    with FakeLLMServer([{"text": "resumed"}]) as server:
        again = invoke("resume", "h1", "go on", "-C", str(workspace), *fake_args(server), env=KEY)
        body = server.requests[0].body
    assert again.returncode == 0, again.stderr
    calls = [c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert len(calls) == 2 and sorted(answered) == sorted(calls)
    assert "not run: the turn ended before this call" in [m["content"] for m in body["messages"] if m["role"] == "tool"][1]
