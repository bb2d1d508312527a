"""DIR/results.jsonl: one line per task as it finishes, and what a fleet's results add up to.

A task's outcome is the CLI's own (`subtype` and exit code of SPEC §4), or one of the
fleet's: `error_fleet_budget` (not started: the fleet's --max-cost was spent; class 3),
`error_infrastructure` (the process or its worker kept dying, retries used up; class 1),
`error_bad_task` (the task's command line was refused, e.g. an unpriced model under a
budget; class 2). `fleet resume` appends new lines; the last line of a task is its outcome.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .record import RESULTS_FILE

FLEET_BUDGET = "error_fleet_budget"
INFRASTRUCTURE = "error_infrastructure"
BAD_TASK = "error_bad_task"
INTERRUPTED = "interrupted"

# The exit class of each outcome (SPEC §4), and which classes are worse than others: a broken
# task definition first, then errors, then the agent's own failures, mildest last.
OUTCOME_CLASS = {
    "success": 0, "error_during_execution": 1, INFRASTRUCTURE: 1, BAD_TASK: 2,
    "error_max_turns": 3, "error_max_budget_usd": 3, "error_max_budget": 3, FLEET_BUDGET: 3,
    "error_goal_not_met": 4, "error_stuck": 5, "error_permission": 6, INTERRUPTED: 130,
}
_WORST_FIRST = (2, 1, 130, 6, 5, 3, 4, 0)


class ResultLine(BaseModel):
    """One task's outcome, as a line of results.jsonl."""

    model_config = ConfigDict(extra="ignore")

    id: str
    subtype: str
    is_error: bool
    exit_code: int | None = None
    result: str = ""
    mode: str = ""
    num_turns: int = 0  # model calls of the last attempt's command (as Claude Code counts them)
    steps: int = 0  # model calls of the session, every attempt
    turns: int = 0  # agent turns of the session
    usage: dict[str, int] = {}
    total_cost_usd: float | None = None  # the session's, every attempt
    duration_ms: int = 0
    session_id: str | None = None
    bundle: str | None = None
    attempts: int = 0
    workspace: str | None = None
    host: str | None = None
    errors: list[str] = []

    @property
    def outcome_class(self) -> int:
        """The exit code this outcome stands for."""
        return OUTCOME_CLASS.get(self.subtype, self.exit_code if self.exit_code in _WORST_FIRST else 1)


