"""Exit codes for automation (issue 31): a model that stays unavailable through every retry
exits 75 (EX_TEMPFAIL, `error_provider_unavailable`), a permanent failure keeps exit 1; and
`--fallback-model M[,M2]` sends the call on to the next model, against the loopback server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import invoke
from fakeserver import FakeLLMServer

KEY = {"RECURSIVE_API_KEY": "sk-test"}
ATTEMPTS = 6  # the request and its 5 retries


def run(server: FakeLLMServer, provider: str, workspace: Path, *extra: str) -> tuple[int, dict, str]:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    proc = invoke("run", "hi", "-C", str(workspace), "--provider", provider, "--api-base", base,
                  "-m", "main-model", "-o", "json", *extra, env=KEY)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [429, 503, 529])
def test_unavailable_after_every_retry_exits_75(provider: str, status: int, workspace: Path) -> None:
    with FakeLLMServer([{"error": {"status": status, "message": "busy"}}] * 10) as server:
        code, result, stderr = run(server, provider, workspace)
        assert len(server.requests) == ATTEMPTS
    assert code == 75
    assert result["subtype"] == "error_provider_unavailable" and result["is_error"] is True
    assert result["finish_reason"] == "provider_unavailable"
    assert [line for line in stderr.splitlines() if line.startswith("error:")] == [f"error: {result['errors'][0]}"]


def test_a_503_forever_exits_75_from_a_real_process(workspace: Path) -> None:
    with FakeLLMServer([{"error": {"status": 503, "message": "down"}}] * 10) as server:
        proc = subprocess.run([sys.executable, "-m", "recursive_cli", "run", "hi", "-C", str(workspace),
                               "--api-base", server.openai_base_url, "-m", "m"], capture_output=True,
                              text=True, env={**__import__("os").environ, **KEY}, timeout=60,
                              stdin=subprocess.DEVNULL)
    assert proc.returncode == 75, proc.stderr
    assert proc.stdout == ""


def test_a_refused_connection_exits_75(workspace: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # (closed again: nothing listens there)
    proc = invoke("run", "hi", "-C", str(workspace), "--api-base", f"http://127.0.0.1:{port}/v1", "-m", "m",
                  "-o", "json", env=KEY)
    assert proc.returncode == 75, proc.stderr
    assert json.loads(proc.stdout)["subtype"] == "error_provider_unavailable"


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_permanent_failure_keeps_exit_1_and_is_not_sent_to_the_fallback(status: int, workspace: Path) -> None:
    with FakeLLMServer([{"error": {"status": status, "message": "no"}}, {"text": "never"}]) as server:
        code, result, _ = run(server, "openai", workspace, "--fallback-model", "spare")
        assert [request.body["model"] for request in server.requests] == ["main-model"]
    assert code == 1 and result["subtype"] == "error_during_execution"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_fallback_model_gets_the_call_after_529s(provider: str, workspace: Path) -> None:
    replies = [{"error": {"status": 529, "message": "overloaded"}}] * ATTEMPTS + [{"text": "from the spare"}]
    with FakeLLMServer(replies) as server:
        code, result, stderr = run(server, provider, workspace, "--fallback-model", "spare-model,last-model")
        models = [request.body["model"] for request in server.requests]
    assert code == 0, stderr
    assert models == ["main-model"] * ATTEMPTS + ["spare-model"]
    assert result["result"] == "from the spare"
    assert list(result["modelUsage"]) == ["spare-model"]  # priced (and counted) on the model that answered
    assert "note: main-model is unavailable (" in stderr and "going on with --fallback-model spare-model" in stderr


def test_each_fallback_in_turn_then_75(workspace: Path) -> None:
    with FakeLLMServer([{"error": {"status": 503, "message": "down"}}] * (3 * ATTEMPTS)) as server:
        code, result, stderr = run(server, "openai", workspace, "--fallback-model", "b,c")
        models = [request.body["model"] for request in server.requests]
    assert models == ["main-model"] * ATTEMPTS + ["b"] * ATTEMPTS + ["c"] * ATTEMPTS
    assert code == 75 and result["subtype"] == "error_provider_unavailable"


def test_the_fallback_stays_for_the_next_calls(workspace: Path) -> None:
    replies = [{"error": {"status": 529}}] * ATTEMPTS + [
        {"tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "done"}]
    with FakeLLMServer(replies) as server:
        code, result, _ = run(server, "openai", workspace, "--fallback-model", "spare")
        models = [request.body["model"] for request in server.requests]
    assert code == 0 and models[-2:] == ["spare", "spare"]
    assert result["modelUsage"]["spare"]["inputTokens"] == 20


def test_a_bad_fallback_list_is_exit_2(workspace: Path) -> None:
    proc = invoke("run", "hi", "-C", str(workspace), "--fallback-model", "a,,b")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --fallback-model: expected model names separated by commas")
