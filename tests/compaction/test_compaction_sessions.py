"""Compaction through the CLI: recorded in the session, rebuilt on resume, in `run` and `loop`."""

from __future__ import annotations

import json
from pathlib import Path

from clitools import invoke, json_lines, write_script
from fakeserver import FakeLLMServer

from recursive_cli.features.compaction import SUMMARY_HEADER, SUMMARY_SYSTEM
from recursive_cli.features.sessions.reader import load_session

KEY = {"RECURSIVE_API_KEY": "sk-test"}


def shell_turn(n: int, usage: int = 100) -> list[dict]:
    return [{"tool_calls": [{"name": "run_shell", "arguments": {"command": f"echo out-{n}"}}]},
            {"text": f"done {n}", "usage": {"input_tokens": usage, "output_tokens": 5}}]


def assert_paired(messages: list[dict]) -> None:
    """OpenAI request messages: each assistant's tool calls answered right after it, in order."""
    expected: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert expected and message["tool_call_id"] == expected.pop(0), message
        else:
            assert not expected, f"unanswered calls {expected}"
            expected = [call["id"] for call in message.get("tool_calls") or []]
    assert not expected


def test_a_compacted_run_resumes_from_its_summary(workspace: Path, isolated_home: Path) -> None:
    # gpt-4's window is 8,192 tokens: turn 3 reports 7,000, so turn 4 starts with a compaction.
    replies = (shell_turn(1) + shell_turn(2) + shell_turn(3, usage=7_000)
               + [{"text": "SUMMARY-OF-TURN-ONE"}] + shell_turn(4) + [{"text": "five"}])
    with FakeLLMServer(replies) as server:
        base = ["-C", str(workspace), "--api-base", server.openai_base_url, "-m", "gpt-4"]
        first = invoke("run", "task 1", "--session-id", "cmp", *base, env=KEY)
        assert first.returncode == 0, first.stderr
        stderr = {}
        for n in (2, 3, 4, 5):
            proc = invoke("resume", "cmp", f"task {n}", env=KEY)
            assert proc.returncode == 0, proc.stderr
            stderr[n] = proc.stderr
        assert "compacted 4 earlier messages into a summary" in stderr[4]
        assert "compacted" not in stderr[3] + stderr[5]
        requests = [r.body for r in server.requests]

    summariser = requests[6]
    assert not summariser.get("tools")
    assert summariser["messages"][0] == {"role": "system", "content": SUMMARY_SYSTEM}
    assert "task 1" in summariser["messages"][1]["content"]

    last = requests[-1]["messages"]
    assert last[0]["role"] == "system" and last[0]["content"] == requests[0]["messages"][0]["content"]
    assert last[1] == {"role": "user", "content": SUMMARY_HEADER + "SUMMARY-OF-TURN-ONE"}
    users = [m["content"] for m in last if m["role"] == "user"]
    assert users[1:] == ["task 2", "task 3", "task 4", "task 5"]
    assert not any("out-1" in json.dumps(m) for m in last)
    assert_paired(last)

    records = [json.loads(line) for line in
               (isolated_home / "sessions" / "cmp" / "transcript.jsonl").read_text().splitlines()]
    (compaction,) = [r for r in records if r["type"] == "compaction"]
    assert compaction["replaced"] == 4 and compaction["summary"] == "SUMMARY-OF-TURN-ONE"
    assert compaction["turn"] == 4
    loaded = load_session(isolated_home / "sessions" / "cmp")
    assert loaded.messages[0].content == SUMMARY_HEADER + "SUMMARY-OF-TURN-ONE"
    assert [m.content for m in loaded.messages if m.role == "user"][1:] == [
        "task 2", "task 3", "task 4", "task 5"]
    assert not loaded.warnings


def test_a_loop_compacts_at_max_context_tokens(tmp_path: Path, workspace: Path) -> None:
    def wake(n: int) -> dict:
        return {"tool_calls": [{"name": "schedule_wakeup",
                                "arguments": {"delay_seconds": 0.05, "prompt": f"turn {n}"}}]}

    script = write_script(tmp_path / "script.json", [
        wake(2), {"text": "t1"}, wake(3), {"text": "t2"},
        wake(4), {"text": "t3", "usage": {"input_tokens": 3_500, "output_tokens": 5}},
        {"text": "THE SUMMARY"}, {"text": "t4"},
    ])
    proc = invoke("loop", "turn 1", "-C", str(workspace), "--max-context-tokens", "4000",
                  "--provider", "scripted", "--script", str(script), "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    (compaction,) = [line for line in lines if line.get("subtype") == "compaction"]
    assert compaction["summary"] == "THE SUMMARY" and compaction["replaced"] == 4
    assert lines[-1]["result"] == "t4"
