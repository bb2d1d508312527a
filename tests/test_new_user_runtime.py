"""What a new user trusts the runtime to print and to stop (issue 32, part B): a checkpoint
hint only when the snapshot is slow, the run's limits, the providers' URLs, costs and logs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitools import invoke, require, write_script
from fakeserver import FakeLLMServer

from recursive_cli.core.procs import process_alive

KEY = {"RECURSIVE_API_KEY": "sk-test-0123456789abcdef"}
HINT = "checkpoint: the snapshot took"


def openai_args(server: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model"]


def one_file(workspace: Path) -> Path:
    (workspace / "notes.txt").write_text("hello\n")
    return workspace


def test_a_slow_model_reply_is_not_blamed_on_the_snapshot(workspace: Path) -> None:
    with FakeLLMServer([{"text": "done", "delay": 6}]) as server:
        proc = invoke("run", "hi", "-C", str(one_file(workspace)), *openai_args(server), env=KEY)
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout
    assert HINT not in proc.stderr


def test_a_slow_snapshot_still_gets_the_hint(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.features.checkpoints import observer

    monkeypatch.setattr(observer, "SLOW_SECONDS", -1.0)  # every snapshot counts as slow
    with FakeLLMServer([{"text": "done"}]) as server:
        proc = invoke("run", "hi", "-C", str(one_file(workspace)), *openai_args(server), env=KEY)
    assert proc.returncode == 0, proc.stderr
    assert HINT in proc.stderr and "--no-checkpoints" in proc.stderr


def list_on_a_terminal(workspace: Path, columns: int) -> str:
    """`recursive sessions list` on a pseudo-terminal `columns` wide: what the screen shows."""
    pexpect = require("pexpect")
    child = pexpect.spawn(sys.executable, ["-m", "recursive_cli", "sessions", "list"], cwd=str(workspace),
                          encoding="utf-8", timeout=30, dimensions=(40, columns),
                          env={**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns)})
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)


@pytest.mark.parametrize(("columns", "model"), [(80, "scripted"), (110, "scripted"), (60, "gpt-4.1-mini"),
                                               (80, "gpt-4.1-mini"), (110, "gpt-4.1-mini")])
def test_sessions_list_never_cuts_an_id_but_the_title(workspace: Path, tmp_path: Path, columns: int,
                                                      model: str) -> None:
    title = "refactor the payment reconciliation module and " * 3
    for _ in range(2):
        script = write_script(tmp_path / "script.json", [{"text": "done"}])
        proc = invoke("run", title, "-C", str(workspace), "--provider", "scripted", "--script",
                      str(script), "--no-checkpoints", "-m", model)
        assert proc.returncode == 0, proc.stderr
    ids = [line.split("\t")[0] for line in invoke("sessions", "list", cwd=workspace).stdout.splitlines()]
    assert len(ids) == 2 and all(len(i) > 20 for i in ids)
    screen = list_on_a_terminal(workspace, columns)
    for session_id in ids:
        (line,) = [row for row in screen.splitlines() if row.strip().startswith(session_id + " ")]
        assert len(line.rstrip()) <= columns
        assert "refactor" in line and "…" in line  # the title shown as far as it fits: whole columns give way
    header = screen.splitlines()[0].split()
    assert header[0] == "id" and ("model" in header) == (columns >= 110)


def test_counts_of_one_read_in_the_singular(workspace: Path) -> None:
    """`+1 line`, `1 entry`, `1 file`: what the tour's first line shows, and what the model reads."""
    script = write_script(workspace.parent / "one.json", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.py", "content": "print('hi')\n"}}]},
        {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.py"}}]},
        {"text": "done"},
    ])
    proc = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    assert "(new file, +1 line)" in proc.stderr and "+1 lines" not in proc.stderr
    assert "(1 entry)" in proc.stderr and "(1 file)" in proc.stderr, proc.stderr
    assert '"content":"created hello.py (1 line)"' in proc.stdout.replace(": ", ":")


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_anthropic_base_url_with_or_without_v1_posts_to_v1_messages(workspace: Path, suffix: str) -> None:
    """The README's examples end their base URLs in /v1; the Anthropic SDK's users write none."""
    with FakeLLMServer([{"text": "done"}]) as server:
        proc = invoke("run", "hi", "-C", str(one_file(workspace)), "--provider", "anthropic",
                      "--api-base", server.url + suffix, "-m", "claude-x", env=KEY)
        paths = [request.path for request in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert paths == ["/v1/messages"] and "done" in proc.stdout


def test_verbose_off_a_terminal_shows_the_models_text_and_each_tools_output(workspace: Path) -> None:
    """A CI log of `run -v` tells what happened: text between calls, each output under its call."""
    script = write_script(workspace.parent / "v.json", [
        {"text": "Let me look at the numbers.", "tool_calls": [
            {"name": "run_shell", "arguments": {"command": "seq 1 30"}}]},
        {"text": "The last is 30."},
    ])
    args = ("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    plain = invoke(*args)
    verbose = invoke(*args, "-v")
    assert plain.returncode == verbose.returncode == 0, verbose.stderr
    assert "Let me look" not in plain.stderr and "\n  1\n" not in plain.stderr
    assert "Let me look at the numbers." in verbose.stderr
    shown = verbose.stderr.split("run_shell seq 1 30", 1)[1]
    assert "\n  1\n  2\n" in shown and "\n  20\n" in shown and "\n  21\n" not in shown
    assert re.search(r"\n  … [0-9]+ more lines\n", shown)
    assert verbose.stdout.strip() == "The last is 30." and "The last is 30." not in verbose.stderr


def test_max_duration_cuts_a_running_command_and_the_session_resumes(workspace: Path, tmp_path: Path) -> None:
    """`--max-duration 2s` stops a 30 s command at 2 s: the call is answered (paired), its process
    is gone, the run ends as the limit says (exit 3), and `resume` carries on."""
    pid_file = tmp_path / "pid"
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": f"echo $$ > {pid_file}; exec sleep 30"}}]},
        {"text": "never reached"},
    ])
    started = time.monotonic()
    proc = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "--max-duration", "2s", "--sandbox", "off", "-o", "json")
    took = time.monotonic() - started
    result = json.loads(proc.stdout)
    assert proc.returncode == 3 and took < 15, (took, proc.stderr)
    assert result["subtype"] == "error_max_budget" and "--max-duration of 2 s" in result["errors"][0]
    assert "stopped at --max-duration" in proc.stderr
    assert not process_alive(int(pid_file.read_text()))
    again = write_script(tmp_path / "again.json", [{"text": "placeholder"}, {"text": "carried on"}])
    resumed = invoke("resume", result["session_id"], "go on", "-C", str(workspace), "--provider", "scripted",
                     "--script", str(again))
    assert resumed.returncode == 0 and "carried on" in resumed.stdout, resumed.stderr
    shown = invoke("sessions", "show", result["session_id"], cwd=workspace).stdout
    assert "--max-duration ran out during this call" in shown


