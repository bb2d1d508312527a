"""The driver of a fleet: Ray started or reached, tasks scheduled, budgets kept, failures retried.

Each attempt of a task is one call of the Ray task `worker.run_attempt` (a streaming
generator with `num_cpus`/`memory` requests), consumed by a thread that feeds one queue; the
driver's loop reads that queue alone, so results, bundles, the display and the budget are
only ever touched from one thread.

Why a streaming generator and not a ledger actor for the bundles: every bundle the worker
makes reaches the driver as the next item of the attempt's stream and is written at once to
DIR/sessions/<session>.bundle, so it outlives the worker and its node, and `fleet resume`
after a crash of the driver itself still finds it; no actor to keep alive, nothing to poll.

Retries: the CLI killed by a signal (or ended by SIGTERM/SIGINT that nobody in the fleet
sent), its worker dying, its node or raylet lost are infrastructure failures, retried up to
--retries times; the retry resumes the session (`recursive resume ID`, importing the last
bundle where the session is not on that worker). What the agent did — goal not met, budget,
stuck, errors — is a result, never retried.

The fleet's --max-cost: what the finished tasks cost is spent; a task starts only while
some is left, with its session capped at what is left (several tasks in flight may each
spend up to that rest: the overshoot is bounded by --concurrency).
"""

from __future__ import annotations

import logging
import os
import queue
import re
import socket
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import RayMissingError  # noqa: F401 (re-exported)
from ...core.settings import default_home
from ...core.wording import counted
from ...launch.errors import EXIT_UNAVAILABLE
from .progress import Tally, Views
from .record import LOGS_DIR, SESSIONS_DIR, FleetRecord
from .results import BAD_TASK, FLEET_BUDGET, INFRASTRUCTURE, ResultLine, append_result
from .tasks import TaskSpec, cli_flags, trust_flags
from .worker import AttemptBundle, AttemptDone, AttemptItem, AttemptJob, AttemptLine, AttemptStarted, run_attempt

INSTALL_HINT = "recursive fleet needs Ray: pip install 'recursive-cli[fleet]'"
# The provider keys, and the settings a worker on another host would not have: sent in Ray's
# runtime environment (never in a task, a result, a bundle or a log).
FORWARDED_ENV = ("RECURSIVE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RECURSIVE_API_BASE",
                 "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "RECURSIVE_MODEL", "RECURSIVE_PROVIDER",
                 "RECURSIVE_MAX_STEPS")
_INTERRUPTED_CODES = {130, 143}  # the CLI's own exits for SIGINT and SIGTERM
_INFRA_ERRORS = ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError", "ObjectLostError",
                 "OutOfMemoryError", "RaySystemError", "RpcError", "ActorDiedError")
_CANCEL_GRACE = 20.0  # seconds the attempts get to save their sessions after Ctrl-C


def import_ray() -> Any:
    """The `ray` module, or RayMissingError with the install hint."""
    try:
        import ray
    except ImportError:
        raise RayMissingError(INSTALL_HINT) from None
    return ray


def session_id_for(fleet_id: str, task_id: str) -> str:
    """The session of a task: the fleet's id (time plus random) and the task's id."""
    return f"{fleet_id}-{task_id}"


@dataclass
class FleetPlan:
    """What to run: the tasks, which of them continue their session, what was spent before."""

    folder: Path
    record: FleetRecord
    tasks: list[TaskSpec]
    resume_ids: set[str] = field(default_factory=set)
    spent: float = 0.0


@dataclass
class _Crash:
    """An attempt that ended without its outcome: its worker or node died, or it was cancelled."""

    reason: str
    infra: bool
    cancelled: bool = False


@dataclass
class _Flight:
    task: TaskSpec
    attempt: int
    gen: Any
    first_start: float
    thread: threading.Thread | None = None
    started: AttemptStarted | None = None


@dataclass
class Connection:
    """How this fleet reaches Ray: whether it started Ray itself (and stops it at the end),
    whether that Ray is local (no node will ever join it), the environment each task must
    still be given (the keys, when the Ray was already running in this process)."""

    started: bool
    local: bool
    task_env: dict[str, str]


