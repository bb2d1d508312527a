"""Goal runs that are interrupted and resumed: the goal, its turn count and its judge replies persist."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clitools import host_pid, invoke, json_lines, wait_gone, wait_until, write_script

from .goaltools import evaluations, meta, result_of, say, user_prompts, verdict, write


def _interrupt_when(tmp_path: Path, workspace: Path, replies: list[dict[str, Any]],
                    ready: Callable[[], bool], *args: str) -> tuple[int, list[dict[str, Any]], float]:
    """Start a goal in a real process (it gets a real SIGINT) and interrupt it once `ready()`;
    (exit, stream lines, seconds from the signal to the exit)."""
    script = write_script(tmp_path / "first.json", replies)
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "goal", *args, "-C", str(workspace),
                             "--provider", "scripted", "--script", str(script), "-o", "stream-json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True)
    wait_until(ready, proc=proc)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, json_lines(out), time.monotonic() - sent


def _record_types(home: Path, session_id: str) -> list[str]:
    """The types of the transcript's records so far (a line still being written is skipped)."""
    path = home / "sessions" / session_id / "transcript.jsonl"
    types = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            types.append(json.loads(line)["type"])
        except ValueError:
            pass
    return types


def _in_second_turn(home: Path, session_id: str) -> Callable[[], bool]:
    """Whether the second turn has started and its prompt is saved (the model is thinking)."""
    def ready() -> bool:
        types = _record_types(home, session_id)
        starts = [i for i, kind in enumerate(types) if kind == "turn_start"]
        return len(starts) >= 2 and "message" in types[starts[1]:]
    return ready


def test_resume_of_an_interrupted_goal_keeps_the_turn_count(tmp_path: Path, workspace: Path,
                                                            isolated_home: Path) -> None:
    first = [write("a"), say("turn one"), {"text": "slow", "delay": 60}]
    code, lines, _ = _interrupt_when(tmp_path, workspace, first, _in_second_turn(isolated_home, "g-int"),
                                     "make b", "--check", "test -f b", "--max-turns", "2",
                                     "--session-id", "g-int")
    assert code == 130
    assert lines[-1]["subtype"] == "interrupted"
    assert lines[-1]["goal"]["turns"] == 2 and lines[-1]["goal"]["status"] == "running"
    saved = meta(isolated_home, "g-int")
    assert saved["status"] == "interrupted" and saved["mode"] == "goal"
    assert saved["state"]["goal"]["turns"] == 2 and saved["state"]["goal"]["evaluated"] == 1
    # Turn 2 is continued (not restarted, not counted again) and is the last one --max-turns allows.
    again = write_script(tmp_path / "again.json", [write("a"), say("turn one"), write("c"), say("made c")])
    proc = invoke("resume", "g-int", "-C", str(workspace), "--script", str(again), "-o", "stream-json")
    assert proc.returncode == 4, proc.stderr
    (evaluation,) = evaluations(proc.stdout)
    assert evaluation["turn"] == 2 and evaluation["max_turns"] == 2
    result = result_of(proc.stdout)
    assert "goal not met after 2 turns (--max-turns 2)" in result["errors"][0]
    assert [v["turn"] for v in result["goal"]["verdicts"]] == [1, 2]
    assert len(user_prompts(isolated_home, "g-int")) == 2  # no new prompt: the turn carried on
    assert (workspace / "c").exists()


def test_interrupt_during_a_check_then_resume_evaluates_before_another_turn(
        tmp_path: Path, workspace: Path) -> None:
    check_pid = workspace / "check.pid"  # written once the check runs
    code, lines, elapsed = _interrupt_when(
        tmp_path, workspace, [say("did it")], lambda: check_pid.exists() and check_pid.read_text() != "",
        "do it", "--check", "test -f ok || { echo $$ > check.pid; exec sleep 60; }",
        "--session-id", "g-chk")
    assert code == 130 and elapsed < 10
    assert wait_gone(host_pid(check_pid)), "the check outlived the interrupt"
    assert not [line for line in lines if line.get("subtype") == "goal_evaluation"]
    (workspace / "ok").write_text("")
    # The script has no reply left: a new turn would fail; the pending evaluation passes instead.
    proc = invoke("resume", "g-chk", "-C", str(workspace), "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    (evaluation,) = evaluations(proc.stdout)
    assert evaluation["turn"] == 1 and evaluation["achieved"] is True
    assert result_of(proc.stdout)["result"] == "did it"


def test_resuming_an_ended_goal_starts_a_new_round_past_the_judges_replies(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    replies = [say("one"), verdict(False, "not yet: two is missing"), say("two"), verdict(True, "now")]
    script = write_script(tmp_path / "script.json", replies)
    first = invoke("goal", "count", "--until", "two was said", "--max-turns", "1", "-C", str(workspace),
                   "--provider", "scripted", "--script", str(script), "--session-id", "g-round")
    assert first.returncode == 4, first.stderr
    proc = invoke("resume", "g-round", "-C", str(workspace), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc.stdout)
    assert result["result"] == "two"  # the replay skipped the judge's reply as well as the turn's
    assert result["goal"]["turns"] == 1 and result["goal"]["status"] == "met"
    assert "not yet: two is missing" in user_prompts(isolated_home, "g-round")[-1]
