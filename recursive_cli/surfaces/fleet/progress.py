"""What a running fleet shows: a live display on a terminal (done / running / failed / cost
so far, each running task's last action), plain lines on stderr otherwise, and with
`-o stream-json` one JSON line per task event on stdout.

Stream-json lines: `{"type":"fleet","subtype":"task_started",…}`, each line of a task's own
stream with `"task_id"` added, `{"type":"fleet","subtype":"task_retry",…}`,
`{"type":"fleet","subtype":"task_finished","task_id":…,"outcome":{…its results.jsonl line…}}` and, last,
`{"type":"fleet","subtype":"finished",…counts, cost, exit code…}`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from ...core.wording import counted
from .results import ResultLine, cost_text, failure_reason

_ACTION_WIDTH = 70


class FleetView(Protocol):
    """Receives the fleet's events, from the driver's one thread."""

    def started(self, task_id: str, attempt: int, session_id: str, resumed: bool, host: str) -> None: ...
    def event(self, task_id: str, event: dict[str, Any]) -> None: ...
    def retrying(self, task_id: str, attempt: int, reason: str) -> None: ...
    def finished(self, line: ResultLine) -> None: ...
    def close(self, summary: dict[str, Any]) -> None: ...


def describe(event: dict[str, Any]) -> str | None:
    """A task's last action in a few words, from one of its stream-json lines (None: not an action)."""
    kind, subtype = event.get("type"), event.get("subtype")
    if kind == "assistant":
        content = (event.get("message") or {}).get("content") or []
        calls = [block for block in content if block.get("type") == "tool_use"]
        if calls:
            call = calls[-1]
            arguments = " ".join(str(v) for v in (call.get("input") or {}).values())
            return _short(f"{call.get('name')} {arguments}")
        text = " ".join(block.get("text", "") for block in content if block.get("type") == "text")
        return _short("said: " + text) if text.strip() else None
    if kind == "system" and subtype == "goal_evaluation":
        return "goal met" if event.get("achieved") else f"goal not met yet ({event.get('reason', '')})"
    if kind == "system" and subtype == "api_retry":
        return "waiting to retry the API"
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ACTION_WIDTH else text[: _ACTION_WIDTH - 1] + "…"


def finished_text(line: ResultLine) -> str:
    """`error_during_execution (connection … refused) · 12 steps · $0.2500 · 123.4s`: the
    outcome whole and, for a failure, its reason."""
    reason = failure_reason(line)
    cost = f" · ${line.total_cost_usd:.4f}" if line.total_cost_usd is not None else \
        " · cost unknown" if line.steps else ""  # (a model with no price, as the headline says it)
    return (f"{line.subtype}{f' ({reason})' if reason else ''} · {counted(line.steps, 'step')}{cost} · "
            f"{line.duration_ms / 1000:.1f}s")


@dataclass
class _Running:
    attempt: int
    since: float = field(default_factory=time.monotonic)
    action: str = "waiting for a worker"


@dataclass
class Tally:
    """Counts and cost so far, shared by the views."""

    total: int
    done: int = 0
    failed: int = 0
    cost: float = 0.0
    unpriced: int = 0  # finished tasks that ran on a model with no price
    running: dict[str, _Running] = field(default_factory=dict)

    def headline(self) -> str:
        return (f"fleet: {self.done}/{self.total} done · {len(self.running)} running · "
                f"{self.failed} failed · {cost_text(self.cost, self.unpriced) if self.done else 'no cost yet'}")

    def start(self, task_id: str, attempt: int) -> None:
        self.running[task_id] = _Running(attempt)

    def finish(self, line: ResultLine) -> None:
        self.running.pop(line.id, None)
        self.done += 1
        self.failed += line.subtype != "success"
        self.cost += line.total_cost_usd or 0.0
        self.unpriced += line.total_cost_usd is None and line.steps > 0


