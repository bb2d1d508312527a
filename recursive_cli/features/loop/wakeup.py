"""The wakeup slot: the one pending wakeup a loop's agent scheduled for itself."""

from __future__ import annotations

import datetime
import time

from pydantic import BaseModel


class Wakeup(BaseModel):
    """When the loop should wake up, and the prompt its turn then gets."""

    due: float  # wall-clock epoch seconds, so a resumed process can sleep out the rest
    prompt: str
    reason: str = ""
    delay_seconds: float = 0.0

    def remaining(self, now: float | None = None) -> float:
        """Seconds until it is due (0 or less when due)."""
        return self.due - (time.time() if now is None else now)

    def due_iso(self) -> str:
        """The due time as ISO-8601 UTC."""
        moment = datetime.datetime.fromtimestamp(self.due, datetime.timezone.utc)
        return moment.isoformat(timespec="seconds")


class WakeupSlot:
    """Holds at most one wakeup: scheduling another replaces it."""

    def __init__(self, wakeup: Wakeup | None = None) -> None:
        self._wakeup = wakeup

    def schedule(self, delay_seconds: float, prompt: str, reason: str = "") -> Wakeup:
        """Set the wakeup to `delay_seconds` from now, replacing any earlier one."""
        self._wakeup = Wakeup(due=time.time() + delay_seconds, prompt=prompt, reason=reason,
                              delay_seconds=delay_seconds)
        return self._wakeup

    def pending(self) -> Wakeup | None:
        return self._wakeup

    def set(self, wakeup: Wakeup | None) -> None:
        """Put back a saved wakeup (resume), or None to clear the slot."""
        self._wakeup = wakeup

    def clear(self) -> None:
        self._wakeup = None


def human_duration(seconds: float) -> str:
    """`0.4s`, `45s`, `5m 0s`, `2h 3m`, `1d 2h`."""
    if seconds < 59.5:
        return f"{max(0.0, seconds):.1f}".removesuffix(".0") + "s"
    seconds = int(round(seconds))
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"
