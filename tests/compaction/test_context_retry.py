"""A context-length 400 from the provider: compact once and retry the request (SPEC §4, issue 8)."""

from __future__ import annotations

import json
from pathlib import Path

from clitools import invoke, json_lines
from fakeserver import FakeLLMServer

KEY = {"RECURSIVE_API_KEY": "sk-test"}
OVERFLOW = {"status": 400, "code": "context_length_exceeded",
            "message": "This model's maximum context length is 128000 tokens."}


def test_context_overflow_compacts_then_retries(workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": f"answer {i}"} for i in range(5)]) as server:
        base = ["-C", str(workspace), "--api-base", server.openai_base_url]
        assert invoke("run", "turn 0", *base, "--session-id", "big-1", env=KEY).returncode == 0
        for i in range(1, 5):
            assert invoke("resume", "big-1", f"turn {i}", *base, env=KEY).returncode == 0
    replies = [{"error": OVERFLOW}, {"text": "SUMMARY of turns 0 and 1"}, {"text": "fits now"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("resume", "big-1", "turn 5", "-C", str(workspace), "--api-base",
                      server.openai_base_url, "-o", "stream-json", env=KEY)
        bodies = [r.body for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    assert lines[-1]["result"] == "fits now"
    assert any(line.get("subtype") == "compaction" for line in lines)
    assert len(bodies) == 3 and "tools" not in bodies[1]  # the summary call has no tools
    retried = [m["content"] for m in bodies[2]["messages"]]
    assert len(retried) < len(bodies[0]["messages"])
    assert any("SUMMARY of turns 0 and 1" in (text or "") for text in retried)
    assert "turn 0" not in json.dumps(bodies[2]["messages"][1:])
    assert retried[-1] == "turn 5"


def test_steps_before_an_overflow_still_count(workspace: Path, isolated_home: Path) -> None:
    """A rejection after some steps compacts and retries; the steps already taken stay counted."""
    with FakeLLMServer([{"text": f"answer {i}"} for i in range(3)]) as server:
        base = ["-C", str(workspace), "--api-base", server.openai_base_url]
        assert invoke("run", "turn 0", *base, "--session-id", "big-2", env=KEY).returncode == 0
        for i in range(1, 3):
            assert invoke("resume", "big-2", f"turn {i}", *base, env=KEY).returncode == 0
    call = {"name": "list_dir", "arguments": {"path": "."}}
    replies = [{"tool_calls": [call]}, {"tool_calls": [call]}, {"error": OVERFLOW},
               {"text": "SUMMARY"}, {"text": "fits now"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("resume", "big-2", "turn 3", "-C", str(workspace), "--api-base",
                      server.openai_base_url, "-o", "json", env=KEY)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "fits now"
    assert result["num_turns"] == 3  # the agent's calls: two tool steps before the rejection, one after
