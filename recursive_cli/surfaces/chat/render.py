"""What the interactive session shows of a turn: the same spinner, streamed text and compact
tool lines as `run` on a terminal (sinks/terminal.py), the answer rendered as Markdown once
it is complete, in place of its streamed copy, and a status line under the turn (model,
tokens, cost, context use, "+N queued", the line being typed).

Nothing a model, a tool or a file says is read as markup: the console reads none, text
reaches it as `Text` or as Markdown source, with control characters made visible first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from ...core.events import (
    AgentEvent,
    CheckpointTaken,
    FinishReason,
    MessageAdded,
    PermissionDenied,
    RunFinished,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from ...core.messages import ToolCall
from ...core.pricing import ModelPrice
from ...sinks.live import LiveRegion
from ...sinks.terminal import RichTerminalSink, printable

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

Footer = Callable[[], list[str]]
_RESTORE_HINT = re.compile(r"\(undo: recursive checkpoints restore \S+ --turn \d+\)")


class _WithFooter:
    """A region's renderable with the status lines under it, the renderable cut to the room left."""

    def __init__(self, body: Any, footer: Footer) -> None:
        self.body = body
        self.footer = footer

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment
        from rich.text import Text

        lines = self.footer()
        if self.body is not None:
            room = max(1, (options.height or console.height) - len(lines) - 1)
            body = console.render_lines(self.body, options.update(height=room), pad=False)
            while body and not "".join(segment.text for segment in body[-1]).strip():
                body.pop()  # (the padding to `room` lines: only the streamed text needs the room)
            for line in body:
                yield from line
                yield Segment.line()
        for index, status in enumerate(lines):
            yield Text(status, style="dim" if index == 0 else "", no_wrap=True, overflow="ellipsis",
                       end="\n" if index < len(lines) - 1 else "")


class StatusRegion(LiveRegion):
    """A live region that, while a turn runs (`active`), always shows the status lines too."""

    def __init__(self, console: Console, footer: Footer) -> None:
        super().__init__(console)
        self.footer = footer
        self.active = False

    def show(self, renderable: Any) -> None:
        if not isinstance(renderable, _WithFooter):  # (a pause shows again what was shown)
            renderable = _WithFooter(renderable, self.footer)
        super().show(renderable)

    def clear(self) -> None:
        if self.active:
            self.show(None)
        else:
            super().clear()

    def stop(self) -> None:
        """Off the screen, status lines too (the turn is over)."""
        self.active = False
        super().clear()

    def refresh(self) -> None:
        """Redraw now (the status changed: a key typed, a message queued)."""
        if self._live is not None:
            self._live.refresh()


class ChatSink(RichTerminalSink):
    """The terminal sink of an interactive session; `footer` gives the status lines."""

    def __init__(self, out: TextIO, quiet: bool = False, verbose: bool = False,
                 prices: Mapping[str, ModelPrice] | None = None) -> None:
        super().__init__(out, quiet, verbose, prices, out=out)
        self.footer: Footer = lambda: []
        self.region: StatusRegion = StatusRegion(self._console, lambda: self.footer())
        self.tool_running: str | None = None  # the name of the tool call under way
        self.current_call: ToolCall | None = None  # the last call started (the one a question is about)
        self.declined = ""  # the call the person said no to in this turn ("tool subject")
        self.on_tool_finished: Callable[[], None] = lambda: None
        self.on_turn_started: Callable[[str], None] = lambda prompt: None
        self.context_tokens = 0  # the last request's prompt and answer: how full the context is
        self._answer = ""

    @property
    def console(self) -> Console:
        return self._console

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, CheckpointTaken) and event.shown:  # here the way back is /undo
            event = replace(event, shown=_RESTORE_HINT.sub("(/undo puts it back)", event.shown))
        if isinstance(event, MessageAdded) and event.message.role == "assistant":
            self._answer = "" if event.message.tool_calls else event.message.content
            usage = event.message.usage
            if usage is not None:
                self.context_tokens = usage.input_tokens + usage.output_tokens
        if isinstance(event, ToolStarted):
            self.tool_running, self.current_call = event.call.name, event.call
        elif isinstance(event, ToolFinished):
            self.tool_running = None
        if isinstance(event, PermissionDenied) and self.declined and event.reason == "the user said no":
            return  # (the question's "no" is on the screen; the turn's end says the rest)
        if isinstance(event, TurnStarted):
            self._answer, self.declined = "", ""
            self.region.active = True
            self.region.show(None)
            self.on_turn_started(event.prompt)
        elif isinstance(event, TurnFinished):
            self._turn_done(event)
        elif isinstance(event, RunFinished):
            self._tally.see(event)
            self._end_stream()
            self.region.stop()
        else:
            super().emit(event)
        if isinstance(event, ToolFinished):
            self.on_tool_finished()

    def _turn_done(self, event: TurnFinished) -> None:
        """The answer as Markdown in place of its streamed copy; or what ended the turn."""
        self._tally.see(event)
        answered = bool(self._answer.strip()) and event.finish_reason in (
            FinishReason.COMPLETED, FinishReason.PERMISSION_DENIED, FinishReason.GOAL_NOT_MET)
        self._end_stream(keep=not answered)
        self.region.stop()
        if answered:
            self.markdown(self._answer)
        if event.finish_reason is FinishReason.INTERRUPTED:
            self.line("interrupted", "yellow")
        elif event.finish_reason is FinishReason.PERMISSION_DENIED and self.declined:
            self.line(f"you declined {_short(self.declined)} · say what to do instead", "yellow")
        elif event.finish_reason is not FinishReason.COMPLETED and event.detail:
            self.line(f"error: {event.detail}", "red")
        self._answer = ""

    def markdown(self, text: str) -> None:
        """`text` rendered as Markdown (its source is never read as markup)."""
        from rich.markdown import Markdown

        self._console.print(Markdown(printable(text)))

    def line(self, text: str, style: str = "") -> None:
        """One line of our own, shown as it is (above the live region, if one is up)."""
        from rich.text import Text

        self._console.print(Text(printable(text), style=style))


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
