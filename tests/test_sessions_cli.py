"""Sessions through the real CLI: crash safety, resume, locking, settings, export and bad input.

Commands run in this process (`invoke`); a real process only where the point is one: a run
killed with kill -9, and a run that holds a session's lock while another command tries it."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from clitools import invoke, json_lines, wait_until, write_script
from fakeserver import FakeLLMServer

KEY = {"RECURSIVE_API_KEY": "sk-test"}


def shell_step(i: int) -> dict:
    return {"tool_calls": [{"name": "run_shell", "arguments": {"command": f"sleep 0.05; echo step {i}"}}]}


def transcript_records(home: Path, session_id: str) -> list[dict]:
    lines = (home / "sessions" / session_id / "transcript.jsonl").read_text().splitlines()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pass  # a torn last line after kill -9
    return records


def unanswered_calls(messages: list[dict]) -> list[str]:
    """Tool-call ids of an OpenAI request body that have no tool message after them."""
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    return [c for c in calls if c not in answered]


def test_kill_9_at_random_points_then_resume(workspace: Path, isolated_home: Path) -> None:
    rng = random.Random(1234)
    trials = range(6)
    delays = [rng.uniform(0.0, 1.0) for _ in trials]  # after the transcript exists: somewhere in the run
    with contextlib.ExitStack() as stack:  # the trials run side by side, each killed at its own point
        procs = []
        for trial in trials:
            server = stack.enter_context(FakeLLMServer([shell_step(i) for i in range(12)]
                                                       + [{"text": "never reached"}]))
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "recursive_cli", "run", "work", "-C", str(workspace),
                 "--api-base", server.openai_base_url, "--session-id", f"crash-{trial}"],
                env={**os.environ, **KEY}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        for trial, proc in enumerate(procs):
            transcript = isolated_home / "sessions" / f"crash-{trial}" / "transcript.jsonl"
            wait_until(transcript.exists, proc=proc)
            threading.Timer(delays[trial], proc.send_signal, (signal.SIGKILL,)).start()
        for proc in procs:
            proc.wait(timeout=30)
    for trial in trials:
        session_id = f"crash-{trial}"
        on_disk = [r["message"] for r in transcript_records(isolated_home, session_id) if r["type"] == "message"]
        results_on_disk = {m["tool_call_id"]: m["content"] for m in on_disk if m["role"] == "tool"}
        with FakeLLMServer([{"text": "resumed fine"}]) as server:
            resumed = invoke("resume", session_id, "-C", str(workspace), "--api-base",
                             server.openai_base_url, env=KEY)
            assert resumed.returncode == 0, (trial, resumed.stderr)
            assert resumed.stdout == "resumed fine\n"
            messages = server.requests[0].body["messages"]
        assert unanswered_calls(messages) == [], trial
        sent = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
        for call_id, content in results_on_disk.items():
            assert sent[call_id] == content, (trial, call_id)
        assert messages[0]["role"] == "system" and messages[1] == {"role": "user", "content": "work"}


def test_resume_continues_the_same_conversation(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([shell_step(1), {"text": "first answer"}]) as server:
        first = invoke("run", "start", "-C", str(workspace), "--api-base", server.openai_base_url,
                       "--session-id", "conv-1", "-m", "gpt-4o", env=KEY)
        earlier = server.requests[-1].body["messages"]
    assert first.returncode == 0
    with FakeLLMServer([{"text": "second answer"}]) as server:
        second = invoke("resume", "conv", "now add tests", "--api-base", server.openai_base_url,
                        "-o", "stream-json", env=KEY)
        body = server.requests[0].body
    assert second.returncode == 0, second.stderr
    assert body["model"] == "gpt-4o"  # restored, not the default
    assert body["messages"][1:] == earlier[1:] + [{"role": "assistant", "content": "first answer"},
                                                 {"role": "user", "content": "now add tests"}]
    result = json_lines(second.stdout)[-1]
    assert result["num_turns"] == 1 and result["session_id"] == "conv-1"  # this command's model calls
    meta = json.loads((isolated_home / "sessions" / "conv-1" / "meta.json").read_text())
    assert meta["turns"] == 2 and meta["status"] == "completed"
    turn_starts = [r["turn"] for r in transcript_records(isolated_home, "conv-1") if r["type"] == "turn_start"]
    assert turn_starts == [1, 2]


def test_resume_last_without_prompt_says_continue(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "one"}, {"text": "two"}])
    assert invoke("run", "hi", "-C", str(workspace), "--provider", "scripted", "--script", str(script)).returncode == 0
    proc = invoke("resume", "--last", "-C", str(workspace), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == "two"


def test_resume_restores_permissions_and_says_when_flags_widen(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "read only"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
        {"text": "could not"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "x"}}]},
        {"text": "wrote it"},
    ])
    base = ["-C", str(workspace)]
    assert invoke("run", "look", *base, "--provider", "scripted", "--script", str(script),
                  "--permission-mode", "read-only", "--session-id", "perm-1").returncode == 0
    kept = invoke("resume", "perm-1", "write a", *base, env={"RECURSIVE_PROVIDER": "openai"})
    assert kept.returncode == 6 and not (workspace / "a.txt").exists()
    assert "note:" not in kept.stderr
    widened = invoke("resume", "perm-1", "write b", *base, "--permission-mode", "auto")
    assert widened.returncode == 0, widened.stderr
    assert "note: --permission-mode given: permissions change from read-only to auto" in widened.stderr
    assert (workspace / "b.txt").exists()


def test_two_processes_on_one_session(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "sleep 5"}}]}, {"text": "done"}])
    first = subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "slow", "-C", str(workspace),
                              "--provider", "scripted", "--script", str(script), "--session-id", "busy-1",
                              "-o", "stream-json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, text=True)
    assert first.stdout is not None
    for line in first.stdout:
        if '"tool_use"' in line:
            break
    second = invoke("resume", "busy-1", "hello", "-C", str(workspace))
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=20)
    assert second.returncode == 1
    assert f"session busy-1 is in use by pid {first.pid}" in second.stderr


def test_torn_last_line_is_ignored_with_a_warning(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "one"}, {"text": "two"}])
    invoke("run", "hi", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
           "--session-id", "torn-1")
    path = isolated_home / "sessions" / "torn-1" / "transcript.jsonl"
    with path.open("a") as handle:
        handle.write('{"type":"message","turn":2,"message":{"role":"assis')
    proc = invoke("resume", "torn-1", "again", "-C", str(workspace), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "last line" in proc.stderr
    assert json.loads(proc.stdout)["result"] == "two"


def test_export_formats(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo exported"}}]}, {"text": "the end"}])
    invoke("run", "export me", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
           "--session-id", "exp-1")
    jsonl = invoke("sessions", "export", "exp-1", "--format", "jsonl")
    assert jsonl.stdout == (isolated_home / "sessions" / "exp-1" / "transcript.jsonl").read_text()
    document = json.loads(invoke("sessions", "export", "exp-1", "--format", "json").stdout)
    assert document["meta"]["id"] == "exp-1"
    assert [m["role"] for m in document["messages"]] == ["user", "assistant", "tool", "assistant"]
    markdown = invoke("sessions", "export", "exp-1", "--format", "md").stdout
    assert "export me" in markdown and "echo exported" in markdown and "the end" in markdown
    shown = invoke("sessions", "show", "exp-1").stdout
    assert "export me" in shown and "the end" in shown
    listed = json.loads(invoke("sessions", "list", "--json", "-C", str(workspace)).stdout)
    assert [s["id"] for s in listed] == ["exp-1"] and listed[0]["title"] == "export me"


def test_session_id_taken_and_no_session(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "a"}, {"text": "b"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script)]
    assert invoke("run", "x", *args, "--session-id", "mine").returncode == 0
    again = invoke("run", "x", *args, "--session-id", "mine")
    assert again.returncode == 1 and "already exists" in again.stderr
    before = sorted(p.name for p in (isolated_home / "sessions").iterdir())
    assert invoke("run", "x", *args, "--no-session").returncode == 0
    assert sorted(p.name for p in (isolated_home / "sessions").iterdir()) == before


def test_max_cost_is_summed_over_resumes(tmp_path: Path, workspace: Path) -> None:
    usage = {"input_tokens": 100_000, "output_tokens": 0}  # $0.25 each at gpt-4o prices
    script = write_script(tmp_path / "s.json", [{"text": "a", "usage": usage}, {"text": "b", "usage": usage},
                                                {"text": "c", "usage": usage}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "-m", "gpt-4o"]
    assert invoke("run", "x", *args, "--max-cost", "0.5", "--session-id", "cost-1").returncode == 0
    assert invoke("resume", "cost-1", "y", "-C", str(workspace)).returncode == 0
    third = invoke("resume", "cost-1", "z", "-C", str(workspace), "-o", "json")
    assert third.returncode == 3, third.stderr
    assert json.loads(third.stdout)["total_cost_usd"] == pytest.approx(0.5)


def test_bad_session_references(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "a"}])
    for sid in ("abc-1", "abc-2"):
        invoke("run", "x", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
               "--session-id", sid)
    unknown = invoke("resume", "zzz", "-C", str(workspace))
    assert unknown.returncode == 1 and "no session matches 'zzz'" in unknown.stderr
    ambiguous = invoke("resume", "abc", "-C", str(workspace))
    assert ambiguous.returncode == 1 and "abc-1" in ambiguous.stderr and "abc-2" in ambiguous.stderr
    header = isolated_home / "sessions" / "abc-1" / "transcript.jsonl"
    lines = header.read_text().splitlines()
    lines[0] = lines[0].replace('"schema_version":1', '"schema_version":2')
    header.write_text("\n".join(lines) + "\n")
    newer = invoke("resume", "abc-1", "-C", str(workspace))
    assert newer.returncode == 1 and "newer version of recursive" in newer.stderr
    moved = tmp_path / "moved"
    workspace.rename(moved)
    gone = invoke("resume", "abc-2", "hi")
    assert gone.returncode == 1 and "no longer exists" in gone.stderr
    for proc in (unknown, ambiguous, newer, gone):
        assert "Traceback" not in proc.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_home(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    isolated_home.chmod(0o500)
    script = write_script(tmp_path / "s.json", [{"text": "a"}])
    proc = invoke("run", "x", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    isolated_home.chmod(0o700)
    assert proc.returncode == 1 and "cannot create session folder" in proc.stderr


def test_gc_and_rm(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "a"}, {"text": "b"}])
    for sid in ("old-1", "new-1"):
        invoke("run", "x", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
               "--session-id", sid)
    meta_path = isolated_home / "sessions" / "old-1" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["updated"] = "2020-01-01T00:00:00+00:00"
    meta_path.write_text(json.dumps(meta))
    dry = invoke("sessions", "gc", "--older-than", "30d", "--dry-run", "-C", str(workspace))
    assert "would remove old-1" in dry.stdout and meta_path.exists()
    real = invoke("sessions", "gc", "--older-than", "30d", "--yes", "-C", str(workspace))
    assert "removed old-1" in real.stderr and not meta_path.exists()
    assert (isolated_home / "sessions" / "new-1").exists()
    assert invoke("sessions", "rm", "new-1").returncode == 0
    assert not (isolated_home / "sessions" / "new-1").exists()
    bad = invoke("sessions", "gc", "--older-than", "soon")
    assert bad.returncode == 2 and "invalid duration" in bad.stderr


def test_unwritable_home_is_one_clear_line(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "sessions").write_text("not a folder")  # works as root too, unlike chmod
    script = write_script(tmp_path / "s.json", [{"text": "a"}])
    proc = invoke("run", "x", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: cannot create session folder") and proc.stderr.count("\n") == 1
    assert (isolated_home / "sessions").read_text() == "not a folder"


def test_crash_before_meta_json_still_resumes(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "a"}, {"text": "b"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script)]
    assert invoke("run", "x", *args, "--session-id", "early-1").returncode == 0
    (isolated_home / "sessions" / "early-1" / "meta.json").unlink()
    proc = invoke("resume", "early-1", "again", *args)
    assert proc.returncode == 0, proc.stderr
    assert "rebuilt it from the transcript" in proc.stderr and proc.stdout == "b\n"


def test_crash_before_the_first_turn_keeps_the_prompt(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "did it"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script)]
    assert invoke("run", "the very first prompt", *args, "--session-id", "pre-1").returncode == 0
    folder = isolated_home / "sessions" / "pre-1"
    header = (folder / "transcript.jsonl").read_text().splitlines()[0]
    (folder / "transcript.jsonl").write_text(header + "\n")  # as if killed before turn 1 began
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(status="running", turns=0, messages=0)  # meta.json as the killed run left it
    (folder / "meta.json").write_text(json.dumps(meta))
    with FakeLLMServer([{"text": "resumed"}]) as server:
        proc = invoke("resume", "pre-1", *args[:2], "--provider", "openai", "--api-base",
                      server.openai_base_url, env=KEY)
        sent = server.requests[0].body["messages"]
    assert proc.returncode == 0, proc.stderr
    assert sent[1:] == [{"role": "user", "content": "the very first prompt"}]


def test_crash_between_meta_and_transcript_keeps_the_prompt(tmp_path: Path, workspace: Path,
                                                            isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "first"}, {"text": "second"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script)]
    assert invoke("run", "keep me", *args, "--session-id", "gap-1").returncode == 0
    folder = isolated_home / "sessions" / "gap-1"
    (folder / "transcript.jsonl").unlink()
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(status="running", turns=0, messages=0)  # meta.json as create() first writes it
    (folder / "meta.json").write_text(json.dumps(meta))
    proc = invoke("resume", "gap-1", *args, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    exported = json.loads(invoke("sessions", "export", "gap-1", "--format", "json").stdout)
    assert [m["content"] for m in exported["messages"] if m["role"] == "user"] == ["keep me"]
