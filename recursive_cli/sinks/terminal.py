"""Progress on stderr: rich spinner and streamed text on a TTY, plain lines when piped.

Nothing a model, a tool or a file says is ever read as rich markup (`[/]`, `[bold]`) or an
emoji code (`:x:`): the console is made with markup and emoji off (which also covers stray
stderr lines rich prints above its live display), lines reach it as `Text`, and `printable`
makes control characters visible first.

On a terminal the model's text is streamed as it comes. When stdout is that same terminal,
the final answer will be rendered there by the answer sink, so the stream is shown in a
live region that is wiped once the answer is known, instead of staying as a second copy.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from ..core.agent_scope import current_agent
from ..core.events import (
    AgentEvent,
    ApiRetry,
    LoopWaiting,
    MessageAdded,
    ModelRequest,
    Notice,
    PermissionDenied,
    RunFinished,
    RunStarted,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from ..core.messages import Message, Usage
from ..core.pricing import ModelPrice, price_for
from .answer import answer_text
from .live import LiveRegion, StreamTail, same_terminal

if TYPE_CHECKING:
    from rich.text import Text

# C0 and C1 control characters except tab and newline: a model can put escape sequences in a
# path, a command or its text, and the terminal must show them, not obey them.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
VERBOSE_LINES = 20  # of a tool's output, shown with --verbose
THOUGHT_STYLE = "dim italic"  # the model's thinking, on a terminal


def printable(text: str) -> str:
    """`text` with control characters shown as `\\x1b` instead of sent to the terminal."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match[0]):02x}", text)


def count(number: int, noun: str) -> str:
    """`1 step`, `3 steps`."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def cost_text(cost: float | None) -> str:
    """`$0.0021`; `$0.0000` only for nothing at all, `<$0.0001` for less; `cost unknown` for None."""
    if cost is None:
        return "cost unknown"
    shown = f"${cost:.4f}"
    return "<$0.0001" if cost > 0 and shown == "$0.0000" else shown


def _tokens(usage: Usage) -> str:
    thinking = f" ({usage.reasoning_tokens:,} thinking)" if usage.reasoning_tokens else ""
    return f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens{thinking}"


def summary_line(event: RunFinished, steps_usage: Usage | None = None, price_known: bool = True) -> str:
    """`3 steps · 1,204 in / 96 out tokens · $0.0021 · 4.2 s`.

    The tokens are this command's requests, its judge's and compaction's included, as the
    result line's `usage` counts them (`model_usage`; without it, `steps_usage`, what this
    command's steps used); when the session's totals hold more (a resumed session's earlier
    turns) both are shown, labelled:
    `1 step · 300 in / 20 out tokens · session total 1,504 in / 116 out tokens, $0.0030 · 2.0 s`.
    A run that spent nothing on a model with no price has an unknown cost, not `$0.0000`.
    """
    total = event.total_cost_usd
    if total == 0 and not price_known:
        total = None
    cost = cost_text(total)
    steps = count(event.num_steps, "step")
    seconds = f"{event.duration_ms / 1000:.1f} s"
    branch = f" · branch {event.worktree.branch} in {event.worktree.path}" if event.worktree is not None else ""
    command = sum(event.model_usage.values(), Usage()) if event.model_usage else steps_usage
    if command is None or _same_tokens(command, event.usage):
        return f"{steps} · {_tokens(event.usage)} · {cost} · {seconds}{branch}"
    return f"{steps} · {_tokens(command)} · session total {_tokens(event.usage)}, {cost} · {seconds}{branch}"


def _same_tokens(a: Usage, b: Usage) -> bool:
    return (a.input_tokens, a.output_tokens) == (b.input_tokens, b.output_tokens)


def tool_line(event: ToolFinished) -> str:
    """`✓ edit_file src/app.py (+12 −3)` or `✗ run_shell pytest -q (exit 1, 2.3 s)`."""
    mark = "✗" if event.is_error else "✓"
    subject = " ".join(event.subject.split())
    if len(subject) > 60:
        subject = subject[:59] + "…"
    detail = f" ({event.summary})" if event.summary else ""
    return f"{mark} {event.call.name} {subject}{detail}".replace("  ", " ")


class _Tally:
    """What the summary line needs beyond the result: this command's steps' tokens, and whether
    the run's model has a price at all."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None) -> None:
        self.prices = prices
        self.steps_usage = Usage()
        self.price_known = True

    def see(self, event: AgentEvent) -> None:
        if isinstance(event, RunStarted):
            self.price_known = price_for(event.model, self.prices) is not None
        elif isinstance(event, TurnFinished):
            self.steps_usage = self.steps_usage + event.usage


