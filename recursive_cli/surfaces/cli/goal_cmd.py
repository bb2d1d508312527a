"""`recursive goal`: turns until the goal verifiably holds (SPEC §7); and how `resume` continues one."""

from __future__ import annotations

from dataclasses import dataclass

from ...agent import AgentRuntime
from ...core.kernel import TurnOutcome
from ...core.settings import ConfigError, parse_duration
from ...drivers.goal_mode import judge_provider
from .errors import EXIT_USAGE, fail
from .launch import launch, new_launch
from .options import CommonOptions
from .prompt_input import read_prompt


@dataclass
class GoalRequest:
    """The goal's own options, as given on the command line."""

    words: list[str]
    until: str | None
    checks: list[str]
    judge_model: str | None
    max_turns: int
    check_timeout: str


def goal_command(common: CommonOptions, request: GoalRequest) -> int:
    """Exit code of a `goal`: usage errors are 2, configuration errors 1, else the outcome's code."""
    prompt = read_prompt(request.words)
    problem = _usage_problem(prompt, request)
    if problem:
        return fail(problem, EXIT_USAGE)
    check_timeout = parse_duration(request.check_timeout)
    spec = new_launch(common, "goal", prompt)
    if isinstance(spec, int):
        return spec
    try:
        judge = judge_provider(spec.loaded.settings, request.judge_model)
    except ConfigError as exc:
        return fail(str(exc))

    async def work(runtime: AgentRuntime) -> TurnOutcome:
        try:
            return await runtime.run_goal_loop(
                prompt, request.until, request.checks, request.max_turns, check_timeout=check_timeout,
                judge=judge, judge_model=request.judge_model)
        finally:
            if judge is not None:
                await judge.aclose()

    return launch(spec, work)


def _usage_problem(prompt: str, request: GoalRequest) -> str:
    if not prompt:
        return "empty prompt: give a PROMPT argument or pipe text on stdin"
    if not request.until and not request.checks:
        return "a goal needs --until CONDITION, --check CMD (repeatable), or both"
    if any(not check.strip() for check in request.checks):
        return "--check needs a command, not an empty string"
    if request.until is not None and not request.until.strip():
        return "--until needs a condition, not an empty string"
    try:
        seconds = parse_duration(request.check_timeout)
    except ValueError as exc:
        return f"--check-timeout: {exc}"
    return "" if seconds > 0 else "--check-timeout must be more than 0"
