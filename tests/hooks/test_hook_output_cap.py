"""A hook's output is capped while it is read (issue 36): a hook printing half a gigabyte costs
no more memory than one printing a line, runs to its end, and a JSON output over the cap is a
clear warning, not a crash — through the real CLI, with real hook processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from clitools import invoke, json_lines
from hookkit import call, command, scripted

from recursive_cli.features.hooks.runner import OUTPUT_LIMIT

HALF_GIB = 512 * 1024 * 1024
FLOOD = f"head -c {HALF_GIB} /dev/zero | tr '\\0' a"
PEAK_RSS_BOUND_MB = 300  # a CLI run is ~60-100 MB; holding the output whole was > 1 GB


def hooks(**events: list[dict[str, object]]) -> str:
    """A `--settings` JSON holding `events`' hooks."""
    return json.dumps({"hooks": events})


# Measured from a small parent of its own: a child forked from this (large) pytest worker could
# report the worker's pages as its peak (`ru_maxrss` survives exec).
_MEASURE = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
            "sys.exit(code)")


def peak_rss_mb(argv: list[str], cwd: Path, folder: Path) -> tuple[int, float, str, str]:
    """Run `argv`: its exit code, peak RSS in MB (the largest of it and its children), stdout
    and stderr."""
    out, err, peak = folder / "stdout", folder / "stderr", folder / "peak"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        code = subprocess.call([sys.executable, "-c", _MEASURE, str(peak), *argv], cwd=cwd,
                               stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
    return code, int(peak.read_text()) / 1024, out.read_text(), err.read_text()


def test_half_a_gigabyte_of_hook_output_costs_no_memory(tmp_path: Path, workspace: Path,
                                                        isolated_home: Path) -> None:
    marker = tmp_path / "finished"
    flood = f"{FLOOD}; touch {marker}"  # it runs to its end: nothing it printed blocked it
    settings = hooks(UserPromptSubmit=[command(flood)], PreToolUse=[command(flood, "Bash")])
    replies = [{"tool_calls": [call("run_shell", command="echo ran > ran.txt")]}, {"text": "done"}]
    argv = [sys.executable, "-m", "recursive_cli", "run", "go", "-C", str(workspace), "-o", "json",
            "--session-id", "flood", "--settings", settings, *scripted(tmp_path, replies)]
    code, rss, stdout, stderr = peak_rss_mb(argv, workspace, tmp_path)
    assert code == 0, stderr
    assert rss < PEAK_RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"
    assert marker.exists() and (workspace / "ran.txt").read_text() == "ran\n"
    (result,) = json_lines(stdout)
    assert (result["subtype"], result["result"]) == ("success", "done")
    transcript = (isolated_home / "sessions" / "flood" / "transcript.jsonl").read_text()
    (prompt,) = [r["message"]["content"] for r in map(json.loads, transcript.splitlines())
                 if r["type"] == "message" and r["message"]["role"] == "user"]
    assert prompt == "go\n\n" + "a" * OUTPUT_LIMIT + "\n[hook output cut: 512 MiB printed, the first 64 KiB kept]"


def test_json_output_over_the_cap_is_a_clear_warning_and_the_run_goes_on(tmp_path: Path,
                                                                          workspace: Path) -> None:
    big = f"printf '{{\"decision\": \"block\", \"reason\": \"'; head -c {4 * OUTPUT_LIMIT} /dev/zero | tr '\\0' a; printf '\"}}'"
    settings = hooks(PreToolUse=[command(big, "Bash")])
    replies = [{"tool_calls": [call("run_shell", command="echo ran > ran.txt")]}, {"text": "done"}]
    proc = invoke("run", "go", "-C", str(workspace), "--no-session", "--settings", settings,
                  *scripted(tmp_path, replies))
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "ran.txt").read_text() == "ran\n"  # the block it tried to say was not read
    assert ("warning: PreToolUse:Bash hook failed (its JSON output (256 KiB) is over the 64 KiB a hook "
            "may print, so it was not read); going on") in proc.stderr


def test_a_blocking_reason_over_the_cap_is_cut_and_says_so(tmp_path: Path, workspace: Path) -> None:
    loud = f"head -c {2 * OUTPUT_LIMIT} /dev/zero | tr '\\0' b >&2; exit 2"
    settings = hooks(PreToolUse=[command(loud, "Bash")])
    replies = [{"tool_calls": [call("run_shell", command="echo ran > ran.txt")]}, {"text": "done"}]
    proc = invoke("run", "go", "-C", str(workspace), "--no-session", "--settings", settings,
                  *scripted(tmp_path, replies))
    assert proc.returncode == 6, proc.stderr  # (the run's needed action was denied)
    assert not (workspace / "ran.txt").exists()
    assert "[hook output cut: 128 KiB printed, the first 64 KiB kept]" in proc.stderr
    assert "b" * (OUTPUT_LIMIT + 1) not in proc.stderr