class PlainView:
    """A line on stderr per start, retry and finish (no terminal, or --verbose off a TTY)."""

    def __init__(self, tally: Tally, stream: IO[str] | None = None) -> None:
        self.tally = tally
        self.stream = stream or sys.stderr

    def _say(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def started(self, task_id: str, attempt: int, session_id: str, resumed: bool, host: str) -> None:
        how = "resumed" if resumed else "started"
        self._say(f"fleet: {task_id} {how} (attempt {attempt}, session {session_id})")

    def event(self, task_id: str, event: dict[str, Any]) -> None:
        pass

    def retrying(self, task_id: str, attempt: int, reason: str) -> None:
        self._say(f"fleet: {task_id} failed ({reason}); retrying, attempt {attempt}")

    def finished(self, line: ResultLine) -> None:
        self._say(f"fleet: {line.id} {finished_text(line)}   [{self.tally.headline().removeprefix('fleet: ')}]")

    def close(self, summary: dict[str, Any]) -> None:
        pass


class LiveView:
    """The terminal display: a headline and a row per running task, redrawn a few times a
    second; each finished task printed above it."""

    def __init__(self, tally: Tally) -> None:
        from rich.console import Console
        from rich.live import Live

        self.tally = tally
        self.console = Console(stderr=True, highlight=False)
        self._lock = threading.Lock()
        self.live = Live(console=self.console, get_renderable=self._render, refresh_per_second=4,
                         transient=True)
        self.live.start()

    def _render(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            grid = Table.grid(padding=(0, 2))
            grid.add_row(f"[bold]{self.tally.headline()}[/bold]")
            now = time.monotonic()
            rows = Table.grid(padding=(0, 2))
            for task_id, running in list(self.tally.running.items())[:20]:
                rows.add_row(Text(task_id, style="cyan"), f"#{running.attempt}", f"{now - running.since:.0f}s",
                             Text(running.action))
            grid.add_row(rows)
            return grid

    def started(self, task_id: str, attempt: int, session_id: str, resumed: bool, host: str) -> None:
        running = self.tally.running.get(task_id)
        if running is not None:
            with self._lock:
                running.action = f"{'resumed' if resumed else 'started'} on {host}"

    def event(self, task_id: str, event: dict[str, Any]) -> None:
        action = describe(event)
        running = self.tally.running.get(task_id)
        if action and running is not None:
            with self._lock:
                running.action = action

    def retrying(self, task_id: str, attempt: int, reason: str) -> None:
        from rich.markup import escape

        self.console.print(f"[yellow]↻[/yellow] {task_id}: {escape(reason)}; retrying (attempt {attempt})")

    def finished(self, line: ResultLine) -> None:
        from rich.markup import escape

        mark = "[green]✓[/green]" if line.subtype == "success" else "[red]✗[/red]"
        self.console.print(f"{mark} {escape(line.id)}: {escape(finished_text(line))}")

    def close(self, summary: dict[str, Any]) -> None:
        self.live.stop()


class StreamView:
    """`-o stream-json`: every task event as one compact JSON line on stdout."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdout

    def _emit(self, data: dict[str, Any]) -> None:
        self.stream.write(json.dumps(data, separators=(",", ":")) + "\n")
        self.stream.flush()

    def started(self, task_id: str, attempt: int, session_id: str, resumed: bool, host: str) -> None:
        self._emit({"type": "fleet", "subtype": "task_started", "task_id": task_id, "attempt": attempt,
                    "session_id": session_id, "resumed": resumed, "host": host})

    def event(self, task_id: str, event: dict[str, Any]) -> None:
        self._emit({**event, "task_id": task_id})

    def retrying(self, task_id: str, attempt: int, reason: str) -> None:
        self._emit({"type": "fleet", "subtype": "task_retry", "task_id": task_id, "attempt": attempt,
                    "reason": reason})

    def finished(self, line: ResultLine) -> None:
        self._emit({"type": "fleet", "subtype": "task_finished", "task_id": line.id, "outcome": line.model_dump()})

    def close(self, summary: dict[str, Any]) -> None:
        self._emit({"type": "fleet", "subtype": "finished",
                    **{k: v for k, v in summary.items() if k not in ("type", "results")}})


class Views:
    """Several views as one (the stream on stdout and the display on stderr)."""

    def __init__(self, *views: FleetView) -> None:
        self.views = views

    def started(self, task_id: str, attempt: int, session_id: str, resumed: bool, host: str) -> None:
        for view in self.views:
            view.started(task_id, attempt, session_id, resumed, host)

    def event(self, task_id: str, event: dict[str, Any]) -> None:
        for view in self.views:
            view.event(task_id, event)

    def retrying(self, task_id: str, attempt: int, reason: str) -> None:
        for view in self.views:
            view.retrying(task_id, attempt, reason)

    def finished(self, line: ResultLine) -> None:
        for view in self.views:
            view.finished(line)

    def close(self, summary: dict[str, Any]) -> None:
        for view in self.views:
            view.close(summary)


def make_views(tally: Tally, output_format: str, quiet: bool, tty: bool, stdout: IO[str]) -> Views:
    """The views for these options: stream-json on `stdout`, and on stderr the live display
    on a terminal or plain lines elsewhere (none with --quiet)."""
    views: list[FleetView] = []
    if output_format == "stream-json":
        views.append(StreamView(stdout))
    if not quiet:
        views.append(LiveView(tally) if tty else PlainView(tally))
    return Views(*views)
