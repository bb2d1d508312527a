"""Progress on stderr: rich spinner and streamed text on a TTY, plain lines when piped."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any, TextIO

from ..core.events import (
    AgentEvent,
    ApiRetry,
    LoopWaiting,
    MessageAdded,
    ModelRequest,
    Notice,
    PermissionDenied,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)

# C0 and C1 control characters except tab and newline: a model can put escape sequences in a
# path, a command or its text, and the terminal must show them, not obey them.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with control characters shown as `\\x1b` instead of sent to the terminal."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match[0]):02x}", text)


def summary_line(event: RunFinished) -> str:
    """`3 steps · 1,204 in / 96 out tokens · $0.0021 · 4.2 s`."""
    cost = "cost unknown" if event.total_cost_usd is None else f"${event.total_cost_usd:.4f}"
    return (f"{event.num_steps} steps · {event.usage.input_tokens:,} in / "
            f"{event.usage.output_tokens:,} out tokens · {cost} · {event.duration_ms / 1000:.1f} s")


def tool_line(event: ToolFinished) -> str:
    """`✓ edit_file src/app.py (+12 −3)` or `✗ run_shell pytest -q (exit 1, 2.3 s)`."""
    mark = "✗" if event.is_error else "✓"
    subject = " ".join(event.subject.split())
    if len(subject) > 60:
        subject = subject[:59] + "…"
    detail = f" ({event.summary})" if event.summary else ""
    return f"{mark} {event.call.name} {subject}{detail}".replace("  ", " ")


class PlainTerminalSink:
    """Plain lines for a piped stderr: tool calls, retries, errors and a summary."""

    def __init__(self, err: TextIO, quiet: bool = False, verbose: bool = False) -> None:
        self._err = err
        self._quiet = quiet
        self._verbose = verbose

    def emit(self, event: AgentEvent) -> None:
        line = self._line(event)
        if line is not None:
            self._err.write(printable(line) + "\n")
            self._err.flush()

    def _line(self, event: AgentEvent) -> str | None:
        if isinstance(event, RunFinished):
            quiet_exit = event.exit_code == 141  # stdout's reader went away: end quietly, as on SIGPIPE
            if event.is_error and event.error and not quiet_exit:
                return f"error: {event.error}" + ("" if self._quiet else "\n" + summary_line(event))
            return None if self._quiet else summary_line(event)
        if self._quiet:
            return None
        if isinstance(event, ToolFinished):
            return tool_line(event)
        if isinstance(event, Notice):
            return event.text() or None
        if isinstance(event, PermissionDenied):
            return f"✗ denied {event.tool} {event.subject}: {event.reason}"
        if isinstance(event, ApiRetry):
            return (f"retrying in {event.retry_delay_ms / 1000:.1f} s "
                    f"(attempt {event.attempt}/{event.max_retries}): {event.error}")
        if isinstance(event, TurnFinished) and self._verbose:
            return f"turn {event.turn} ended: {event.finish_reason.value} {event.detail}".rstrip()
        return None


class _SpinnerText:
    """The spinner's label, re-rendered on every refresh: what is happening, for how long, tokens so far."""

    def __init__(self, label: str, tokens: Callable[[], int]) -> None:
        self.label = label
        self.started = time.monotonic()
        self.tokens = tokens

    def __rich__(self) -> str:
        elapsed = time.monotonic() - self.started
        return f"{self.label} · {elapsed:.0f} s · {self.tokens():,} tokens"


class _WaitText:
    """A wait's label with a live countdown to `until` (epoch seconds), or the time waited so far."""

    def __init__(self, label: str, until: float | None) -> None:
        self.label = label
        self.until = until
        self.started = time.monotonic()

    def __rich__(self) -> str:
        if self.until is None:
            return f"{self.label} · {time.monotonic() - self.started:.0f} s"
        left = max(0, int(-((time.time() - self.until) // 1)))  # whole seconds, rounded up
        return f"{self.label} · {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d} left"


class RichTerminalSink(PlainTerminalSink):
    """On a TTY: a spinner with elapsed time while the model works, streamed text, compact tool lines."""

    def __init__(self, err: TextIO, quiet: bool = False, verbose: bool = False) -> None:
        super().__init__(err, quiet, verbose)
        from rich.console import Console

        self._console = Console(file=err, stderr=True, highlight=False)
        self._status: Any = None
        self._streaming = False
        self._tokens = 0

    def emit(self, event: AgentEvent) -> None:
        if self._quiet and not isinstance(event, RunFinished):
            return
        if isinstance(event, MessageAdded) and event.message.usage is not None:
            self._tokens += event.message.usage.input_tokens + event.message.usage.output_tokens
        if isinstance(event, ModelRequest):
            self._spin(f"thinking (step {event.step})")
        elif isinstance(event, ToolFinished) and event.call.name == "todo_write":
            self._stop_spinner()
            self._todo_panel(event)
        elif isinstance(event, TextDelta):
            self._stop_spinner()
            self._streaming = True
            self._console.print(printable(event.text), end="", style="dim", markup=False)
        elif isinstance(event, ToolStarted):
            self._end_stream()
            self._spin(printable(f"{event.call.name} {event.subject}"[:70]))
        elif isinstance(event, LoopWaiting):
            self._end_stream()
            self._stop_spinner()
            self._status = self._console.status(_WaitText(event.text(), event.countdown_to))
            self._status.start()
        else:
            self._end_stream()
            self._stop_spinner()
            line = self._line(event)
            if line is not None:
                style = "red" if line.startswith(("✗", "error")) else "green" if line.startswith("✓") else "dim"
                self._console.print(printable(line), style=style, markup=False)

    def _spin(self, text: str) -> None:
        self._stop_spinner()
        self._status = self._console.status(_SpinnerText(text, lambda: self._tokens), spinner="dots")
        self._status.start()

    def _todo_panel(self, event: ToolFinished) -> None:
        from rich.panel import Panel

        from ..tools.todo import MARKS as TODO_MARKS

        try:
            todos = json.loads(event.call.arguments).get("todos", [])
            lines = [f"{TODO_MARKS.get(t.get('status'), '[ ]')} {t.get('content', '')}" for t in todos]
        except (ValueError, AttributeError):
            return
        self._console.print(Panel("\n".join(lines) or "(empty)", title="todo", expand=False),
                            markup=False)

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _end_stream(self) -> None:
        if self._streaming:
            self._console.print()
            self._streaming = False
