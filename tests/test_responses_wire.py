"""The openai provider over its Responses wire, through the real CLI against the loopback
server: which wire a run speaks, a two-step tool-use run whose second request carries the call,
its output and the model's encrypted reasoning, and a resume that sends them again from the
session's transcript alone (the wire keeps nothing on the server: `store: false`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, invoke, json_lines
from fakeserver import FakeLLMServer

from recursive_cli.core.settings import Settings
from recursive_cli.providers import make_provider, openai_wire

KEY = {"RECURSIVE_API_KEY": "sk-test-responses"}
REASONING = {"summary": "The file list first.", "encrypted": "gAAAAB-encrypted-reasoning-1"}
USAGE = {"input_tokens": 1500, "output_tokens": 120, "cache_read_tokens": 1024, "reasoning_tokens": 80}


def run(server: FakeLLMServer, workspace: Path, *extra: str, env: dict[str, str] | None = None) -> CliResult:
    return invoke("run", "list the files", "-C", str(workspace), "--api-base", server.openai_base_url,
                  "-m", "gpt-5", *extra, env={**KEY, **(env or {})})


@pytest.mark.parametrize(("flags", "env", "path"), [
    ((), {}, "/v1/chat/completions"),  # another server than api.openai.com: chat
    (("--wire", "responses"), {}, "/v1/responses"),
    ((), {"RECURSIVE_WIRE": "responses"}, "/v1/responses"),
    (("--wire", "chat"), {"RECURSIVE_WIRE": "responses"}, "/v1/chat/completions"),  # the flag wins
], ids=["default", "flag", "env", "flag-over-env"])
def test_the_wire_a_run_speaks(flags: tuple[str, ...], env: dict[str, str], path: str, workspace: Path) -> None:
    with FakeLLMServer([{"text": "Nothing here."}]) as server:
        result = run(server, workspace, *flags, env=env)
    assert result.returncode == 0, result.stderr
    assert [request.path for request in server.requests] == [path]


def test_the_wire_from_the_config_file(workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('wire = "responses"\n')
    with FakeLLMServer([{"text": "Nothing here."}]) as server:
        result = run(server, workspace)
    assert result.returncode == 0, result.stderr
    assert server.requests[0].path == "/v1/responses"


def test_a_bad_wire_is_refused(workspace: Path) -> None:
    result = invoke("run", "hi", "-C", str(workspace), "--wire", "soap", env=KEY)
    assert result.returncode == 2
    assert "--wire" in result.stderr and "responses" in result.stderr


@pytest.mark.parametrize(("base", "wire"), [(None, "responses"), ("https://api.openai.com/v1", "responses"),
                                            ("https://openrouter.ai/api/v1", "chat"),
                                            ("http://127.0.0.1:11434/v1", "chat")])
def test_the_default_wire_follows_the_base_url(base: str | None, wire: str) -> None:
    settings = Settings(api_key="sk-test", api_base=base)
    assert openai_wire(settings) == wire
    provider = make_provider(settings, session_id="s1")
    assert type(provider).__name__ == ("OpenAIResponsesProvider" if wire == "responses" else "OpenAIProvider")


def items(request_body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in request_body["input"] if item.get("type") == kind]


def test_a_tool_use_run_sends_back_the_call_its_output_and_the_reasoning(workspace: Path,
                                                                          isolated_home: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    replies = [{"reasoning": REASONING, "text": "Listing.", "usage": USAGE,
                "tool_calls": [{"id": "call_ls", "name": "run_shell", "arguments": {"command": "ls"}}]},
               {"text": "One file: notes.txt.", "usage": USAGE}]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--wire", "responses", "--session-id", "resp-1", "-o", "json")
    assert result.returncode == 0, result.stderr
    (answer,) = json_lines(result.stdout)
    assert answer["result"] == "One file: notes.txt." and answer["num_turns"] == 2
    assert answer["usage"]["cache_read_input_tokens"] == 2048  # cached tokens, of both requests
    first, second = (request.body for request in server.requests)
    for body in (first, second):
        assert body["store"] is False and body["prompt_cache_key"] == "resp-1"
        assert body["include"] == ["reasoning.encrypted_content"]
    (reasoning,) = items(second, "reasoning")
    assert reasoning == {"type": "reasoning", "summary": [{"type": "summary_text", "text": REASONING["summary"]}],
                         "encrypted_content": REASONING["encrypted"]}
    (call,) = items(second, "function_call")
    assert call == {"type": "function_call", "call_id": "call_ls", "name": "run_shell",
                    "arguments": json.dumps({"command": "ls"})}
    (output,) = items(second, "function_call_output")
    assert output["call_id"] == "call_ls" and "notes.txt" in output["output"]
    # In order: the reasoning, the text, the call, its output, as the model produced them.
    kinds = [item.get("type") or item["role"] for item in second["input"][2:]]
    assert kinds == ["reasoning", "assistant", "function_call", "function_call_output"]

    # Resumed: the next request holds them again, as they were, read from the transcript alone.
    with FakeLLMServer([{"text": "Still one file."}]) as server:
        resumed = invoke("resume", "resp-1", "and now?", "-C", str(workspace), "--api-base",
                         server.openai_base_url, "-m", "gpt-5", "--wire", "responses", "-o", "json", env=KEY)
    assert resumed.returncode == 0, resumed.stderr
    (again,) = (request.body for request in server.requests)
    assert items(again, "reasoning") == [reasoning]
    assert items(again, "function_call") == [call] and items(again, "function_call_output") == [output]
    assert again["input"][-1] == {"role": "user", "content": "and now?"}
    assert again["prompt_cache_key"] == "resp-1"


def test_reasoning_tokens_are_counted(workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([{"reasoning": REASONING, "text": "Done.", "usage": USAGE}]) as server:
        result = run(server, workspace, "--wire", "responses", "--session-id", "resp-2")
    assert result.returncode == 0, result.stderr
    transcript = (isolated_home / "sessions" / "resp-2" / "transcript.jsonl").read_text()
    assert '"reasoning_tokens":80' in transcript.replace(" ", "")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_rate_limit_is_retried_as_on_the_chat_wire(stream: bool, workspace: Path) -> None:
    replies = [{"error": {"status": 429, "message": "Rate limit reached", "headers": {"retry-after": "0"}}},
               {"text": "Done after a wait."}]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--wire", "responses", "-o", "stream-json",
                     *([] if stream else ["--no-stream"]))
        assert len(server.requests) == 2
    assert result.returncode == 0, result.stderr
    records = json_lines(result.stdout)
    (retry,) = [r for r in records if r.get("subtype") == "api_retry"]
    assert retry["error_status"] == 429
    assert records[-1]["result"] == "Done after a wait."


def test_a_bad_request_is_one_line_and_not_retried(workspace: Path) -> None:
    message = "Unsupported parameter: 'reasoning.effort' is not supported with this model."
    with FakeLLMServer([{"error": {"status": 400, "message": message}}]) as server:
        result = run(server, workspace, "--wire", "responses")
        assert len(server.requests) == 1
        base = server.openai_base_url
    assert result.returncode == 1
    assert f"HTTP 400 from {base}: " in result.stderr and f"({message})" in result.stderr


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_the_bench_servers_responses_route_runs_a_session(stream: bool, workspace: Path) -> None:
    """bench/instant_server.py answers /v1/responses as Codex CLI reads it; we read it too."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("instant_server", Path(__file__).parents[1] / "bench" / "instant_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.InstantServer(5).start_thread()
    result = invoke("run", "go", "-C", str(workspace), "--api-base", f"http://127.0.0.1:{server.port}/v1", "-m", "gpt-5",
                    "--wire", "responses", "--no-session", "-o", "json", *([] if stream else ["--no-stream"]), env=KEY)
    assert result.returncode == 0, result.stderr
    (answer,) = json_lines(result.stdout)
    assert answer["num_turns"] == 5 and answer["result"] == module.FINAL_TEXT
    assert server.paths == ["/v1/responses"] * 5


def test_the_reasoning_summary_is_shown_as_thinking_with_verbose(workspace: Path) -> None:
    with FakeLLMServer([{"text": "Nothing here.", "reasoning": REASONING}]) as server:
        result = run(server, workspace, "--wire", "responses", "-v")
    assert result.returncode == 0, result.stderr
    assert "thinking: The file list first." in result.stderr
    assert result.stdout.strip() == "Nothing here."


@pytest.mark.parametrize(("flags", "sent"), [((), None), (("--effort", "low"), "low"), (("--effort", "max"), "high")])
def test_effort_on_the_chat_wire_is_reasoning_effort(flags: tuple[str, ...], sent: str | None, workspace: Path) -> None:
    with FakeLLMServer([{"text": "Nothing here."}]) as server:
        result = run(server, workspace, "--wire", "chat", *flags)
    assert result.returncode == 0, result.stderr
    assert server.requests[0].body.get("reasoning_effort") == sent
