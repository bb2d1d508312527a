"""The work of `recursive fleet run | status | resume` (the typer definitions are in fleet_cmd.py)."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from ...core.errors import CliError
from ...features.sessions.ids import new_session_id
from ...launch.errors import EXIT_USAGE
from .progress import Tally, make_views
from .record import (
    RECORD_FILE,
    RESULTS_FILE,
    SESSIONS_DIR,
    FleetOptions,
    FleetRecord,
    default_results_dir,
    read_record,
    write_record,
)
from .results import ResultLine, cost_text, exit_code, read_results, summary, table, total_cost
from .runner import FleetPlan, RayMissingError, Scheduler, connect, import_ray, session_id_for
from .tasks import TaskDefaults, TaskFileError, TaskSpec, describe, read_tasks

EXIT_INTERRUPTED = 130


@dataclass
class RunRequest:
    """`fleet run`'s arguments, as given."""

    tasks_file: Path
    results: Path | None
    address: str | None
    concurrency: int | None
    retries: int
    max_cost: float | None
    workspace: Path | None
    defaults: dict[str, Any]
    output_format: str
    quiet: bool


@dataclass
class ResumeRequest:
    """`fleet resume`'s arguments, as given (None: the fleet's own)."""

    folder: Path
    address: str | None
    concurrency: int | None
    retries: int | None
    output_format: str
    quiet: bool


def run_command(request: RunRequest) -> int:
    """`fleet run`: check the tasks, then Ray, then run them all into a new results folder."""
    try:
        defaults = TaskDefaults.model_validate({k: v for k, v in request.defaults.items() if v is not None})
    except ValidationError as exc:
        raise CliError(_flag_problem(exc), EXIT_USAGE) from None
    try:
        tasks = read_tasks(request.tasks_file, defaults)
    except TaskFileError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    try:
        ray = import_ray()
    except RayMissingError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    folder = (request.results or default_results_dir()).expanduser().resolve()
    if (folder / RECORD_FILE).exists() or (folder / RESULTS_FILE).exists():
        raise CliError(f"{folder} already holds a fleet: continue it with `recursive fleet resume {folder}`, "
                    "or choose another --results DIR", EXIT_USAGE)
    workspace = (request.workspace or Path.cwd()).expanduser().resolve()
    options = FleetOptions(address=request.address, concurrency=request.concurrency, retries=request.retries,
                           max_cost=request.max_cost)
    record = FleetRecord(fleet_id=new_session_id(), tasks_file=str(request.tasks_file.resolve()),
                         workspace=str(workspace), defaults=defaults, options=options)
    try:
        write_record(folder, record)
    except OSError as exc:
        raise CliError(f"cannot write the results folder {folder}: {exc.strerror or exc}") from None
    plan = FleetPlan(folder=folder, record=record, tasks=tasks)
    return _run(ray, plan, request.output_format, request.quiet, [task.id for task in tasks])


def resume_command(request: ResumeRequest) -> int:
    """`fleet resume`: run the tasks of DIR whose last line is not a success (or that have none);
    those that have a session (here, or its bundle in DIR) continue it."""
    folder = request.folder.expanduser().resolve()
    try:
        record = read_record(folder)
        tasks = read_tasks(Path(record.tasks_file), record.defaults)
    except TaskFileError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    try:
        ray = import_ray()
    except RayMissingError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    latest = read_results(folder)
    again = [task for task in tasks if task.id not in latest or latest[task.id].subtype != "success"]
    if not again:
        sys.stderr.write(f"fleet: every task of {folder} succeeded; nothing to run\n")
        return _report(folder, [task.id for task in tasks], latest, request.output_format, request.quiet)
    updates = {"address": request.address, "concurrency": request.concurrency, "retries": request.retries}
    record.options = record.options.model_copy(update={k: v for k, v in updates.items() if v is not None})
    kept = [line for task_id, line in latest.items() if task_id not in {task.id for task in again}]
    plan = FleetPlan(folder=folder, record=record, tasks=again, spent=total_cost(kept),
                     resume_ids={task.id for task in again if _has_session(folder, record.fleet_id, task)})
    return _run(ray, plan, request.output_format, request.quiet, [task.id for task in tasks])


