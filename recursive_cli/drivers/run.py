"""The run driver: one turn on a prompt; resumed, it carries an unfinished turn on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.kernel import TurnOutcome
from ..core.messages import CONTINUE, unfinished
from ..features.sessions.meta import FirstPrompt

if TYPE_CHECKING:
    from ..core.runtime import RuntimeCore
    from ..features.sessions.reader import LoadedSession

NOTE = "Mode: one task. Finish it in this turn."


class RunDriver:
    """`recursive run`: the runtime's own `run(text)`, nothing around it."""

    mode = "run"
    note = NOTE

    def install(self, runtime: RuntimeCore) -> None:
        """A run needs no tools beyond the runtime's."""

    async def start(self, runtime: RuntimeCore, prompt: str) -> TurnOutcome:
        return await runtime.run(prompt)

    async def resume(self, runtime: RuntimeCore, session: LoadedSession, prompt: str) -> TurnOutcome:
        """PROMPT; else carry on an unfinished turn; else "Continue.".

        A run that died before its first turn began still owes its first prompt (kept in
        meta.json): that prompt runs first, as turn 1, and a new PROMPT follows as turn 2 once
        it completed.
        """
        saved = session.meta.state.get(FirstPrompt.key) if not session.messages else None
        first = saved if isinstance(saved, str) else ""
        if first and prompt and session.turns == 0:
            runtime.enqueue(prompt)  # `run` takes it up after the first prompt's turn completes
            return await runtime.run(first)
        prompt = prompt or first
        if prompt:
            return await runtime.run(prompt)
        if unfinished(session.messages):
            return await runtime.continue_turn()
        return await runtime.run(CONTINUE)
