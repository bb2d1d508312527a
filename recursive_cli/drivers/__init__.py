"""Drivers: runs of many turns over `RuntimeCore.run`, one per mode, found in `DRIVERS`.

A driver decides what the next turn's prompt is and when to stop; the runtime and the kernel
stay unaware of it. It installs the tools its mode needs (`install`), starts a run on a
prompt (`start`), continues a saved session (`resume`) and tells the model its mode (`note`,
in the system prompt). Everything a driver needs to continue after a crash is kept in the
runtime's `state`, which the session persists in meta.json. A new mode is a new module here
and a line in `DRIVERS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from ..core.kernel import TurnOutcome
    from ..core.runtime import RuntimeCore
    from ..features.sessions.reader import LoadedSession

Mode = Literal["run", "loop", "goal"]


class Driver(Protocol):
    """What the surfaces need of a mode."""

    mode: str
    note: str

    def install(self, runtime: RuntimeCore) -> None: ...

    async def start(self, runtime: RuntimeCore, prompt: str) -> TurnOutcome: ...

    async def resume(self, runtime: RuntimeCore, session: LoadedSession, prompt: str) -> TurnOutcome: ...


def driver_for(mode: str) -> Driver:
    """The driver of `mode` ("run" for an unknown one: a session from a newer version)."""
    if mode == "loop":  # (each imported for its own mode only: the loop's feature costs a run ≈ 9 ms)
        from .event_loop import LoopDriver

        return LoopDriver()
    if mode == "goal":
        from .goal_mode import GoalModeDriver

        return GoalModeDriver()
    from .run import RunDriver

    return RunDriver()