def status_command(folder: Path, json_output: bool) -> int:
    """`fleet status`: the table (or JSON) of DIR's outcomes; the tasks not run yet included."""
    folder = folder.expanduser().resolve()
    try:
        record = read_record(folder)
    except TaskFileError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    latest = read_results(folder)
    try:
        task_ids = [task.id for task in read_tasks(Path(record.tasks_file), record.defaults)]
    except TaskFileError:  # the tasks file moved: what the results know
        task_ids = list(latest)
    data = summary(task_ids, latest)
    if json_output:
        sys.stdout.write(json.dumps(data) + "\n")
        return int(data["exit_code"])
    from rich.console import Console

    console = Console(highlight=False)
    console.print(table(task_ids, latest, title=_headline(data), width=console.width))
    return int(data["exit_code"])  # the worst outcome's, as `fleet run` ends


def _run(ray: Any, plan: FleetPlan, output_format: str, quiet: bool, all_ids: list[str]) -> int:
    """Run the plan; Ray prints its own notices (a worker that died…) to `sys.stdout`, which is
    the results' place: while Ray runs, `sys.stdout` is stderr and only the views write to stdout."""
    stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        code = _run_on_ray(ray, plan, output_format, quiet, all_ids, stdout)
    if isinstance(code, int):
        return code
    latest, data, interrupted = code
    if interrupted:
        sys.stderr.write(f"fleet: interrupted; continue with `recursive fleet resume {plan.folder}`\n")
    return _report(plan.folder, all_ids, latest, output_format, quiet,
                   EXIT_INTERRUPTED if interrupted else None, data)


def _run_on_ray(ray: Any, plan: FleetPlan, output_format: str, quiet: bool, all_ids: list[str],
                stdout: TextIO) -> int | tuple[dict[str, ResultLine], dict[str, Any], bool]:
    """The fleet's run on Ray: the exit code when Ray cannot be had, else the results, their
    summary, and whether Ctrl-C cut the run short."""
    latest_before = read_results(plan.folder)
    tally = Tally(total=len(plan.tasks))
    views = make_views(tally, output_format, quiet, tty=sys.stderr.isatty(), stdout=stdout)
    interrupted = False
    started_here = False
    try:
        connection = connect(ray, plan.record.options.address)
        started_here = connection.started
        write_record(plan.folder, plan.record)
        Scheduler(ray, plan, views, tally, connection).run()
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # Ray could not be reached or started: say so in one line
        if type(exc).__module__.split(".")[0] != "ray" and not isinstance(exc, ConnectionError):
            raise
        views.close(summary(all_ids, latest_before))
        raise CliError(f"cannot reach Ray at {plan.record.options.address or 'a local Ray'}: "
                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from None
    finally:
        if started_here:
            ray.shutdown()
    latest = read_results(plan.folder)
    data = summary(all_ids, latest)
    views.close(data)
    return latest, data, interrupted


def _report(folder: Path, ids: list[str], latest: dict[str, ResultLine], output_format: str, quiet: bool,
            code: int | None = None, data: dict[str, Any] | None = None) -> int:
    """The summary table on stderr, the folder (text) or the summary (json) on stdout; the exit code."""
    data = data or summary(ids, latest)
    if not quiet:
        from rich.console import Console

        console = Console(stderr=True, highlight=False)
        console.print(table(ids, latest, title=_headline(data), width=console.width))
    if output_format == "text":
        sys.stdout.write(f"{folder}\n")
    elif output_format == "json":
        sys.stdout.write(json.dumps({"type": "fleet", "subtype": "finished", "results_dir": str(folder), **{
            k: v for k, v in data.items() if k != "type"}}, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    if code is not None:
        return code
    return exit_code(latest[i] for i in ids if i in latest) or (0 if all(i in latest for i in ids) else 1)


def _headline(data: dict[str, Any]) -> str:
    return (f"fleet: {data['succeeded']}/{data['tasks']} succeeded · {data['failed']} failed · "
            f"{data['pending']} not run · {cost_text(data['total_cost_usd'], data['unpriced'])}")


def _has_session(folder: Path, fleet_id: str, task: TaskSpec) -> bool:
    """Whether a task has a session to continue: in this home, or its bundle in the results."""
    from ...core.settings import default_home

    session_id = session_id_for(fleet_id, task.id)
    return ((default_home() / "sessions" / session_id / "transcript.jsonl").is_file()
            or (folder / SESSIONS_DIR / f"{session_id}.bundle").is_file())


def _flag_problem(exc: ValidationError) -> str:
    """`--memory: expected a size like 2G …`: a default's problem, named by its flag."""
    field = str(exc.errors()[0]["loc"][0]) if exc.errors()[0]["loc"] else ""
    text = describe(exc)
    flag = {"checks": "--check"}.get(field, "--" + field.replace("_", "-"))
    return f"{flag}: {text.split(': ', 1)[1]}" if ": " in text else text