def connect(ray: Any, address: str | None) -> Connection:
    """Reach Ray: the cluster at `address` (or RAY_ADDRESS), else a local Ray started in this
    process; a Ray this process already runs is used as it is."""
    env = {name: os.environ[name] for name in FORWARDED_ENV if os.environ.get(name)}
    if ray.is_initialized():
        return Connection(started=False, local=False, task_env=env)
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    _check_reachable(address)
    options: dict[str, Any] = {"address": address, "log_to_driver": False, "logging_level": logging.ERROR}
    if address == "local":
        options["include_dashboard"] = False
    if env:
        options["runtime_env"] = {"env_vars": env}
    ray.init(**options)
    return Connection(started=True, local=address == "local", task_env={})


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """ConnectionError when nothing answers at a `host:port` or `ray://host:port` address
    (Ray itself would keep trying for minutes); `auto` and `local` are Ray's to find."""
    match = re.fullmatch(r"(?:ray://)?\[?([^\]/]+?)\]?:(\d+)/?", address)
    if match is None:
        return
    try:
        socket.create_connection((match.group(1), int(match.group(2))), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {match.group(1)}:{match.group(2)} "
                              f"({exc.strerror or exc})") from None


class Scheduler:
    """Runs a FleetPlan on a connected Ray (see the module's docstring)."""

    def __init__(self, ray: Any, plan: FleetPlan, views: Views, tally: Tally, connection: Connection) -> None:
        self.ray = ray
        self.local = connection.local
        self.plan = plan
        self.views = views
        self.tally = tally
        self.task_env = connection.task_env
        self.options = plan.record.options
        self.remote = ray.remote(max_retries=0)(run_attempt)
        self.events: queue.Queue[tuple[str, int, AttemptItem | _Crash]] = queue.Queue()
        self.flights: dict[str, _Flight] = {}
        self.results: dict[str, ResultLine] = {}
        self.spent = plan.spent
        self.home = default_home()
        self.host = socket.gethostname()
        config = self.home / "config.toml"
        self.user_config = config.read_text(encoding="utf-8") if config.is_file() else None
        for sub in (SESSIONS_DIR, LOGS_DIR):
            (plan.folder / sub).mkdir(parents=True, exist_ok=True)

    def run(self) -> dict[str, ResultLine]:
        """Run every task of the plan; the outcome of each that finished (all, unless interrupted)."""
        pending = deque(self.plan.tasks)
        concurrency = self.options.concurrency or self._slots()
        try:
            while pending or self.flights:
                while pending and len(self.flights) < concurrency:
                    self._start(pending.popleft())
                try:
                    task_id, attempt, item = self.events.get(timeout=0.5)
                except queue.Empty:
                    continue
                self._handle(task_id, attempt, item)
        except KeyboardInterrupt:
            self._cancel_all()
            raise
        return self.results

    def _slots(self) -> int:
        cpus = float(self.ray.cluster_resources().get("CPU", 1))
        per_task = min((task.num_cpus or 1.0) for task in self.plan.tasks)
        return max(1, int(cpus // per_task))

    # -- starting -----------------------------------------------------------------------------

    def _start(self, task: TaskSpec) -> None:
        if self.options.max_cost is not None and self.spent >= self.options.max_cost:
            self._finish(ResultLine(id=task.id, subtype=FLEET_BUDGET, is_error=True, mode=task.mode or "",
                                    errors=[f"not started: the fleet's --max-cost ${self.options.max_cost:g} "
                                            f"is spent (${self.spent:.4f})"]))
            return
        too_big = self._infeasible(task) if self.local else None
        if too_big:
            self._finish(ResultLine(id=task.id, subtype=BAD_TASK, is_error=True, mode=task.mode or "",
                                    errors=[f"not started: {too_big}"]))
            return
        self._submit(task, 1, task.id in self.plan.resume_ids, time.monotonic())

    def _infeasible(self, task: TaskSpec) -> str | None:
        """Why the local Ray can never run `task` (Ray would keep it waiting for ever)."""
        total = self.ray.cluster_resources()
        cpus, memory = task.num_cpus or 1.0, task.memory or 0
        if cpus > total.get("CPU", 0):
            return f"it asks for {cpus:g} CPUs; this Ray has {total.get('CPU', 0):g}"
        if memory > total.get("memory", 0):
            return f"it asks for {memory / 1e9:.2f} GB of memory; this Ray has {total.get('memory', 0) / 1e9:.2f} GB"
        return None

    def _submit(self, task: TaskSpec, attempt: int, resume: bool, first_start: float) -> None:
        session_id = session_id_for(self.plan.record.fleet_id, task.id)
        cap = self._cap(task)
        bundle = self._bundle_path(session_id)
        job = AttemptJob(fleet_id=self.plan.record.fleet_id, task_id=task.id, session_id=session_id,
                         attempt=attempt, mode=task.mode or "run", prompt=task.prompt,
                         workspace=task.workspace or self.plan.record.workspace, ref=task.ref, git=task.git,
                         flags=cli_flags(task, cap), resume=resume,
                         resume_flags=([] if cap is None else ["--max-cost", str(cap)]) + trust_flags(task),
                         bundle=bundle.read_bytes() if resume and bundle.is_file() else None,
                         home=str(self.home), driver_host=self.host, user_config=self.user_config)
        options: dict[str, Any] = {"num_cpus": task.num_cpus or 1}
        if task.memory:
            options["memory"] = task.memory
        if self.task_env:
            options["runtime_env"] = {"env_vars": self.task_env}
        gen = self.remote.options(**options).remote(job)
        flight = _Flight(task, attempt, gen, first_start)
        self.flights[task.id] = flight
        self.tally.start(task.id, attempt)
        flight.thread = threading.Thread(target=self._consume, args=(task.id, attempt, gen), daemon=True,
                                         name=f"fleet-{task.id}")
        flight.thread.start()

    def _cap(self, task: TaskSpec) -> float | None:
        """The session's --max-cost: the task's own, within what is left of the fleet's."""
        caps = [cost for cost in (task.max_cost, None if self.options.max_cost is None
                                  else round(self.options.max_cost - self.spent, 6)) if cost is not None]
        return min(caps) if caps else None

    def _consume(self, task_id: str, attempt: int, gen: Any) -> None:
        """(Thread) The attempt's items onto the queue, ending with its outcome or a _Crash."""
        done = False
        try:
            for ref in gen:
                item = self.ray.get(ref)
                done = done or isinstance(item, AttemptDone)
                self.events.put((task_id, attempt, item))
        except Exception as exc:  # whatever Ray raises, the driver must hear that the attempt ended
            self.events.put((task_id, attempt, _crash(exc)))
            return
        if not done:
            self.events.put((task_id, attempt, _Crash("the attempt ended without an outcome", infra=True)))

    # -- what attempts report ------------------------------------------------------------------

    def _handle(self, task_id: str, attempt: int, item: AttemptItem | _Crash) -> None:
        flight = self.flights.get(task_id)
        if flight is None or flight.attempt != attempt:
            return  # a late item of an attempt already given up on
        session_id = session_id_for(self.plan.record.fleet_id, task_id)
        if isinstance(item, AttemptStarted):
            flight.started = item
            self.views.started(task_id, attempt, session_id, item.resumed, item.host)
        elif isinstance(item, AttemptLine):
            self.views.event(task_id, item.event)
        elif isinstance(item, AttemptBundle):
            _write_atomically(self._bundle_path(session_id), item.data)
        elif isinstance(item, AttemptDone):
            self._log(flight, item)
            if item.error is None and _killed(item.returncode):
                self._retry_or_give_up(flight, f"the agent's process was killed ({_signal_name(item.returncode)})")
            elif item.error is None and item.returncode == EXIT_UNAVAILABLE and flight.attempt <= self.options.retries:
                self._retry_or_give_up(flight, "the model was unavailable through every retry (exit 75)")
            else:
                self._finish(self._outcome(flight, item))
        elif not item.cancelled:
            if item.infra:
                self._retry_or_give_up(flight, item.reason)
            else:
                self._finish(self._line(flight, "error_during_execution", None, errors=[item.reason]))

    def _retry_or_give_up(self, flight: _Flight, reason: str) -> None:
        if flight.attempt <= self.options.retries:
            self.views.retrying(flight.task.id, flight.attempt + 1, reason)
            self._submit(flight.task, flight.attempt + 1, True, flight.first_start)
            return
        self._finish(self._line(flight, INFRASTRUCTURE, None,
                                errors=[f"{reason}; gave up after {counted(flight.attempt, 'attempt')}"]))

    def _outcome(self, flight: _Flight, done: AttemptDone) -> ResultLine:
        result = done.result or {}
        if done.error is not None:
            return self._line(flight, "error_during_execution", None, errors=[done.error], done=done)
        subtype = str(result.get("subtype") or (BAD_TASK if done.returncode == 2 else "error_during_execution"))
        errors = [str(e) for e in result.get("errors") or []] or _error_lines(done.stderr)
        line = self._line(flight, subtype, done.returncode, errors=errors, done=done)
        line.result, line.num_turns = str(result.get("result") or ""), int(result.get("num_turns") or 0)
        if line.total_cost_usd is None and isinstance(result.get("total_cost_usd"), (int, float)):
            line.total_cost_usd = float(result["total_cost_usd"])
        return line

    def _line(self, flight: _Flight, subtype: str, exit_code: int | None, errors: list[str],
              done: AttemptDone | None = None) -> ResultLine:
        session_id = session_id_for(self.plan.record.fleet_id, flight.task.id)
        bundle = self._bundle_path(session_id)
        totals = done.totals if done is not None else None
        started = flight.started
        return ResultLine(
            id=flight.task.id, subtype=subtype, is_error=subtype != "success", exit_code=exit_code,
            mode=flight.task.mode or "", steps=totals.steps if totals else 0, turns=totals.turns if totals else 0,
            usage=totals.usage if totals else {}, total_cost_usd=totals.cost_usd if totals else None,
            duration_ms=int((time.monotonic() - flight.first_start) * 1000), session_id=session_id,
            bundle=str(bundle.resolve()) if bundle.is_file() else None, attempts=flight.attempt,
            workspace=(done.workspace if done else None) or (started.workspace if started else None),
            host=(done.host if done else None) or (started.host if started else None), errors=errors)

    def _finish(self, line: ResultLine) -> None:
        self.flights.pop(line.id, None)
        append_result(self.plan.folder, line)
        self.results[line.id] = line
        self.spent += line.total_cost_usd or 0.0
        self.tally.finish(line)
        self.views.finished(line)

    def _bundle_path(self, session_id: str) -> Path:
        return self.plan.folder / SESSIONS_DIR / f"{session_id}.bundle"

    def _log(self, flight: _Flight, done: AttemptDone) -> None:
        """The CLI's stderr, per attempt, in DIR/logs/<task>.log."""
        with (self.plan.folder / LOGS_DIR / f"{flight.task.id}.log").open("a", encoding="utf-8") as handle:
            handle.write(f"--- attempt {flight.attempt} on {done.host or '?'}: exit {done.returncode} ---\n")
            handle.write(done.stderr if not done.error else done.error + "\n")

    def _cancel_all(self) -> None:
        """Ctrl-C: stop every attempt (each CLI gets SIGTERM and saves its session) and wait a
        little for them; their tasks get no line, so `fleet resume` continues them."""
        for flight in self.flights.values():
            try:
                self.ray.cancel(flight.gen)
            except Exception:  # cancelling is best effort: the process is ending
                pass
        deadline = time.monotonic() + _CANCEL_GRACE
        for flight in self.flights.values():
            if flight.thread is not None:
                flight.thread.join(max(0.0, deadline - time.monotonic()))


def _crash(exc: BaseException) -> _Crash:
    names = {cls.__name__ for cls in type(exc).__mro__}
    reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
    if "TaskCancelledError" in names:
        return _Crash(reason, infra=False, cancelled=True)
    return _Crash(reason, infra=bool(names & set(_INFRA_ERRORS)))




def _killed(returncode: int | None) -> bool:
    return returncode is not None and (returncode < 0 or returncode in _INTERRUPTED_CODES)


def _signal_name(returncode: int | None) -> str:
    import signal

    if returncode is not None and returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit {returncode}"


def _error_lines(stderr: str) -> list[str]:
    """The CLI's `error: …` lines, when it ended without a result."""
    return [line.removeprefix("error: ") for line in stderr.splitlines() if line.startswith("error: ")][-3:]


def _write_atomically(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".part")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(temp, path)
