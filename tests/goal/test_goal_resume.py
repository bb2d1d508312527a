"""Goal runs that are interrupted and resumed: the goal, its turn count and its judge replies persist."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from clitools import json_lines, run_cli, write_script

from .goaltools import evaluations, meta, result_of, say, user_prompts, verdict, write


def _interrupt_when(tmp_path: Path, workspace: Path, replies: list[dict[str, Any]], marker: str,
                    *args: str) -> tuple[int, list[dict[str, Any]], float]:
    """Start a goal, send SIGINT once a stdout line contains `marker`; (exit, lines, seconds to exit)."""
    script = write_script(tmp_path / "first.json", replies)
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "goal", *args, "-C", str(workspace),
                             "--provider", "scripted", "--script", str(script), "-o", "stream-json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if marker in line:
            break
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    return proc.returncode, json_lines("".join(lines) + rest), time.monotonic() - sent


def test_resume_of_an_interrupted_goal_keeps_the_turn_count(tmp_path: Path, workspace: Path,
                                                            isolated_home: Path) -> None:
    first = [write("a"), say("turn one"), {"text": "slow", "delay": 60}]
    code, lines, _ = _interrupt_when(tmp_path, workspace, first, '"goal_evaluation"', "make b",
                                     "--check", "test -f b", "--max-turns", "2", "--session-id", "g-int")
    assert code == 130
    assert lines[-1]["subtype"] == "interrupted"
    assert lines[-1]["goal"]["turns"] == 2 and lines[-1]["goal"]["status"] == "running"
    saved = meta(isolated_home, "g-int")
    assert saved["status"] == "interrupted" and saved["mode"] == "goal"
    assert saved["state"]["goal"]["turns"] == 2 and saved["state"]["goal"]["evaluated"] == 1
    # Turn 2 is continued (not restarted, not counted again) and is the last one --max-turns allows.
    again = write_script(tmp_path / "again.json", [write("a"), say("turn one"), write("c"), say("made c")])
    proc = run_cli("resume", "g-int", "-C", str(workspace), "--script", str(again), "-o", "stream-json")
    assert proc.returncode == 4, proc.stderr
    (evaluation,) = evaluations(proc.stdout)
    assert evaluation["turn"] == 2 and evaluation["max_turns"] == 2
    result = result_of(proc.stdout)
    assert "goal not met after 2 turns (--max-turns 2)" in result["error"]
    assert [v["turn"] for v in result["goal"]["verdicts"]] == [1, 2]
    assert len(user_prompts(isolated_home, "g-int")) == 2  # no new prompt: the turn carried on
    assert (workspace / "c").exists()


def test_interrupt_during_a_check_then_resume_evaluates_before_another_turn(
        tmp_path: Path, workspace: Path) -> None:
    code, lines, elapsed = _interrupt_when(tmp_path, workspace, [say("did it")], '"did it"', "do it",
                                           "--check", "test -f ok || sleep 60", "--session-id", "g-chk")
    assert code == 130 and elapsed < 10  # the check's process group was killed at once
    assert not [line for line in lines if line.get("subtype") == "goal_evaluation"]
    (workspace / "ok").write_text("")
    # The script has no reply left: a new turn would fail; the pending evaluation passes instead.
    proc = run_cli("resume", "g-chk", "-C", str(workspace), "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    (evaluation,) = evaluations(proc.stdout)
    assert evaluation["turn"] == 1 and evaluation["achieved"] is True
    assert result_of(proc.stdout)["result"] == "did it"


def test_resuming_an_ended_goal_starts_a_new_round_past_the_judges_replies(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    replies = [say("one"), verdict(False, "not yet: two is missing"), say("two"), verdict(True, "now")]
    script = write_script(tmp_path / "script.json", replies)
    first = run_cli("goal", "count", "--until", "two was said", "--max-turns", "1", "-C", str(workspace),
                    "--provider", "scripted", "--script", str(script), "--session-id", "g-round")
    assert first.returncode == 4, first.stderr
    proc = run_cli("resume", "g-round", "-C", str(workspace), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc.stdout)
    assert result["result"] == "two"  # the replay skipped the judge's reply as well as the turn's
    assert result["goal"]["turns"] == 1 and result["goal"]["status"] == "met"
    assert "not yet: two is missing" in user_prompts(isolated_home, "g-round")[-1]
