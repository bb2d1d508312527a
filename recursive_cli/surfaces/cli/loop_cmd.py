"""`recursive loop`: an autonomous run through the event-loop driver (SPEC §6)."""

from __future__ import annotations

from ...agent import AgentRuntime
from ...core.kernel import TurnOutcome
from ...features.sessions.store import SessionStore
from .launch import launch, new_launch
from .options import CommonOptions
from .prompt_input import read_prompt


def loop_command(common: CommonOptions, words: list[str], max_iterations: int,
                 max_context_tokens: int | None) -> int:
    """Exit code of a `loop`: usage errors are 2, configuration errors 1, else the outcome's code."""
    prompt = read_prompt(words)
    spec = new_launch(common, "loop", prompt)
    if isinstance(spec, int):
        return spec
    loaded, session_id = spec.loaded, spec.session_id
    folder = None if loaded.settings.no_session else SessionStore(loaded.home).folder(session_id)

    async def work(runtime: AgentRuntime) -> TurnOutcome:
        from ...drivers.event_loop import run_event_loop

        return await run_event_loop(runtime, prompt, max_iterations=max_iterations,
                                    max_context_tokens=max_context_tokens, jobs_folder=folder)

    return launch(spec, work)
