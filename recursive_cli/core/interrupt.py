"""Cancellation: a token that signal handlers set and the kernel watches at every wait."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from .errors import Interrupted

T = TypeVar("T")


class InterruptToken:
    """Set once to stop the run; remembers the signal number (for the 130/143 exit codes)."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self.signal: int | None = None

    def _ensure(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
        return self._event

    def set(self, signal: int = 2) -> None:
        if self.signal is None:
            self.signal = signal
        self._ensure().set()

    def is_set(self) -> bool:
        return self.signal is not None

    async def race(self, work: Awaitable[T]) -> T:
        """Await `work`, cancelling it and raising Interrupted if the token fires first."""
        if self.is_set():
            if asyncio.iscoroutine(work):
                work.close()
            raise Interrupted
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(self._ensure().wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
        raise Interrupted
