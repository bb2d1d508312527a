"""Anthropic extended thinking through the CLI (issue 30): the flags, the thinking blocks sent
back byte for byte across a tool-use turn (and after a `kill -9` and `resume`), and what the
user sees of them: stream-json `thinking` blocks, usage, the terminal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, json_lines, run_cli, wait_until, write_script
from fakeserver import FakeLLMServer

API_KEY = "sk-test-thinking-0123456789"
THOUGHT = "The tests live in tests/; run them first. Ünïcode ✓ \"quoted\"\n"
SIGNATURE = "EqQBCkgIBRABGAIiQL+/9x==Zs0\u00e9sig"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"
# The blocks as JSON, as the server sent them: they must come back exactly so.
THINKING_BYTES = json.dumps({"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE},
                            ensure_ascii=False, separators=(",", ":")).encode()
REDACTED_BYTES = json.dumps({"type": "redacted_thinking", "data": REDACTED}, separators=(",", ":")).encode()


def thinking_call(**extra: Any) -> dict[str, Any]:
    return {"thinking": [{"thinking": THOUGHT, "signature": SIGNATURE}, {"redacted": REDACTED}],
            "text": "Running them.", "tool_calls": [{"name": "run_shell", "arguments": {"command": "echo ok"},
                                                     "id": "toolu_think_1"}], **extra}


def anthropic(server: FakeLLMServer, *flags: str) -> list[str]:
    return ["--provider", "anthropic", "--api-base", server.anthropic_base_url, "-m", "claude-sonnet-4-5",
            "--no-checkpoints", *flags]


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "whole"])
def test_the_thinking_blocks_go_back_byte_for_byte_with_the_tool_result(streaming: bool, workspace: Path) -> None:
    replies = [thinking_call(usage={"input_tokens": 50, "output_tokens": 300}), {"text": "All green."}]
    with FakeLLMServer(replies) as server:
        extra = [] if streaming else ["--no-stream"]
        proc = invoke("run", *anthropic(server, "--thinking-budget", "2048", "-o", "stream-json", *extra),
                      "run the tests", cwd=workspace, env={"RECURSIVE_API_KEY": API_KEY})
    assert proc.returncode == 0, proc.stderr
    first, second = server.requests
    for request in (first, second):
        assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assert request.body["max_tokens"] > 2048 and "temperature" not in request.body
        assert request.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    reply = second.body["messages"][1]
    assert reply["role"] == "assistant"
    assert [block["type"] for block in reply["content"]] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert THINKING_BYTES + b"," + REDACTED_BYTES + b',{"type":"text"' in second.raw
    # stream-json: the reply's thinking as the Agent SDKs' ThinkingBlock, before its text
    lines = json_lines(proc.stdout)
    assistant = [line for line in lines if line["type"] == "assistant"]
    assert assistant[0]["message"]["content"][:2] == [
        {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED}]
    assert lines[-1]["result"] == "All green."


def test_effort_asks_a_newer_model_for_adaptive_thinking(workspace: Path) -> None:
    with FakeLLMServer([{"text": "ok"}]) as server:
        args = anthropic(server, "--effort", "max")
        args[args.index("claude-sonnet-4-5")] = "claude-opus-4-6"
        proc = invoke("run", *args, "hi", cwd=workspace, env={"RECURSIVE_API_KEY": API_KEY})
    assert proc.returncode == 0, proc.stderr
    body = server.requests[0].body
    assert (body["thinking"], body["output_config"]) == ({"type": "adaptive"}, {"effort": "max"})
    assert "anthropic-beta" not in server.requests[0].headers


def test_effort_and_budget_come_from_the_environment_and_config(workspace: Path, isolated_home: Path) -> None:
    (workspace / ".recursive").mkdir()
    (workspace / ".recursive" / "config.toml").write_text('thinking-budget = 3000\n')
    with FakeLLMServer([{"text": "ok"}, {"text": "ok"}]) as server:
        invoke("run", *anthropic(server), "hi", cwd=workspace,
               env={"RECURSIVE_API_KEY": API_KEY, "RECURSIVE_TRUST_WORKSPACE": "1"})
        invoke("run", *anthropic(server), "hi", cwd=workspace,
               env={"RECURSIVE_API_KEY": API_KEY, "RECURSIVE_THINKING_BUDGET": "5000"})
    assert [r.body["thinking"]["budget_tokens"] for r in server.requests] == [3000, 5000]


@pytest.mark.parametrize("command", [["run"], ["loop", "--max-iterations", "1"], ["goal"], ["chat"]])
@pytest.mark.parametrize(("flag", "accepts"), [
    (["--thinking-budget", "512"], "--thinking-budget: expected a whole number of at least 1024 (got '512')"),
    (["--thinking-budget", "lots"], "--thinking-budget: expected a whole number of at least 1024 (got 'lots')"),
    (["--effort", "extreme"], "--effort: expected low, medium, high or max (got 'extreme')"),
])
def test_a_bad_thinking_value_is_one_line_and_exit_2_on_every_command(command: list[str], flag: list[str],
                                                                      accepts: str, workspace: Path) -> None:
    proc = invoke(*command, *flag, "--provider", "scripted", *([] if command == ["chat"] else ["do it"]),
                  cwd=workspace)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: {accepts}"]


def test_a_bad_value_from_the_environment_is_exit_1_naming_the_variable(workspace: Path) -> None:
    proc = invoke("run", "--provider", "scripted", "hi", cwd=workspace, env={"RECURSIVE_EFFORT": "loud"})
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("error: invalid value for effort (env RECURSIVE_EFFORT): "
                                   "expected low, medium, high or max (got 'loud')")


def test_resume_after_kill_9_sends_the_signed_blocks_back_unchanged(workspace: Path, isolated_home: Path) -> None:
    """The turn is killed while the model is asked for the step after the tool call; resumed,
    the request carries the thinking blocks exactly as the server first sent them."""
    held = threading.Event()
    with FakeLLMServer([thinking_call(), {"text": "never", "hold": held}, {"text": "Done."}]) as server:
        args = [sys.executable, "-m", "recursive_cli", "run", *anthropic(server, "--thinking-budget", "2048"),
                "--session-id", "think-kill", "run the tests"]
        env = {**_env(isolated_home), "RECURSIVE_API_KEY": API_KEY}
        child = subprocess.Popen(args, cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_until(lambda: len(server.requests) == 2)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            held.set()
        assert child.stderr is not None
        child.stderr.close()
        proc = invoke("resume", "think-kill", "--no-checkpoints", "-o", "json", cwd=workspace,
                      env={"RECURSIVE_API_KEY": API_KEY})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == "Done."
    resumed = server.requests[2]
    assert resumed.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}  # (the session's, kept)
    assert THINKING_BYTES + b"," + REDACTED_BYTES in resumed.raw
    assert resumed.body["messages"][1] == server.requests[1].body["messages"][1]


def _env(home: Path) -> dict[str, str]:
    import os

    return {**{k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}, "RECURSIVE_HOME": str(home)}


def test_usage_counts_the_thinking_tokens(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"thinking": "hmm", "text": "ok", "usage": {"input_tokens": 10, "output_tokens": 40, "reasoning_tokens": 30}}])
    proc = invoke("run", "--provider", "scripted", "--script", str(script), "-o", "json", "hi", cwd=workspace)
    result = json.loads(proc.stdout)
    assert result["usage"]["output_tokens_details"] == {"thinking_tokens": 30}
    plain = invoke("run", "--provider", "scripted", "--script", str(script), "--verbose", "hi", cwd=workspace)
    assert "thinking: hmm" in plain.stderr
    assert "(30 thinking)" in plain.stderr


@pytest.mark.parametrize(("args", "said"), [
    (["--thinking", "sometimes"], "error: invalid value for --thinking: 'sometimes' (choose from adaptive, enabled, disabled)"),
    (["--effort", "huge"], "error: invalid value for --effort: 'huge' (choose from low, medium, high, xhigh, max)"),
    (["--max-thinking-tokens", "-5"], "error: invalid value for --max-thinking-tokens: '-5' (expected a whole number of at least 0)"),
])
def test_claudes_thinking_flags_refuse_a_bad_value_with_exit_2(workspace: Path, args: list[str], said: str) -> None:
    proc = run_cli("-p", "hi", "--provider", "scripted", *args, cwd=workspace)
    assert (proc.returncode, proc.stderr.strip(), proc.stdout) == (2, said, "")


@pytest.mark.parametrize(("args", "thinking", "effort"), [
    (["--max-thinking-tokens", "500"], {"type": "enabled", "budget_tokens": 1024}, None),  # (the API's least)
    (["--max-thinking-tokens", "0", "--effort", "low"], None, None),
    (["--effort", "xhigh"], {"type": "adaptive"}, {"effort": "high"}),
    (["--thinking", "adaptive", "--effort", "medium"], {"type": "adaptive"}, {"effort": "medium"}),
])
def test_claudes_thinking_flags_mean_what_claude_code_makes_of_them(workspace: Path, args: list[str],
                                                                    thinking: Any, effort: Any) -> None:
    with FakeLLMServer([{"text": "ok"}]) as server:
        proc = run_cli("-p", "hi", "--provider", "anthropic", "--api-base", server.anthropic_base_url,
                       "-m", "claude-opus-4-6", "--no-checkpoints", *args, cwd=workspace,
                       env={"RECURSIVE_API_KEY": API_KEY})
    assert proc.returncode == 0, proc.stderr
    body = server.requests[0].body
    assert (body.get("thinking"), body.get("output_config")) == (thinking, effort)


def test_a_compaction_drops_the_thinking_of_the_turns_that_are_over() -> None:
    from recursive_cli.core.messages import Message, Reasoning, ToolCall
    from recursive_cli.features.compaction import compacted

    def thinking(n: int, *calls: ToolCall) -> Message:
        return Message(role="assistant", content=f"reply {n}", tool_calls=calls,
                       reasoning=(Reasoning(kind="thinking", text=f"thought {n}", signature=f"sig{n}"),))

    call = ToolCall(id="toolu_1", name="run_shell", arguments='{"command": "ls"}')
    body = [Message.user("one"), thinking(1), Message.user("two"), thinking(2),
            Message.user("three"), thinking(3, call), Message.tool_result(call, "a b")]
    kept = compacted(body, "what happened", 2)
    assert kept[0].content.endswith("what happened")
    assert [m.reasoning is not None for m in kept if m.role == "assistant"] == [False, True]
    assert kept[-2].reasoning == body[5].reasoning  # the turn under way keeps its signed blocks


def test_thinking_is_shown_dimmed_on_a_terminal_and_never_in_the_answer(tmp_path: Path, workspace: Path) -> None:
    from test_terminal import run_with_tty_stderr

    script = write_script(tmp_path / "s.json", [
        {"thinking": "Weighing two options.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"thinking": "The folder is empty.", "text": "Nothing here."}])
    code, out, err = run_with_tty_stderr(
        ["run", "what is here?", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
         "--no-checkpoints"], {"TERM": "xterm-256color", "COLUMNS": "100", "RECURSIVE_HOME": str(tmp_path / "h")})
    assert code == 0
    assert out == "Nothing here.\n"
    assert "\x1b[2;3mWeighing two options." in err and "\x1b[2;3mThe folder is empty." in err  # dim italic


def test_thinking_cut_off_before_its_signature_is_not_kept_to_be_sent_back() -> None:
    from providers import oracle, streams

    cut = (streams._start()
           + streams._block(0, {"type": "thinking", "thinking": "", "signature": ""},
                            [{"type": "thinking_delta", "thinking": "A long thought that"}], stop=False)
           + streams._end("max_tokens", 8192))
    whole = (streams._start()
             + streams._block(0, {"type": "thinking", "thinking": "", "signature": ""},
                              [{"type": "thinking_delta", "thinking": "Short."},
                               {"type": "signature_delta", "signature": "EqSig"}])
             + streams._text(1, "ok") + streams._end("end_turn"))
    assert oracle.ours("anthropic", cut.encode(), 0).thinking == ()
    assert oracle.ours("anthropic", whole.encode(), 0).thinking == (("thinking", "Short.", "EqSig"),)


def test_a_fleet_task_passes_its_effort_and_budget_and_refuses_a_bad_one(tmp_path: Path) -> None:
    from recursive_cli.surfaces.fleet.tasks import TaskSpec, cli_flags

    task = TaskSpec(id="a", prompt="p", effort="high", thinking_budget=2048)
    assert cli_flags(task, None)[:4] == ["--effort", "high", "--thinking-budget", "2048"]
    (tmp_path / "TASKS.jsonl").write_text('{"id": "a", "prompt": "x", "thinking_budget": 100}\n')
    proc = invoke("fleet", "run", "TASKS.jsonl", "--results", "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert "TASKS.jsonl:1: thinking_budget: expected greater than or equal to 1024 (got 100)" in proc.stderr


def test_a_resume_with_another_budget_keeps_it_for_the_next_resume(workspace: Path, tmp_path: Path) -> None:
    with FakeLLMServer([{"text": "one"}, {"text": "two"}, {"text": "three"}]) as server:
        env = {"RECURSIVE_API_KEY": API_KEY}
        invoke("run", *anthropic(server, "--thinking-budget", "2048", "--session-id", "budgets"), "hi",
               cwd=workspace, env=env)
        invoke("resume", "budgets", "--thinking-budget", "4096", "again", cwd=workspace, env=env)
        proc = invoke("resume", "budgets", "once more", cwd=workspace, env=env)
    assert proc.returncode == 0, proc.stderr
    assert [r.body["thinking"]["budget_tokens"] for r in server.requests] == [2048, 4096, 4096]


def test_a_model_refusing_the_thinking_asked_for_is_told_once_naming_the_flag(workspace: Path) -> None:
    refusal = {"error": {"status": 400, "message": "adaptive thinking is not supported on this model"}}
    with FakeLLMServer([refusal]) as server:
        proc = invoke("run", *anthropic(server, "--effort", "high"), "hi", cwd=workspace,
                      env={"RECURSIVE_API_KEY": API_KEY})
        url = server.anthropic_base_url
    assert proc.returncode == 1 and len(server.requests) == 1  # not retried
    assert proc.stderr.splitlines()[0] == (
        f"error: HTTP 400 from {url}: bad request (adaptive thinking is not supported on "
        "this model); --effort high asked for it: this model may take another kind of thinking, or none")


def test_a_reply_of_thinking_alone_is_sent_back_with_something_after_it() -> None:
    from recursive_cli.core.messages import Message, Reasoning
    from recursive_cli.providers.anthropic_provider import EMPTY_TEXT, message_blocks

    reply = Message(role="assistant", reasoning=(Reasoning(kind="thinking", text="t", signature="s"),))
    assert message_blocks(reply) == [{"type": "thinking", "thinking": "t", "signature": "s"},
                                     {"type": "text", "text": EMPTY_TEXT}]