def append_result(folder: Path, line: ResultLine) -> None:
    """Add `line` to results.jsonl, on disk before this returns."""
    with (folder / RESULTS_FILE).open("a", encoding="utf-8") as handle:
        handle.write(line.model_dump_json() + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_results(folder: Path) -> dict[str, ResultLine]:
    """The last line of each task in results.jsonl (a torn or foreign line is skipped)."""
    latest: dict[str, ResultLine] = {}
    try:
        text = (folder / RESULTS_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return latest
    for raw in text.splitlines():
        try:
            line = ResultLine.model_validate_json(raw)
        except ValidationError:
            continue
        latest[line.id] = line
    return latest


def exit_code(lines: Iterable[ResultLine]) -> int:
    """0 when every task succeeded, else the class of the worst outcome."""
    classes = {line.outcome_class for line in lines}
    return next((code for code in _WORST_FIRST if code in classes), 0)


def total_cost(lines: Iterable[ResultLine]) -> float:
    """USD spent by these tasks (an unpriced one counts 0)."""
    return sum(line.total_cost_usd or 0.0 for line in lines)


def cost_text(cost: float, unpriced: int) -> str:
    """The fleet's cost for people: `$0.0123`, `cost unknown` when no task had a price, or
    `$0.0123 + 2 unpriced` — never a made-up $0 for tasks whose model has no price."""
    if unpriced == 0:
        return f"${cost:.4f}"
    return "cost unknown" if cost == 0 else f"${cost:.4f} + {unpriced} unpriced"


def summary(task_ids: list[str], latest: dict[str, ResultLine]) -> dict[str, Any]:
    """`fleet status --json`: the counts, cost, exit code and each task's last line (null
    for a task that has none yet)."""
    lines = [latest[i] for i in task_ids if i in latest]
    counts = {"tasks": len(task_ids), "succeeded": sum(line.subtype == "success" for line in lines),
              "failed": sum(line.subtype != "success" for line in lines),
              "pending": sum(i not in latest for i in task_ids)}
    pending_code = 0 if counts["pending"] == 0 else 1
    return {"type": "fleet_status", **counts, "total_cost_usd": round(total_cost(lines), 6),
            "unpriced": sum(line.total_cost_usd is None and line.steps > 0 for line in lines),
            "exit_code": exit_code(lines) or pending_code,
            "results": [latest[i].model_dump() if i in latest else {"id": i, "subtype": None}
                        for i in task_ids]}


_COLUMNS = (("task", "left"), ("outcome", "left"), ("exit", "right"), ("steps", "right"),
            ("cost", "right"), ("time", "right"), ("tries", "right"), ("session", "left"))
# The columns a narrow terminal does without, first given up first (task and outcome never are).
_GIVEN_UP = ("tries", "time", "steps", "exit", "cost", "session")
_SEPARATOR = 3  # a column separator with its padding


def table(task_ids: list[str], latest: dict[str, ResultLine], title: str = "", width: int = 0) -> Any:
    """A rich table of the tasks' outcomes, one row per task: ids and outcomes whole, and
    what went wrong last (the error's first line) whole too, in a last column when every
    reason fits in `width` (0: any width), else under the table. A table too wide for
    `width` leaves out whole columns, the least telling first, and never cuts one."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = [_row(task_id, latest.get(task_id)) for task_id in task_ids]
    widths = {name: max([len(name)] + [len(row[index]) for row in rows]) for index, (name, _) in enumerate(_COLUMNS)}
    shown = [name for name, _ in _COLUMNS]
    for name in _GIVEN_UP:
        if not width or _width(shown, widths) <= width:
            break
        shown.remove(name)
    grid = Table(show_edge=False, pad_edge=False)
    for name, justify in _COLUMNS:
        if name in shown:
            grid.add_column(name, justify=justify, no_wrap=True, min_width=widths[name])  # type: ignore[arg-type]
    reasons = [row[-1] for row in rows if row[-1]]
    room = width - _width(shown, widths) - _SEPARATOR
    with_reason = bool(reasons) and (not width or max(map(len, reasons)) <= room)
    if with_reason:
        grid.add_column("reason", no_wrap=True)
    kept = [index for index, (name, _) in enumerate(_COLUMNS) if name in shown]
    for row in rows:
        grid.add_row(*(row[index] for index in kept), *([row[-1]] if with_reason else []))
    below = [] if with_reason else [Text(f"{row[0]}: {row[-1]}") for row in rows if row[-1]]
    return Group(*([Text(title)] if title else []), grid, *below)  # (the lines the terminal's width, not the table's)


def _width(shown: list[str], widths: dict[str, int]) -> int:
    """The columns' width on a terminal, their separators included."""
    return sum(widths[name] for name in shown) + _SEPARATOR * (len(shown) - 1)


def _row(task_id: str, line: ResultLine | None) -> list[str]:
    if line is None:
        return [task_id, "no outcome yet", "", "", "", "", "", "", ""]
    cost = f"${line.total_cost_usd:.4f}" if line.total_cost_usd is not None else "unknown" if line.steps else ""
    return [task_id, line.subtype, "" if line.exit_code is None else str(line.exit_code),
            str(line.steps), cost, f"{line.duration_ms / 1000:.1f}s", str(line.attempts),
            line.session_id or "", failure_reason(line)]


def failure_reason(line: ResultLine) -> str:
    """What went wrong last: the first line of the task's first error ("" for none)."""
    first = line.errors[0].strip() if line.errors else ""
    return first.splitlines()[0] if first else ""


def as_json(line: ResultLine) -> str:
    """The line as stream-json writes it: compact."""
    return json.dumps(line.model_dump(), separators=(",", ":"))
