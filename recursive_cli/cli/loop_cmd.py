"""`recursive loop`: an autonomous run through the event-loop driver (SPEC §6); and how
`resume` continues one."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import ValidationError

from ..kernel import TurnOutcome
from ..loop.control import STATE_KEY, LoopControl, LoopState
from ..loop.driver import EventLoop, Trigger, install_loop
from ..runtime import AgentRuntime
from ..sessions.reader import LoadedSession
from ..sessions.store import SessionStore
from .launch import Work, launch, new_launch
from .options import CommonOptions
from .prompt_input import read_prompt

CONTINUE = "Continue."


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
        control = install_loop(runtime)
        control.max_iterations, control.max_context_tokens = max_iterations, max_context_tokens
        _prepare(runtime, control, folder)
        return await EventLoop(runtime, control).run(Trigger("start", prompt))

    return launch(spec, work)


def resume_work(session: LoadedSession, prompt: str) -> Work:
    """Continue a saved loop: its pending wakeup is slept out, jobs that died with the old
    process are reported as lost, an interrupted turn carries on; PROMPT, if given, runs first."""

    async def work(runtime: AgentRuntime) -> TurnOutcome:
        control = install_loop(runtime)
        control.restore(_saved_state(runtime))
        _prepare(runtime, control, session.folder)
        return await EventLoop(runtime, control).run(_first_turn(session, prompt))

    return work


def _prepare(runtime: AgentRuntime, control: LoopControl, folder: Path | None) -> None:
    """Jobs' output goes to the session folder (a temp folder with --no-session); save the state."""
    if control.jobs is not None:
        control.jobs.folder = folder
    if control.max_context_tokens:
        runtime.compactor.max_tokens = control.max_context_tokens
    control.save()


def _saved_state(runtime: AgentRuntime) -> LoopState:
    try:
        return LoopState.model_validate(runtime.state.get(STATE_KEY) or {})
    except ValidationError:
        sys.stderr.write("warning: the session's loop state is unreadable; continuing without it\n")
        return LoopState()


def _first_turn(session: LoadedSession, prompt: str) -> Trigger | None:
    """PROMPT; else "Continue." for a loop that had ended; else the interrupted turn, if any."""
    if prompt:
        return Trigger("resume", prompt)
    if session.meta.status == "completed":
        return Trigger("resume", CONTINUE)
    last = session.messages[-1] if session.messages else None
    if last is not None and (last.role in ("user", "tool") or last.tool_calls):
        return Trigger("resume", None, "carrying on with the interrupted turn")
    return None
