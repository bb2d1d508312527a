"""`recursive goal`: turns until the goal verifiably holds (SPEC §7); and how `resume` continues one."""

from __future__ import annotations

from dataclasses import dataclass

from ...agent import AgentRuntime
from ...core.budget import unenforceable_budget
from ...core.errors import CliError
from ...core.kernel import TurnOutcome
from ...core.messages import CONTINUE
from ...core.settings import ConfigError, parse_duration
from ...drivers.goal_mode import judge_provider
from ...launch.errors import EXIT_USAGE
from ...launch.options import CommonOptions, RunOptions
from ...launch.prompt_input import empty_prompt_message, read_prompt
from ...launch.run import agent_launch, launch
from ...launch.sessions import resumed_work


@dataclass
class GoalRequest:
    """The goal's own options, as given on the command line."""

    words: list[str]
    until: str | None
    checks: list[str]
    judge_model: str | None
    max_turns: int
    check_timeout: str


def goal_command(common: CommonOptions, request: GoalRequest, options: RunOptions | None = None) -> int:
    """Exit code of a `goal`: usage errors are 2, configuration errors 1, else the outcome's code.

    With `-c` the goal is worked on in the conversation of this workspace's latest session; with
    `-c` and neither PROMPT nor a goal (--until, --check) that session carries on as `resume
    --last` would have it; with a goal and no PROMPT, the prompt is "Continue.".
    """
    options = options or RunOptions()
    prompt = read_prompt(request.words, read_stdin=not options.no_stdin)
    has_goal = bool(request.until or request.checks)
    if options.continue_session and not prompt and has_goal:
        prompt = CONTINUE
    carry_on = options.continue_session and not prompt
    problem = "" if carry_on else _usage_problem(prompt, request, read_stdin=not options.no_stdin)
    if problem:
        raise CliError(problem, EXIT_USAGE)
    check_timeout = parse_duration(request.check_timeout)
    spec = agent_launch(common, options, "goal", prompt)
    if spec.resumed is not None and carry_on:
        return launch(spec, resumed_work("", spec.resumed))
    prompt = spec.output.prompt(prompt)
    refused = unenforceable_budget(spec.loaded, request.judge_model)  # an unpriced judge too
    try:
        if refused:
            raise CliError(refused, EXIT_USAGE)
        try:
            judge = judge_provider(spec.loaded.settings, request.judge_model)
        except ConfigError as exc:
            raise CliError(str(exc)) from exc
    except CliError:
        if spec.lock is not None:  # the session `-c` locked is let go
            spec.lock.release()
        raise

    async def work(runtime: AgentRuntime) -> TurnOutcome:
        try:
            return await runtime.run_goal_loop(
                prompt, request.until, request.checks, request.max_turns, check_timeout=check_timeout,
                judge=judge, judge_model=request.judge_model)
        finally:
            if judge is not None:
                await judge.aclose()

    return launch(spec, work)


def _usage_problem(prompt: str, request: GoalRequest, read_stdin: bool = True) -> str:
    if not prompt:
        return empty_prompt_message(read_stdin)
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
