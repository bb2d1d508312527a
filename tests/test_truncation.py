"""Issue 12: the model's output is only acted on when it is whole.

Through the real CLI and the real openai / anthropic SDKs against the loopback server, which
sends what the APIs send: `finish_reason: "length"` or `stop_reason: "max_tokens"` in the middle
of (or right after) a tool call's arguments, streams that end with no finish reason, OpenAI's
`refusal` field — and a provider error after steps that ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, invoke, json_lines
from fakeserver import FakeLLMServer

from recursive_cli.features.sessions.reader import load_session
from recursive_cli.features.sessions.records import TurnEndRecord

API_KEY = "sk-test-truncation-0123456789"
# "responses" is the openai provider over its Responses wire (`--wire responses`).
PROVIDERS = ["openai", "responses", "anthropic"]
MODES = [pytest.param(provider, stream, id=f"{provider}-{'stream' if stream else 'whole'}")
         for provider in PROVIDERS for stream in (True, False)]
FIRST = {"command": "touch HALF_EXECUTED"}
SECOND = {"command": "touch SECOND_CALL && echo the second call ran"}


def cut_reply(cut: int | None = None) -> dict[str, Any]:
    """A reply with two calls, cut `cut` characters into the second one's arguments (default:
    right after them, the JSON whole but the reply still stopped by the output limit)."""
    return {"text": "Creating both files.",
            "tool_calls": [{"name": "run_shell", "arguments": FIRST},
                           {"name": "run_shell", "arguments": SECOND}],
            "cut": len(json.dumps(SECOND)) if cut is None else cut}


def agent(server: FakeLLMServer, provider: str, workspace: Path, *extra: str,
          stream: bool = True) -> CliResult:
    base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
    wire = ["--provider", "openai", "--wire", "responses"] if provider == "responses" else ["--provider", provider]
    return invoke("run", "create the files", "-C", str(workspace), *wire,
                  "--api-base", base, "-m", "fake-model", *([] if stream else ["--no-stream"]),
                  *extra, env={"RECURSIVE_API_KEY": API_KEY})


def result_of(run: CliResult) -> dict[str, Any]:
    (result,) = json_lines(run.stdout)  # `-o json`: one line
    return result


def calls_and_answers(body: dict[str, Any], provider: str) -> tuple[list[str], list[str]]:
    """The tool-call ids a request body holds, and the ids its tool results answer."""
    calls: list[str] = []
    answers: list[str] = []
    if provider == "responses":
        items = body["input"]
        return ([i["call_id"] for i in items if i.get("type") == "function_call"],
                [i["call_id"] for i in items if i.get("type") == "function_call_output"])
    for message in body["messages"]:
        if provider == "openai":
            calls += [call["id"] for call in message.get("tool_calls") or ()]
            answers += [message["tool_call_id"]] if message["role"] == "tool" else []
        elif isinstance(message["content"], list):
            calls += [b["id"] for b in message["content"] if b["type"] == "tool_use"]
            answers += [b["tool_use_id"] for b in message["content"] if b["type"] == "tool_result"]
    return calls, answers


def texts(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", body.get("input")))


# -- 1. a reply cut off at the output limit ------------------------------------------------------


@pytest.mark.parametrize(("provider", "stream"), MODES)
@pytest.mark.parametrize("cut", [9, None], ids=["mid-json", "after-json"])
def test_a_cut_off_reply_runs_none_of_its_calls(provider: str, stream: bool, cut: int | None,
                                                workspace: Path) -> None:
    replies = [cut_reply(cut),
               {"tool_calls": [{"name": "run_shell", "arguments": {"command": "touch AGAIN"}}]},
               {"text": "Both done."}]
    with FakeLLMServer(replies) as server:
        run = agent(server, provider, workspace, "-o", "stream-json", stream=stream)
        bodies = [request.body for request in server.requests]
    assert run.returncode == 0, run.stderr
    assert not (workspace / "HALF_EXECUTED").exists()  # a complete call of a cut-off reply
    assert not (workspace / "SECOND_CALL").exists()
    assert (workspace / "AGAIN").exists()  # the model went on, and its next whole reply ran
    records = json_lines(run.stdout)
    assert records[-1]["subtype"] == "success" and records[-1]["num_turns"] == 3
    (notice,) = [r for r in records if r.get("subtype") == "tool_calls_not_run"]
    assert notice["stop_reason"] == {"openai": "length", "responses": "max_output_tokens"}.get(provider, "max_tokens")
    assert [call["name"] for call in notice["tool_calls"]] == ["run_shell", "run_shell"]
    assert json.loads(notice["tool_calls"][0]["arguments"]) == FIRST  # kept in the record
    assert ("warning: the model's reply was cut off at the output limit; its 2 tool calls "
            "(run_shell, run_shell) did not run") in run.stderr
    # The next request keeps the cut-off reply's text, tells the model, and holds no call
    # that is not answered (nor the cut-off calls at all).
    assert "Creating both files." in texts(bodies[1])
    assert "cut off at the output limit, so none of its tool calls" in texts(bodies[1])
    assert calls_and_answers(bodies[1], provider) == ([], [])
    calls, answers = calls_and_answers(bodies[2], provider)
    assert len(calls) == 1 and calls == answers


@pytest.mark.parametrize(("provider", "stream"), MODES)
def test_two_cut_offs_in_a_row_end_the_turn(provider: str, stream: bool, workspace: Path,
                                           isolated_home: Path) -> None:
    with FakeLLMServer([cut_reply(9), cut_reply(None)]) as server:
        run = agent(server, provider, workspace, "-o", "stream-json", "--session-id", "cut-twice",
                    stream=stream)
        assert len(server.requests) == 2
    assert run.returncode == 1, run.stderr
    records = json_lines(run.stdout)
    result = records[-1]
    assert result["subtype"] == "error_during_execution" and result["is_error"] is True
    assert result["finish_reason"] == "provider_stop"
    assert "cut off at the output limit twice in a row" in result["errors"][0]
    assert "2 tool calls not run" in result["errors"][0]
    assert result["num_turns"] == 2
    assert not (workspace / "HALF_EXECUTED").exists() and not (workspace / "SECOND_CALL").exists()
    notices = [r for r in records if r.get("subtype") == "tool_calls_not_run"]
    assert [len(n["tool_calls"]) for n in notices] == [2, 2]  # both replies are in the record
    session = load_session(isolated_home / "sessions" / "cut-twice")
    assert session.meta.steps == 2
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert all(not m.tool_calls for m in session.messages)  # resuming sends no unpaired call
    assert [r.type for r in session.records].count("tool_calls_not_run") == 2


@pytest.mark.parametrize(("provider", "stream"), MODES)
def test_a_cut_off_text_answer_is_not_a_success(provider: str, stream: bool, workspace: Path) -> None:
    with FakeLLMServer([{"text": "The answer is", "stop": "length"}]) as server:
        run = agent(server, provider, workspace, "-o", "json", stream=stream)
    assert run.returncode == 1
    result = result_of(run)
    assert result["subtype"] == "error_during_execution" and result["result"] == "The answer is"
    assert result["errors"] == ["the model stopped: length (cut off at the output limit)"]


# -- no finish reason ----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_with_no_finish_reason_is_asked_again(provider: str, workspace: Path) -> None:
    """A stream that just ends was cut on the way: nothing of it runs, and the request is sent
    again (a retry, as for a dropped connection)."""
    replies = [{**cut_reply(9), "no_finish": True}, {"text": "Nothing to do."}]
    with FakeLLMServer(replies) as server:
        run = agent(server, provider, workspace, "-o", "stream-json")
        assert len(server.requests) == 2
    assert run.returncode == 0, run.stderr
    assert not (workspace / "HALF_EXECUTED").exists()
    records = json_lines(run.stdout)
    (retry,) = [r for r in records if r.get("subtype") == "api_retry"]
    assert "the stream ended without a" in retry["error"]
    assert records[-1]["result"] == "Nothing to do." and records[-1]["num_turns"] == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_streams_that_never_finish_fail_without_running_anything(provider: str, workspace: Path) -> None:
    never_finished: dict[str, Any] = {**cut_reply(None), "no_finish": True}
    with FakeLLMServer([never_finished] * 6) as server:
        run = agent(server, provider, workspace, "-o", "json")
    assert run.returncode == 1
    result = result_of(run)
    assert result["finish_reason"] == "provider_error" and "without a" in result["errors"][0]
    assert not (workspace / "HALF_EXECUTED").exists()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_whole_body_with_no_finish_reason_runs_no_calls(provider: str, workspace: Path) -> None:
    with FakeLLMServer([{**cut_reply(None), "no_finish": True}]) as server:
        run = agent(server, provider, workspace, "-o", "json", stream=False)
    assert run.returncode == 1
    result = result_of(run)
    assert result["finish_reason"] == "provider_stop"
    assert "2 tool calls not run" in result["errors"][0]
    assert not (workspace / "HALF_EXECUTED").exists()


# -- 2. refusals -----------------------------------------------------------------------------------

REFUSAL = "I'm sorry, but I can't help with that request."


@pytest.mark.parametrize(("provider", "stream"), MODES)
def test_a_refusal_is_the_answer_and_a_provider_stop(provider: str, stream: bool, workspace: Path) -> None:
    with FakeLLMServer([{"refusal": REFUSAL}]) as server:
        run = agent(server, provider, workspace, "-o", "json", stream=stream)
    assert run.returncode == 1
    result = result_of(run)
    assert result["result"] == REFUSAL
    assert result["subtype"] == "error_during_execution" and result["finish_reason"] == "provider_stop"
    assert result["errors"] == [f'the model stopped: refusal ("{REFUSAL}")']


def test_a_refusal_is_shown_in_text_mode(workspace: Path) -> None:
    with FakeLLMServer([{"refusal": REFUSAL}]) as server:
        run = agent(server, "openai", workspace)
    assert run.returncode == 1
    assert f'error: the model stopped: refusal ("{REFUSAL}")' in run.stderr


# -- 3. steps and usage survive a provider error --------------------------------------------------


@pytest.mark.parametrize(("provider", "stream"), MODES)
def test_steps_that_ran_are_counted_after_a_provider_error(provider: str, stream: bool, workspace: Path,
                                                           isolated_home: Path) -> None:
    replies: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo one"}}],
         "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo two"}}],
         "usage": {"input_tokens": 150, "output_tokens": 30}},
        {"error": {"status": 401, "message": "key revoked"}}]
    with FakeLLMServer(replies) as server:
        run = agent(server, provider, workspace, "-o", "json", "--session-id", "after-error",
                    stream=stream)
    assert run.returncode == 1
    result = result_of(run)
    assert result["finish_reason"] == "provider_error" and "key revoked" in result["errors"][0]
    assert result["num_turns"] == 2
    assert result["usage"]["output_tokens"] == 50
    session = load_session(isolated_home / "sessions" / "after-error")
    assert session.meta.steps == 2 and session.meta.usage.output_tokens == 50
    (turn_end,) = [r for r in session.records if isinstance(r, TurnEndRecord)]
    assert turn_end.steps == 2 and turn_end.finish_reason == "provider_error"
    assert turn_end.usage.output_tokens == 50


@pytest.mark.parametrize("provider", PROVIDERS)
def test_steps_are_counted_when_the_context_overflows_mid_turn(provider: str, workspace: Path) -> None:
    """A context-window rejection with nothing older to compact ends the turn like any provider
    error: the step before it still counts."""
    overflow = {"status": 400, "code": "context_length_exceeded",
                "message": "prompt is too long: 215003 tokens > 200000 maximum"}
    replies: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo one"}}]},
        {"error": overflow}]
    with FakeLLMServer(replies) as server:
        run = agent(server, provider, workspace, "-o", "json")
        assert len(server.requests) == 2
    assert run.returncode == 1
    result = result_of(run)
    assert "context window" in result["errors"][0] and result["num_turns"] == 1
