"""The goal mode's entry in the driver table: its judge's provider, its prompt note, its resume."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.events import FinishReason
from ..core.kernel import TurnOutcome
from ..core.settings import ConfigError, Settings, load_settings

if TYPE_CHECKING:
    from ..core.provider import ChatProvider
    from ..core.runtime import RuntimeCore
    from ..features.sessions.reader import LoadedSession

NOTE = ("Mode: goal. Keep working until the goal of this run (stated at the end) holds; it is "
        "verified after each of your turns.")


def judge_provider(settings: Settings, judge_model: str | None) -> ChatProvider | None:
    """A provider for `--judge-model`, or None when the judge uses the run's own provider.

    A scripted run always judges with its own script: its replies are one sequence.
    """
    if not judge_model or judge_model == settings.effective_model or settings.provider == "scripted":
        return None
    from ..providers import make_provider

    return make_provider(replace(settings, model=judge_model))


def resumed_judge(session: LoadedSession, judge_model: str | None) -> ChatProvider | None:
    """The judge's provider, from the session's settings as `resume` restores them."""
    if not judge_model:
        return None
    from ..features.sessions.resume import restore_settings

    settings, _ = restore_settings(load_settings({}), session.meta)
    return judge_provider(settings, judge_model)


class GoalModeDriver:
    """`recursive goal`: turns until the goal verifiably holds (SPEC §7)."""

    mode = "goal"
    note = NOTE

    def install(self, runtime: RuntimeCore) -> None:
        """A goal needs no tools of its own."""

    async def start(self, runtime: RuntimeCore, prompt: str) -> TurnOutcome:
        """A goal set beforehand with `set_goal`, worked on from `prompt`."""
        from .goal import run_goal_loop

        return await run_goal_loop(runtime, prompt)

    async def resume(self, runtime: RuntimeCore, session: LoadedSession, prompt: str) -> TurnOutcome:
        """Continue the session's goal with the turns it has left (or a new round if it had ended)."""
        from .goal import resume_goal_loop
        from .goal_state import load_goal

        state = load_goal(runtime)
        try:
            judge = resumed_judge(session, state.judge_model if state else None)
        except ConfigError as exc:
            return TurnOutcome(FinishReason.INTERNAL_ERROR, detail=str(exc))
        try:
            return await resume_goal_loop(runtime, prompt, judge)
        finally:
            if judge is not None:
                await judge.aclose()