class PlainTerminalSink:
    """Plain lines for a piped stderr: tool calls, retries, errors and a summary.

    `prices` are the user's configured prices (settings), so a model priced there counts as
    priced; the bundled table is always consulted.
    """

    def __init__(self, err: TextIO, quiet: bool = False, verbose: bool = False,
                 prices: Mapping[str, ModelPrice] | None = None) -> None:
        self._err = err
        self._quiet = quiet
        self._verbose = verbose
        self._tally = _Tally(prices)
        self._output = ""  # with --verbose: the last tool result, shown under its call's line

    def emit(self, event: AgentEvent) -> None:
        self._tally.see(event)
        line = self._line(event)
        if line is not None:
            self._err.write(printable(line) + "\n")
            self._err.flush()

    def _summary(self, event: RunFinished) -> str:
        return summary_line(event, self._tally.steps_usage, self._tally.price_known)

    def _line(self, event: AgentEvent) -> str | None:
        if isinstance(event, RunFinished):
            quiet_exit = event.exit_code == 141  # stdout's reader went away: end quietly, as on SIGPIPE
            if event.is_error and event.error and not quiet_exit:
                return f"error: {event.error}" + ("" if self._quiet else "\n" + self._summary(event))
            return None if self._quiet else self._summary(event)
        if self._quiet:
            return None
        if self._verbose and isinstance(event, MessageAdded):
            return self._verbose_message(event.message)
        if isinstance(event, ToolFinished):
            output, self._output = self._output, ""
            return _nested(tool_line(event) + (f"\n{indented(output)}" if output.strip() else ""))
        if isinstance(event, Notice):
            return event.text() or None
        if isinstance(event, PermissionDenied):
            return _nested(f"✗ denied {event.tool} {event.subject}: {event.reason}")
        if isinstance(event, ApiRetry):
            return (f"retrying in {event.retry_delay_ms / 1000:.1f} s "
                    f"(attempt {event.attempt}/{event.max_retries}): {event.error}")
        if isinstance(event, TurnFinished) and self._verbose:
            return f"turn {event.turn} ended: {event.finish_reason.value} {event.detail}".rstrip()
        return None

    def _verbose_message(self, message: Message) -> str | None:
        """With --verbose off a terminal, a CI log tells what happened: the model's text between
        its tool calls (the answer itself is on stdout) and each tool's output, under its line."""
        if message.role == "tool":
            self._output = message.content
            return None
        shown = [f"thinking: {item.text.strip()}" for item in message.reasoning or () if item.text.strip()]
        if message.role == "assistant" and message.tool_calls and message.content.strip():
            shown.append(message.content.strip())
        return "\n".join(shown) or None


def _nested(text: str) -> str:
    """`text` indented under its subagent's line when a subagent's call made it."""
    return text if current_agent() is None else "\n".join(f"  {line}" for line in text.splitlines())


def indented(output: str, lines: int = VERBOSE_LINES) -> str:
    """A tool's output under its line: indented, its first `lines` lines, and how many more."""
    shown = output.rstrip("\n").splitlines()
    more = f"\n  … {count(len(shown) - lines, 'more line')}" if len(shown) > lines else ""
    return "\n".join(f"  {line}" for line in shown[:lines]) + more


def _text(text: str, style: str = "") -> Text:
    """A rich Text of `text` as it is: no markup, no emoji codes, control characters shown."""
    from rich.text import Text

    return Text(printable(text), style=style)


class _SpinnerText:
    """The spinner's label, re-rendered on every refresh: what is happening, for how long, tokens so far."""

    def __init__(self, label: str, tokens: Callable[[], int]) -> None:
        self.label = label
        self.started = time.monotonic()
        self.tokens = tokens

    def __rich__(self) -> str:  # (a str is safe: the sink's console reads no markup)
        elapsed = time.monotonic() - self.started
        return printable(f"{self.label} · {elapsed:.0f} s · {self.tokens():,} tokens")


