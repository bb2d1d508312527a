"""`recursive goal`: turns until the goal verifiably holds (SPEC §7); and how `resume` continues one."""

from __future__ import annotations

from dataclasses import dataclass

from ..events import FinishReason
from ..kernel import TurnOutcome
from ..providers.base import ChatProvider
from ..runtime import AgentRuntime
from ..sessions.reader import LoadedSession
from ..settings import ConfigError, Settings, load_settings, parse_duration
from .errors import EXIT_USAGE, fail
from .launch import Work, launch, new_launch
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


def judge_provider(settings: Settings, judge_model: str | None) -> ChatProvider | None:
    """A provider for `--judge-model`, or None when the judge uses the run's own provider.

    A scripted run always judges with its own script: its replies are one sequence.
    """
    if not judge_model or judge_model == settings.effective_model or settings.provider == "scripted":
        return None
    from ..providers import make_provider

    return make_provider(settings.model_copy(update={"model": judge_model}))


def resume_work(session: LoadedSession, prompt: str) -> Work:
    """Continue the session's goal with the turns it has left (or a new round if it had ended)."""

    async def work(runtime: AgentRuntime) -> TurnOutcome:
        from ..drivers.goal import resume_goal_loop
        from ..drivers.goal_state import load_goal

        state = load_goal(runtime)
        try:
            judge = _resumed_judge(session, state.judge_model if state else None)
        except ConfigError as exc:
            return TurnOutcome(FinishReason.PROVIDER_ERROR, detail=str(exc))
        if judge is None and state is not None:
            _skip_judge_replies(runtime, state.judge_requests)
        try:
            return await resume_goal_loop(runtime, prompt, judge)
        finally:
            if judge is not None:
                await judge.aclose()

    return work


def _resumed_judge(session: LoadedSession, judge_model: str | None) -> ChatProvider | None:
    """The judge's provider, from the session's settings as `resume` restores them."""
    if not judge_model:
        return None
    from ..sessions.resume import restore_settings

    settings, _ = restore_settings(load_settings({}), session.meta)
    return judge_provider(settings, judge_model)


def _skip_judge_replies(runtime: AgentRuntime, requests: int) -> None:
    """A scripted provider's replay already skipped the turns' replies; skip the judge's too."""
    from ..providers.scripted import ScriptedProvider

    if isinstance(runtime.provider, ScriptedProvider):
        runtime.provider.consumed += requests
