"""The judge: strict JSON parsing, one retry, evidence in its prompt, and `--judge-model` on the wire."""

from __future__ import annotations

import asyncio
import json

from clitools import invoke
from fakeserver import FakeLLMServer

from recursive_cli.core.budget import Budget
from recursive_cli.core.interrupt import InterruptToken
from recursive_cli.core.messages import Message, ToolCall
from recursive_cli.core.provider import NullHooks
from recursive_cli.drivers.checks import CheckResult
from recursive_cli.drivers.judge import GoalJudge, parse_verdict, render_transcript
from recursive_cli.providers.scripted import ScriptedProvider


def test_parse_verdict_is_strict() -> None:
    good = parse_verdict('  {"achieved": true, "reason": " all green "}\n')
    assert good is not None and good.achieved is True and good.reason == "all green"
    fenced = parse_verdict('```json\n{"achieved": false, "reason": "no"}\n```')
    assert fenced is not None and fenced.achieved is False
    for bad in ("Yes, it is achieved.", '{"achieved": "yes", "reason": "x"}', '{"achieved": true}',
                '[true, "x"]', 'Sure! {"achieved": true, "reason": "x"}', '{"achieved": 1, "reason": "x"}',
                ""):
        assert parse_verdict(bad) is None, bad


def _judge(replies: list[dict]) -> tuple[GoalJudge, ScriptedProvider, Budget]:
    provider = ScriptedProvider(replies)
    budget = Budget()
    return GoalJudge(provider, budget, NullHooks(), InterruptToken()), provider, budget


def test_malformed_answer_gets_one_retry() -> None:
    judge, provider, budget = _judge([{"text": "It looks done."},
                                      {"text": '{"achieved": true, "reason": "tests pass"}'}])
    verdict = asyncio.run(judge.judge("tests pass", "fix it", [Message.user("fix it")], []))
    assert verdict.achieved is True and verdict.valid is True and verdict.reason == "tests pass"
    assert judge.requests == 2 and provider.consumed == 2
    assert budget.usage.input_tokens == 20  # both requests charged


def test_two_malformed_answers_count_as_not_achieved() -> None:
    judge, provider, _ = _judge([{"text": "It looks done."}, {"text": "Really, it is."},
                                 {"text": '{"achieved": true, "reason": "never asked"}'}])
    verdict = asyncio.run(judge.judge("tests pass", "fix it", [], []))
    assert verdict.achieved is False and verdict.valid is False
    assert "Really, it is." in verdict.reason and provider.consumed == 2


def test_render_transcript_keeps_the_newest_messages_and_tool_evidence() -> None:
    call = ToolCall(id="c1", name="run_shell", arguments='{"command": "pytest -q"}')
    messages = [Message.system("sys"), Message.user("old " * 5000),
                Message(role="assistant", content="", tool_calls=(call,)),
                Message.tool_result(call, "3 passed", is_error=False), Message(role="assistant", content="done")]
    text = render_transcript(messages, 2000)
    assert "[earlier messages left out]" in text and "sys" not in text
    assert '[tool call] run_shell {"command": "pytest -q"}' in text
    assert text.index("3 passed") < text.index("[assistant]\ndone")


def test_judge_model_is_used_for_the_judge_without_tools(workspace) -> None:
    replies = [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo EVIDENCE-42"}}]},
               {"text": "done"},
               {"text": '{"achieved": true, "reason": "the output shows EVIDENCE-42"}'}]
    with FakeLLMServer(replies) as server:
        proc = invoke("goal", "print the evidence", "--until", "EVIDENCE-42 was printed", "-C",
                      str(workspace), "--provider", "openai", "--api-base", server.openai_base_url,
                      "-m", "main-model", "--judge-model", "judge-model", "-o", "json",
                      "--check", "true", env={"RECURSIVE_API_KEY": "sk-test"})
        bodies = [request.body for request in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert [body["model"] for body in bodies] == ["main-model", "main-model", "judge-model"]
    assert "tools" in bodies[0] and not bodies[2].get("tools")
    assert "Goal of this run: keep working until this condition holds: EVIDENCE-42 was printed" in (
        bodies[0]["messages"][0]["content"])
    question = bodies[2]["messages"][-1]["content"]
    assert "EVIDENCE-42 was printed" in question and "$ true  (exit 0)" in question
    assert "[tool result]\nEVIDENCE-42" in question  # the judge sees the tool output itself
    verdict = json.loads(proc.stdout)["goal"]["verdicts"][0]["judge"]
    assert verdict["model"] == "judge-model" and verdict["achieved"] is True


def test_check_result_status_lines() -> None:
    assert CheckResult(command="x", exit_code=0).passed
    assert CheckResult(command="x", exit_code=2).status() == "exit 2"
    timed = CheckResult(command="x", exit_code=None, timed_out=True, duration_s=5.01)
    assert not timed.passed and timed.status() == "timed out after 5 s and was killed"