class _WaitText:
    """A wait's label with a live countdown to `until` (epoch seconds), or the time waited so far."""

    def __init__(self, label: str, until: float | None) -> None:
        self.label = label
        self.until = until
        self.started = time.monotonic()

    def __rich__(self) -> str:  # (a str is safe: the sink's console reads no markup)
        if self.until is None:
            return printable(f"{self.label} · {time.monotonic() - self.started:.0f} s")
        left = max(0, int(-((time.time() - self.until) // 1)))  # whole seconds, rounded up
        return printable(f"{self.label} · {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d} left")


class RichTerminalSink(PlainTerminalSink):
    """On a TTY: a spinner with elapsed time while the model works, streamed text, compact tool lines.

    `out` is where the answer goes (default: sys.stdout). On the same terminal, the streamed
    final answer is wiped when the run ends, since the answer sink renders it there.
    """

    def __init__(self, err: TextIO, quiet: bool = False, verbose: bool = False,
                 prices: Mapping[str, ModelPrice] | None = None, out: TextIO | None = None) -> None:
        super().__init__(err, quiet, verbose, prices)
        from rich.console import Console

        self._console = Console(file=err, stderr=True, highlight=False, emoji=False, markup=False)
        self.region = LiveRegion(self._console)
        self._answer_here = same_terminal(out if out is not None else sys.stdout, err)
        self._stream: StreamTail | None = None  # the model text of this step, streaming
        self._final = False  # the streamed message had no tool calls: maybe the run's answer
        self._held: list[str] = []  # lines that came after it, while it may still be wiped
        self._tokens = 0
        self._thought: StreamTail | None = None  # the model's thinking, streaming

    def emit(self, event: AgentEvent) -> None:
        self._tally.see(event)
        if self._quiet and not isinstance(event, RunFinished):
            return
        if self._thought is not None and not isinstance(event, ThinkingDelta):
            self._end_thinking()
        if isinstance(event, MessageAdded) and event.message.usage is not None:
            self._tokens += event.message.usage.input_tokens + event.message.usage.output_tokens
        if isinstance(event, ModelRequest):
            self._end_stream()
            self._spin(f"thinking (step {event.step})")
        elif isinstance(event, TextDelta):
            self._stream_text(event.text)
        elif isinstance(event, ThinkingDelta):
            self._think(event.text)
        elif isinstance(event, MessageAdded) and event.message.role == "assistant":
            self._final = not event.message.tool_calls
            if self._stream is None:
                self.region.clear()  # "thinking" is over
            elif not self._final:
                self._end_stream()
        elif isinstance(event, ToolStarted):
            self._end_stream()
            self._spin(" ".join(f"{event.call.name} {event.subject}".split())[:70])
        elif isinstance(event, ToolFinished) and event.call.name == "todo_write":
            self._end_stream()
            self.region.clear()
            self._todo_panel(event)
        elif isinstance(event, LoopWaiting):
            self._end_stream()
            self.region.show(_WaitText(event.text(), event.countdown_to))
        elif isinstance(event, RunFinished):
            self._finish(event)
        else:
            line = self._line(event)
            if line is None:
                return
            if self._final and self._stream is not None and self._answer_here:
                self._held.append(line)  # shown after the text, if it is kept (a checkpoint's line)
                return
            self._end_stream()
            self.region.clear()
            self._print_line(line)

    def _print_line(self, line: str) -> None:
        mark = line.lstrip()  # (a subagent's lines are indented)
        style = "red" if mark.startswith(("✗", "error")) else "green" if mark.startswith("✓") else "dim"
        self._console.print(_text(line, style))

    def _spin(self, label: str) -> None:
        from rich.spinner import Spinner

        self.region.show(Spinner("dots", text=_SpinnerText(label, lambda: self._tokens),
                                 style="status.spinner"))

    def _stream_text(self, delta: str) -> None:
        if self._stream is None:
            self.region.clear()  # the spinner
            self._stream = StreamTail()
            if self._answer_here:
                self.region.show(self._stream)
        self._stream.text += printable(delta)  # (the region redraws it a dozen times a second)
        if not self._answer_here:  # the answer goes elsewhere (a pipe, a file): this is its one copy on this screen
            self._console.print(_text(delta, "dim"), end="", soft_wrap=True)

    def _think(self, delta: str) -> None:
        """The model's thinking as it streams, dimmed and in italics (the streamed answer is
        dimmed too), in the live region (in place of the spinner) until it ends."""
        if self._thought is None:
            self._end_stream()
            self._thought = StreamTail(THOUGHT_STYLE)
            self.region.show(self._thought)
        self._thought.text += printable(delta)  # (the region redraws it a dozen times a second)

    def _end_thinking(self) -> None:
        """The thinking is over: it stays on screen, above what comes next; never in the answer."""
        thought, self._thought = self._thought, None
        self.region.clear()
        if thought is not None and thought.text.strip():
            self._console.print(_text(thought.text.strip("\n"), THOUGHT_STYLE))

    def _end_stream(self, keep: bool = True) -> None:
        """Finish the streamed text: leave it on screen (`keep`), or wipe it."""
        stream, self._stream, self._final = self._stream, None, False
        if stream is not None and not self._answer_here:
            self._console.print()
        elif stream is not None:
            self.region.clear()
            if keep and stream.text.strip():
                self._console.print(_text(stream.text.rstrip("\n"), "dim"))
        held, self._held = self._held, []
        for line in held:
            self._print_line(line)

    def _finish(self, event: RunFinished) -> None:
        """The answer printed on this screen by the answer sink replaces its streamed copy."""
        streamed = self._stream.text.strip() if self._stream is not None else ""
        answer = answer_text(event).strip()  # what the answer sink prints ("" for nothing)
        duplicate = self._final and bool(answer) and (
            streamed == answer or event.structured_output is not None)  # (that is the text, as JSON)
        self._end_stream(keep=not duplicate)
        self.region.clear()
        line = self._line(event)
        if line is not None:
            self._print_line(line)

    def _todo_panel(self, event: ToolFinished) -> None:
        from rich.panel import Panel

        from ..tools.todo import MARKS as TODO_MARKS

        try:
            todos = json.loads(event.call.arguments).get("todos", [])
            lines = [f"{TODO_MARKS.get(t.get('status'), '[ ]')} {t.get('content', '')}" for t in todos]
        except (ValueError, AttributeError):
            return
        self._console.print(Panel(_text("\n".join(lines) or "(empty)"), title="todo", expand=False))
