"""Cancellation: a token that signal handlers set and the kernel watches at every wait.

`race` runs the work inline, in the caller's task: no extra task, no `asyncio.wait` (it is
awaited twice per step). The token remembers which tasks are racing; `set` cancels them, and
`race` turns that cancellation, and only that one, into `Interrupted`. A task that sets the
token itself (a broken pipe noticed while writing) is cancelled on the next loop iteration,
when it is suspended again, as it was when a separate waiter noticed the event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from .errors import Interrupted

T = TypeVar("T")


class InterruptToken:
    """Set once to stop the run; remembers the signal number (for the 130/143 exit codes)."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self._racing: dict[asyncio.Task[object], int] = {}  # task → how many races it is in
        self._cancelled: set[asyncio.Task[object]] = set()  # tasks this token has cancelled

    def set(self, signal: int = 2) -> None:
        if self.signal is None:
            self.signal = signal
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # set from another thread (or before any loop runs)
            running = None
        current = asyncio.current_task() if running is not None else None
        for task in list(self._racing):
            loop = task.get_loop()
            if loop is running and task is not current:
                self._cancel(task)
                continue
            with contextlib.suppress(RuntimeError):  # its loop is closed: nothing left to stop
                if loop is running:  # the racing task itself: cancelled once it waits again
                    loop.call_soon(self._cancel, task)
                else:
                    loop.call_soon_threadsafe(self._cancel, task)

    def request(self, signal: int = 15) -> None:
        """Stop at the next step boundary: what runs now (a model call, a tool) is not cut
        short, and the next wait or step sees the token set."""
        if self.signal is None:
            self.signal = signal

    def is_set(self) -> bool:
        return self.signal is not None

    def _cancel(self, task: asyncio.Task[object]) -> None:
        if task in self._racing and task not in self._cancelled and not task.done():
            self._cancelled.add(task)
            task.cancel()

    async def race(self, work: Awaitable[T]) -> T:
        """Await `work`, cancelling it and raising Interrupted if the token fires first."""
        if self.is_set():
            if asyncio.iscoroutine(work):
                work.close()
            raise Interrupted
        task = asyncio.current_task()
        if task is None:  # not inside a task (cannot happen under asyncio.run): just wait
            return await work
        self._racing[task] = self._racing.get(task, 0) + 1
        try:
            result = await work
        except (asyncio.CancelledError, Exception):
            # Ours, even when the work turned the cancellation into an error of its own.
            if self._take_cancel(task):
                raise Interrupted from None
            raise
        finally:
            depth = self._racing.pop(task) - 1
            if depth:
                self._racing[task] = depth
        if self._take_cancel(task):  # the work swallowed our cancellation and finished
            raise Interrupted
        return result

    def _take_cancel(self, task: asyncio.Task[object]) -> bool:
        """Whether this token cancelled `task` (and only it did); the cancel request is withdrawn."""
        if task not in self._cancelled:
            return False
        self._cancelled.discard(task)
        uncancel = getattr(task, "uncancel", None)  # Python 3.11+: cancel requests are counted
        return uncancel is None or uncancel() == 0