def test_max_duration_cuts_a_slow_model_reply(workspace: Path) -> None:
    with FakeLLMServer([{"text": "late", "delay": 12}]) as server:
        started = time.monotonic()
        proc = invoke("run", "hi", "-C", str(one_file(workspace)), *openai_args(server),
                      "--max-duration", "2s", env=KEY)
    assert proc.returncode == 3 and time.monotonic() - started < 10, proc.stderr
    assert "--max-duration" in proc.stderr and "late" not in proc.stdout


def test_sessions_show_marks_the_turns_a_restore_took_back(workspace: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)

    def turn(n: int, *more: str) -> None:
        script = write_script(tmp_path / f"t{n}.json", [{"text": "placeholder"}] * (n - 1) + [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": f"f{n}.txt", "content": f"{n}\n"}}]},
            {"text": f"turn {n} done"}])
        proc = invoke("run", *more, f"turn {n}", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
        assert proc.returncode == 0, proc.stderr

    turn(1)
    turn(2, "-c")
    session = invoke("sessions", "list", "--json", cwd=workspace).stdout
    session_id = json.loads(session)[0]["id"]
    restored = invoke("checkpoints", "restore", session_id, "--turn", "2", cwd=workspace)
    assert restored.returncode == 0, restored.stderr
    shown = invoke("sessions", "show", session_id, cwd=workspace).stdout
    assert "── turn 1 ──" in shown and "── turn 2 (rewound: no longer in the conversation) ──" in shown
    markdown = invoke("sessions", "export", session_id, "--format", "md", cwd=workspace).stdout
    assert "## Turn 1\n" in markdown and "## Turn 2 (rewound" in markdown
