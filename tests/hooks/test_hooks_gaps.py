"""Hooks, the remaining gaps of issue 18, through the real CLI: a blocking Stop hook keeps the
same turn going (inside its --max-steps), `config show` lists the hooks in force, PreCompact
fires before a compaction and SessionEnd at the end of a run, also after SIGINT."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from clitools import invoke, json_lines, wait_until, write_script
from fakeserver import FakeLLMServer
from hookkit import KEY, call, command, fake_args, inputs, recorder, script, scripted, settings

BLOCK = {"decision": "block", "reason": "run the tests first"}


def records(home: Path, session: str) -> list[dict]:
    path = home / "sessions" / session / "transcript.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- 1. a blocking Stop hook continues the same turn ----------------------------------------------

TOOL_THEN_TEXT = [{"tool_calls": [call("run_shell", command="echo hi")]}, {"text": "finished"},
                  {"text": "tests pass now"}, {"text": "never asked"}]


def test_stop_block_cannot_outrun_max_steps(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    log = tmp_path / "stop.jsonl"
    settings(workspace / ".recursive" / "settings.json", {"Stop": [command(recorder(tmp_path, log, BLOCK))]})
    with FakeLLMServer(TOOL_THEN_TEXT) as server:
        proc = invoke("run", "work", "-C", str(workspace), "--max-steps", "2", "-o", "json",
                      "--session-id", "st2", *fake_args(server), env=KEY)
        asked = len(server.requests)
    assert proc.returncode == 3, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["subtype"] == "error_max_turns"
    assert asked == 2  # the block was obeyed, but the turn's budget was spent: no third call
    assert [e["stop_hook_active"] for e in inputs(log)] == [False]
    kinds = [r["type"] for r in records(isolated_home, "st2")]
    assert kinds.count("turn_start") == 1


def test_stop_block_makes_exactly_one_more_call_in_the_same_turn(tmp_path: Path, workspace: Path,
                                                                 isolated_home: Path) -> None:
    log = tmp_path / "stop.jsonl"
    settings(workspace / ".recursive" / "settings.json", {"Stop": [command(recorder(tmp_path, log, BLOCK))]})
    with FakeLLMServer(TOOL_THEN_TEXT) as server:
        proc = invoke("run", "work", "-C", str(workspace), "--max-steps", "10", "-o", "json",
                      "--session-id", "st10", *fake_args(server), env=KEY)
        bodies = [r.body for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["subtype"] == "success" and result["result"] == "tests pass now"
    assert result["num_turns"] == len(bodies) == 3  # (Claude's num_turns: the model calls)
    last = bodies[2]["messages"][-1]
    assert (last["role"], last["content"]) == ("user", "Stop hook: run the tests first")
    assert [e["stop_hook_active"] for e in inputs(log)] == [False, True]
    kinds = [r["type"] for r in records(isolated_home, "st10")]
    assert kinds.count("turn_start") == 1


def test_stop_block_is_one_step_of_the_turn_in_the_scripted_provider(tmp_path: Path, workspace: Path) -> None:
    """The continuation counts toward --max-steps 1: the budget ends the run, no reply consumed."""
    hook = script(tmp_path / "stop.sh", "#!/bin/bash\necho 'not yet' >&2\nexit 2\n")
    settings(workspace / ".recursive" / "settings.json", {"Stop": [command(str(hook))]})
    proc = invoke("run", "go", "-C", str(workspace), "--no-session", "--max-steps", "1", "-o", "json",
                  *scripted(tmp_path, [{"text": "done"}, {"text": "again"}]))
    assert proc.returncode == 3, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert (result["subtype"], result["num_turns"]) == ("error_max_turns", 1)  # one model call


# -- 2. config show lists the hooks in force ------------------------------------------------------

def test_config_show_lists_hooks_with_their_source(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    user = settings(isolated_home / "settings.json", {"Stop": [command("./check.sh")]})
    claude = settings(workspace / ".claude" / "settings.json", {"PreToolUse": [command("validate", "Bash", 5)]})
    extra = json.dumps({"hooks": {"SessionEnd": [command("echo bye")]}})
    proc = invoke("config", "show", "-C", str(workspace), "--json", "--settings", extra)
    assert proc.returncode == 0, proc.stderr
    hooks = json.loads(proc.stdout)["hooks"]
    assert [(h["event"], h["matcher"], h["command"], h["timeout"], h["source"]) for h in hooks["value"]] == [
        ("PreToolUse", "Bash", "validate", 5.0, str(claude.resolve())),
        ("Stop", "*", "./check.sh", 60.0, str(user)),
        ("SessionEnd", "*", "echo bye", 60.0, "--settings")]
    assert str(user) in hooks["source"] and "--settings" in hooks["source"]
    text = invoke("config", "show", "-C", str(workspace))
    assert text.returncode == 0, text.stderr
    assert f"hooks.PreToolUse[Bash]\tvalidate (timeout 5s)\t{claude.resolve()}\n" in text.stdout
    assert f"hooks.Stop[*]\t./check.sh (timeout 60s)\t{user}\n" in text.stdout


def test_config_show_without_hooks_and_with_bad_settings(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("config", "show", "-C", str(workspace), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hooks"] == {"value": [], "source": "-"}
    text = invoke("config", "show", "-C", str(workspace))
    assert "hooks\t(none)\t-\n" in text.stdout
    bad = invoke("config", "show", "-C", str(workspace), "--settings", '{"hooks": {"Stop": {}}}')
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: --settings: hooks.Stop: expected a list of matchers"


# -- 3. PreCompact and SessionEnd fire ------------------------------------------------------------

def test_pre_compact_fires_before_a_compaction(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "compact.jsonl"
    settings(workspace / ".recursive" / "settings.json",
             {"PreCompact": [command(recorder(tmp_path, log), "auto")],
              "SessionEnd": [command(recorder(tmp_path, tmp_path / "end.jsonl"))]})

    def wake(n: int) -> dict:
        return {"tool_calls": [call("schedule_wakeup", delay_seconds=0.05, prompt=f"turn {n}")]}

    replies = [wake(2), {"text": "t1"}, wake(3), {"text": "t2"},
               wake(4), {"text": "t3", "usage": {"input_tokens": 3_500, "output_tokens": 5}},
               {"text": "THE SUMMARY"}, {"text": "t4"}]
    proc = invoke("loop", "turn 1", "-C", str(workspace), "--max-context-tokens", "4000", "--no-session",
                  "--provider", "scripted", "--script", str(write_script(tmp_path / "s.json", replies)),
                  "-o", "stream-json", "--include-hook-events")
    assert proc.returncode == 0, proc.stderr
    (event,) = inputs(log)
    assert (event["hook_event_name"], event["trigger"]) == ("PreCompact", "auto")
    lines = json_lines(proc.stdout)
    order = [(line.get("subtype"), line.get("hook_event")) for line in lines
             if line.get("subtype") in ("hook_finished", "compaction")]
    assert ("hook_finished", "PreCompact") in order and ("compaction", None) in order
    assert order.index(("hook_finished", "PreCompact")) < order.index(("compaction", None))
    assert [e["hook_event_name"] for e in inputs(tmp_path / "end.jsonl")] == ["SessionEnd"]


def test_session_end_fires_once_on_a_normal_end(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "end.jsonl"
    settings(workspace / ".recursive" / "settings.json", {"SessionEnd": [command(recorder(tmp_path, log))]})
    proc = invoke("run", "hi", "-C", str(workspace), "--session-id", "se1",
                  *scripted(tmp_path, [{"text": "hello"}]))
    assert (proc.returncode, proc.stdout) == (0, "hello\n"), proc.stderr
    (event,) = inputs(log)
    assert event["hook_event_name"] == "SessionEnd" and event["session_id"] == "se1"
    assert event["reason"] and event["cwd"] == str(workspace.resolve())


def test_session_end_fires_after_sigint(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "end.jsonl"
    settings(workspace / ".recursive" / "settings.json", {"SessionEnd": [command(recorder(tmp_path, log))]})
    replies = [{"tool_calls": [call("run_shell", command="echo $$ > tool.pid; exec sleep 30")]}, {"text": "no"}]
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "x", "-C", str(workspace),
                             "--no-session", "-o", "json", *scripted(tmp_path, replies)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    pid_file = workspace / "tool.pid"
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", proc=proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    (result,) = json_lines(out)
    assert result["subtype"] == "interrupted"
    assert [e["hook_event_name"] for e in inputs(log)] == ["SessionEnd"]
