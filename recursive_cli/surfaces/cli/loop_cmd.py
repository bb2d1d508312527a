"""`recursive loop`: an autonomous run through the event-loop driver (SPEC §6)."""

from __future__ import annotations

from ...agent import AgentRuntime
from ...core.kernel import TurnOutcome
from ...features.sessions.store import SessionStore
from ...launch.options import CommonOptions, RunOptions
from ...launch.prompt_input import read_prompt
from ...launch.run import agent_launch, launch
from ...launch.sessions import resumed_work


def loop_command(common: CommonOptions, words: list[str], max_iterations: int,
                 max_context_tokens: int | None, options: RunOptions | None = None) -> int:
    """Exit code of a `loop`: usage errors are 2, configuration errors 1, else the outcome's code.

    With `-c` the loop runs on the conversation of this workspace's latest session (with no
    PROMPT, that session carries on as `resume --last` would have it).
    """
    options = options or RunOptions()
    prompt = read_prompt(words, read_stdin=not options.no_stdin)
    spec = agent_launch(common, options, "loop", prompt)
    if spec.resumed is not None and not prompt:
        return launch(spec, resumed_work("", spec.resumed))
    text = spec.output.prompt(prompt)
    loaded, session_id = spec.loaded, spec.session_id
    folder = None if loaded.settings.no_session else SessionStore(loaded.home).folder(session_id)

    async def work(runtime: AgentRuntime) -> TurnOutcome:
        from ...drivers.event_loop import run_event_loop

        return await run_event_loop(runtime, text, max_iterations=max_iterations,
                                    max_context_tokens=max_context_tokens, jobs_folder=folder)

    return launch(spec, work)
