"""The redrawn part of a terminal: one live region per terminal sink, and a way to pause them all.

A region shows a spinner, a countdown or text streaming in, redrawn in place and erased when
done. `progress_paused` takes every region off the screen while the user answers a question
on the terminal (the `ask` permission prompt): a region redrawing meanwhile would draw over
the question and over the answer the terminal echoes as it is typed.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

_REGIONS: weakref.WeakSet[LiveRegion] = weakref.WeakSet()


class StreamTail:
    """Text streaming in (already printable), as much of its end as fits on the screen: a live
    region can only erase what is still on it."""

    def __init__(self, style: str = "dim") -> None:
        self.text = ""
        self.style = style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        room = max(1, (options.height or console.height) - 1)
        width = max(1, options.max_width)
        tail = "\n".join(self.text.rsplit("\n", room)[-room:])[-room * width:]  # wrap no more than fits
        lines = Text(tail, style=self.style).wrap(console, width)
        yield Text("\n").join(list(lines)[-room:])


class _Inset:
    """A region's renderable two columns narrower than the terminal. Ctrl-C makes the terminal
    echo `^C` at the cursor, the end of the region's last line: on a full-width line it wraps
    onto a new line, and the region's erase, which goes back only over its own lines, would
    leave the line above (a spinner) on the screen for good. With room to spare, the `^C`
    stays on the region's line and goes with it."""

    def __init__(self, body: Any) -> None:
        self.body = body

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from console.render(self.body, options.update(width=max(1, options.max_width - 2)))


class LiveRegion:
    """What is redrawn on `console`: one renderable at a time, erased by `clear`.

    stdout is never redirected into it (stdout carries only the answer); stray stderr lines
    print above it, as rich does, through the console (so its markup setting holds for them).
    """

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live: Any = None
        self._shown: Any = None
        self._paused = False
        _REGIONS.add(self)

    def show(self, renderable: Any) -> None:
        """Show `renderable` in place of what the region showed (after a pause, if paused)."""
        self._shown = renderable
        if self._paused:
            return
        if self._live is None:
            from rich.live import Live

            self._live = Live(_Inset(renderable), console=self._console, transient=True,
                              refresh_per_second=12.5, redirect_stdout=False)
            self._live.start(refresh=True)
        else:
            self._live.update(_Inset(renderable), refresh=True)

    def clear(self) -> None:
        """Erase the region; it shows nothing until the next `show`."""
        self._shown = None
        self._stop()

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Off the screen for the block; back afterwards with whatever it shows by then."""
        self._paused = True
        self._stop()
        try:
            yield
        finally:
            self._paused = False
            if self._shown is not None:
                self.show(self._shown)


@contextlib.contextmanager
def progress_paused() -> Iterator[None]:
    """Every live region off the screen for the block (the user is being asked something)."""
    with contextlib.ExitStack() as stack:
        for region in list(_REGIONS):
            stack.enter_context(region.paused())
        yield


def same_terminal(a: TextIO, b: TextIO) -> bool:
    """Whether both streams are the same terminal device (stdout and stderr on one screen)."""
    try:
        return a.isatty() and b.isatty() and os.path.samestat(os.fstat(a.fileno()), os.fstat(b.fileno()))
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both of the first two
        return False
