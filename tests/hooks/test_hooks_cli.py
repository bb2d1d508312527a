"""Command hooks from the settings files, through the real CLI (`recursive run`), with real
bash and Python hook scripts: what each outcome does, and what the model receives."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from clitools import invoke, json_lines
from fakeserver import FakeLLMServer
from hookkit import KEY, alive, call, command, fake_args, inputs, recorder, script, scripted, settings


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_allowing_hook_sees_claudes_fields_and_the_command_runs(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "events.jsonl"
    settings(workspace / ".recursive" / "settings.json",
             {"PreToolUse": [command(recorder(tmp_path, log), "Bash")]})
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="echo ran > out.txt")]},
                               {"text": "done"}])
    proc = invoke("run", "go", "-C", str(workspace), "--session-id", "s1", *args)
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "out.txt").read_text() == "ran\n"
    (event,) = inputs(log)
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "Bash"
    assert event["tool_input"] == {"command": "echo ran > out.txt"}
    assert event["session_id"] == "s1" and event["cwd"] == str(workspace.resolve())
    assert event["transcript_path"].endswith("s1/transcript.jsonl") or "s1" in event["transcript_path"]


def test_deny_reaches_the_model_as_a_permission_denial(tmp_path: Path, workspace: Path) -> None:
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "no network tools in CI"}}
    settings(workspace / ".claude" / "settings.json",
             {"PreToolUse": [command(recorder(tmp_path, tmp_path / "l", deny), "run_shell")]})
    replies = [{"tool_calls": [call("run_shell", command="curl example.com > got.txt")]},
               {"text": "could not"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "fetch", "-C", str(workspace), "-o", "json", *fake_args(server), env=KEY)
        bodies = [r.body for r in server.requests]
    assert not (workspace / "got.txt").exists()
    (result,) = json_lines(proc.stdout)
    assert [d["tool_name"] for d in result["permission_denials"]] == ["run_shell"]
    assert "no network tools in CI" in tool_results(bodies[1])[0]
    assert "permission denied" in tool_results(bodies[1])[0]


def test_exit_2_blocks_with_stderr_as_the_reason(tmp_path: Path, workspace: Path) -> None:
    hook = script(tmp_path / "block.sh", "#!/bin/bash\necho 'rm is not allowed here' >&2\nexit 2\n")
    settings(workspace / ".recursive" / "settings.json", {"PreToolUse": [command(str(hook), "Bash")]})
    replies = [{"tool_calls": [call("run_shell", command="rm -rf build")]}, {"text": "ok"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "clean", "-C", str(workspace), *fake_args(server), env=KEY)
        bodies = [r.body for r in server.requests]
    assert "rm is not allowed here" in tool_results(bodies[1])[0]
    assert "denied run_shell rm -rf build" in proc.stderr


def test_updated_input_changes_the_command(tmp_path: Path, workspace: Path) -> None:
    change = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                     "updatedInput": {"command": "echo safe > which.txt"}}}
    settings(workspace / ".recursive" / "settings.json",
             {"PreToolUse": [command(recorder(tmp_path, tmp_path / "l", change), "Bash")]})
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="echo unsafe > which.txt")]},
                               {"text": "done"}])
    proc = invoke("run", "go", "-C", str(workspace), "--no-session", *args)
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "which.txt").read_text() == "safe\n"


def test_updated_input_is_judged_by_the_permission_rules(tmp_path: Path, workspace: Path) -> None:
    change = {"hookSpecificOutput": {"permissionDecision": "allow",
                                     "updatedInput": {"command": "touch forbidden.txt"}}}
    settings(workspace / ".recursive" / "settings.json",
             {"PreToolUse": [command(recorder(tmp_path, tmp_path / "l", change), "Bash")]})
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="echo hi")]}, {"text": "done"}])
    proc = invoke("run", "go", "-C", str(workspace), "--no-session", "--deny", "run_shell(touch *)", *args)
    assert not (workspace / "forbidden.txt").exists()
    assert "denied run_shell touch forbidden.txt" in proc.stderr


def test_additional_context_after_an_edit_reaches_the_model(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.py").write_text("x=1\n")
    note = {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                   "additionalContext": "lint: a.py line 1 needs spaces around ="}}
    log = tmp_path / "post.jsonl"
    settings(workspace / ".recursive" / "settings.json",
             {"PostToolUse": [command(recorder(tmp_path, log, note), "Edit|Write")]})
    replies = [{"tool_calls": [call("edit_file", path="a.py", old_string="x=1", new_string="x=2")]},
               {"text": "edited"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "edit", "-C", str(workspace), *fake_args(server), env=KEY)
        bodies = [r.body for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert "lint: a.py line 1 needs spaces around =" in tool_results(bodies[1])[0]
    (event,) = inputs(log)
    assert event["tool_name"] == "Edit" and event["tool_input"]["file_path"] == str(workspace.resolve() / "a.py")
    assert "tool_response" in event


def test_blocking_stop_hook_forces_exactly_one_more_step(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "stop.jsonl"
    block = {"decision": "block", "reason": "run the tests first"}
    settings(workspace / ".recursive" / "settings.json", {"Stop": [command(recorder(tmp_path, log, block))]})
    replies = [{"text": "finished"}, {"text": "tests pass now"}, {"text": "never asked"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "work", "-C", str(workspace), *fake_args(server), env=KEY)
        bodies = [r.body for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert len(bodies) == 2
    assert "run the tests first" in bodies[1]["messages"][-1]["content"]
    assert proc.stdout == "tests pass now\n"
    assert [(e["stop_hook_active"], e["last_assistant_message"]) for e in inputs(log)] == [
        (False, "finished"), (True, "tests pass now")]


def test_hanging_hook_times_out_its_group_is_killed_and_the_run_goes_on(tmp_path: Path, workspace: Path) -> None:
    pids = tmp_path / "pids"
    hook = script(tmp_path / "hang.sh", f"#!/bin/bash\nsleep 300 &\necho $! > {pids}\nwait\n")
    settings(workspace / ".recursive" / "settings.json",
             {"PreToolUse": [command(str(hook), "Bash", timeout=1)]})
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="echo ok > ran.txt")]},
                               {"text": "done"}])
    started = time.monotonic()
    proc = invoke("run", "go", "-C", str(workspace), "--no-session", *args)
    assert time.monotonic() - started < 30
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "ran.txt").exists()
    assert "hook failed (timed out after 1s" in proc.stderr
    child = int(pids.read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_crashing_hook_is_a_warning_and_not_a_block(tmp_path: Path, workspace: Path) -> None:
    hook = script(tmp_path / "crash.py", "#!/usr/bin/env python3\nraise SystemExit(1 / 0)\n")
    settings(workspace / ".recursive" / "settings.json",
             {"PreToolUse": [command(f"{sys.executable} {hook}", ".*")]})
    args = scripted(tmp_path, [{"tool_calls": [call("write_file", path="n.txt", content="x")]},
                               {"text": "done"}])
    proc = invoke("run", "go", "-C", str(workspace), "--no-session", *args)
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "n.txt").read_text() == "x"
    assert "PreToolUse:Write hook failed (exit 1: ZeroDivisionError" in proc.stderr


def test_malformed_settings_name_file_and_key_exit_1_on_disk_2_by_flag(tmp_path: Path, workspace: Path) -> None:
    bad = workspace / ".claude" / "settings.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command"}]}]}}))
    args = scripted(tmp_path, [{"text": "never"}])
    proc = invoke("run", "go", "-C", str(workspace), *args)
    assert proc.returncode == 1  # a config file found on disk
    assert proc.stderr.strip() == f"error: {bad.resolve()}: hooks.PreToolUse[0].hooks[0].command: expected a non-empty string" or (
        f"{bad}" in proc.stderr and "hooks.PreToolUse[0].hooks[0].command" in proc.stderr)
    assert not proc.stdout
    broken = invoke("run", "go", "-C", str(workspace.parent), "--settings", "{not json", *args)
    assert broken.returncode == 2 and "--settings: not valid JSON" in broken.stderr


def test_settings_flag_json_and_user_prompt_submit_block(tmp_path: Path, workspace: Path) -> None:
    hook = script(tmp_path / "p.sh", "#!/bin/bash\ngrep -q secret && { echo 'no secrets in prompts' >&2; exit 2; }\nexit 0\n")
    given = json.dumps({"hooks": {"UserPromptSubmit": [command(str(hook))]}})
    args = scripted(tmp_path, [{"text": "answered"}])
    proc = invoke("run", "tell the secret", "-C", str(workspace), "--no-session", "--settings", given, *args)
    assert proc.returncode != 0
    assert "no secrets in prompts" in proc.stderr
    ok = invoke("run", "hello", "-C", str(workspace), "--no-session", "--settings", given, *args)
    assert (ok.returncode, ok.stdout) == (0, "answered\n")


def test_prompt_context_and_session_start(tmp_path: Path, workspace: Path) -> None:
    start = script(tmp_path / "start.sh", "#!/bin/bash\necho 'branch: main'\n")
    ctx = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "today is Tuesday"}}
    log = tmp_path / "p.jsonl"
    settings(workspace / ".recursive" / "settings.json", {
        "SessionStart": [command(str(start), "startup")],
        "UserPromptSubmit": [command(recorder(tmp_path, log, ctx))]})
    with FakeLLMServer([{"text": "ok"}]) as server:
        proc = invoke("run", "what day", "-C", str(workspace), *fake_args(server), env=KEY)
        body = server.requests[0].body
    assert proc.returncode == 0, proc.stderr
    prompt = body["messages"][-1]["content"]
    assert "what day" in prompt and "today is Tuesday" in prompt and "branch: main" in prompt
    assert inputs(log)[0]["prompt"] == "what day"


def test_hook_events_in_stream_json_only_with_the_flag(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    settings(workspace / ".recursive" / "settings.json",
             {"PreToolUse": [command("true", "Bash")]})
    replies = [{"tool_calls": [call("run_shell", command="true")]}, {"text": "done"}]
    plain = invoke("run", "go", "-C", str(workspace), "-o", "stream-json", "--session-id", "h0",
                   *scripted(tmp_path, replies))
    shown = invoke("run", "go", "-C", str(workspace), "-o", "stream-json", "--session-id", "h1",
                   "--include-hook-events", *scripted(tmp_path, replies))
    assert not [line for line in json_lines(plain.stdout) if "hook" in line.get("subtype", "")]
    subtypes = [line.get("subtype") for line in json_lines(shown.stdout)]
    assert subtypes.count("hook_started") == 1 and subtypes.count("hook_finished") == 1
    finished = next(line for line in json_lines(shown.stdout) if line.get("subtype") == "hook_finished")
    assert (finished["hook_name"], finished["outcome"], finished["exit_code"]) == ("PreToolUse:Bash", "success", 0)
    records = [json.loads(line) for line in (isolated_home / "sessions" / "h0" / "transcript.jsonl").read_text().splitlines()]
    assert [r["type"] for r in records if r["type"].startswith("hook_")] == ["hook_started", "hook_finished"]


def test_hooks_list_shows_each_event_with_its_source(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    settings(isolated_home / "settings.json", {"Stop": [command("./check.sh")]})
    settings(workspace / ".claude" / "settings.json", {"PreToolUse": [command("validate", "Bash", 5)]})
    proc = invoke("hooks", "list", "-C", str(workspace), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["event"], r["matcher"], r["command"], r["timeout"]) for r in rows] == [
        ("PreToolUse", "Bash", "validate", 5.0), ("Stop", "*", "./check.sh", 60.0)]
    assert rows[0]["source"].endswith(".claude/settings.json")
    text = invoke("hooks", "list", "-C", str(workspace))
    assert "PreToolUse\n  [Bash] validate  (timeout 5s;" in text.stdout
