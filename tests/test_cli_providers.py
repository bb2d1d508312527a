"""`recursive run` through the real openai and anthropic SDKs against a loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import invoke, json_lines
from fakeserver import FakeLLMServer

API_KEY = "sk-test-SECRET-0123456789"


def provider_args(server: FakeLLMServer, provider: str) -> tuple[list[str], dict[str, str]]:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return ["--provider", provider, "--api-base", base, "-m", "fake-model"], {"RECURSIVE_API_KEY": API_KEY}


def tool_messages(body: dict, provider: str) -> list[str]:
    """Tool-call ids answered in a request body, in order."""
    if provider == "openai":
        return [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    return [block["tool_use_id"] for m in body["messages"] if isinstance(m["content"], list)
            for block in m["content"] if block.get("type") == "tool_result"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("streaming", [True, False])
def test_multi_step_tool_conversation(provider: str, streaming: bool, workspace: Path) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    replies = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}]},
        {"text": "Editing.", "tool_calls": [
            {"name": "edit_file", "arguments": {"path": "app.py", "old_string": "hi", "new_string": "hello"}},
            {"name": "run_shell", "arguments": {"command": "python3 app.py"}}]},
        {"text": "Changed the greeting to hello."},
    ]
    with FakeLLMServer(replies) as server:
        args, env = provider_args(server, provider)
        extra = [] if streaming else ["--no-stream"]
        proc = invoke("run", "greet better", "-C", str(workspace), *args, *extra, env=env)
        bodies = [r.body for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Changed the greeting to hello.\n"
    assert (workspace / "app.py").read_text() == "print('hello')\n"
    assert len(bodies) == 3 and all(b.get("stream", False) is streaming for b in bodies)
    assert len(tool_messages(bodies[1], provider)) == 1
    assert len(tool_messages(bodies[2], provider)) == 3
    last = bodies[2]["messages"][-1]
    if provider == "openai":
        assert bodies[0]["messages"][0]["role"] == "system"
        assert "hello" in last["content"]  # the run_shell output went back to the model
    else:
        assert "system" in bodies[0] and bodies[0]["messages"][0]["role"] == "user"
        assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result"]


def test_stdin_is_appended_to_the_prompt(workspace: Path) -> None:
    with FakeLLMServer([{"text": "looks fine"}]) as server:
        args, env = provider_args(server, "openai")
        proc = invoke("run", "review this diff", "-C", str(workspace), *args, "-o", "json",
                      env=env, input="-old\n+new\n")
        user = server.requests[0].body["messages"][1]
    assert proc.returncode == 0, proc.stderr
    assert user == {"role": "user", "content": "review this diff\n\n```\n-old\n+new\n```"}


def test_retries_emit_api_retry_events(workspace: Path) -> None:
    replies = [{"error": {"status": 429, "message": "slow down", "headers": {"retry-after": "0"}}},
               {"error": {"status": 503, "message": "busy"}},
               {"text": "finally"}]
    with FakeLLMServer(replies) as server:
        args, env = provider_args(server, "anthropic")
        proc = invoke("run", "x", "-C", str(workspace), *args, "-o", "stream-json", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    retries = [line for line in lines if line.get("subtype") == "api_retry"]
    assert [r["error_status"] for r in retries] == [429, 503]
    # `retry-after: 0` asks for no wait: as in the SDK, the backoff (from RECURSIVE_RETRY_BASE_DELAY, 0.01 s)
    assert retries[0]["attempt"] == 1 and retries[0]["retry_delay_ms"] <= 10
    assert lines[-1]["result"] == "finally"


def test_bad_request_fails_fast(workspace: Path) -> None:
    with FakeLLMServer([{"error": {"status": 400, "message": "unknown parameter: foo"}}]) as server:
        args, env = provider_args(server, "openai")
        proc = invoke("run", "x", "-C", str(workspace), *args, env=env)
        assert len(server.requests) == 1
    assert proc.returncode == 1
    error_lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "400" in error_lines[0] and "unknown parameter: foo" in error_lines[0]
    assert "Traceback" not in proc.stderr


def test_unreachable_server_is_one_clear_line(workspace: Path) -> None:
    proc = invoke("run", "x", "-C", str(workspace), "--api-base", "http://127.0.0.1:9/v1",
                  env={"RECURSIVE_API_KEY": API_KEY, "RECURSIVE_RETRY_BASE_DELAY": "0.001"})
    assert proc.returncode == 75  # a refused connection: unavailable (issue 31)
    assert "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def test_api_key_is_never_written(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    replies = [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo done"}}]},
               {"error": {"status": 401, "message": "bad key"}}]
    with FakeLLMServer(replies) as server:
        args, env = provider_args(server, "openai")
        proc = invoke("run", "x", "-C", str(workspace), *args, "-o", "stream-json", "-v", env=env)
    assert proc.returncode == 1
    assert API_KEY not in proc.stdout and API_KEY not in proc.stderr
    for root in (isolated_home, workspace):
        for path in root.rglob("*"):
            if path.is_file():
                assert API_KEY.encode() not in path.read_bytes(), path
