"""One attempt of one task, as it runs on a Ray worker: `run_attempt` is the Ray task.

It is plain Python (Ray wraps it as a streaming generator in runner.py): it prepares the
workspace (the folder, or a fresh clone of a git URL at its ref), runs the same CLI as a
subprocess (`python -m recursive_cli goal|run … -o stream-json --session-id ID`, or `resume
ID` for a retry), and yields what the driver needs as it happens: each stream-json line, the
session's bundle whenever its files changed (at most every `bundle_every` seconds, and once
at the end), and the outcome. A bundle that has reached the driver survives the worker: a
retry elsewhere imports it and resumes the session instead of starting over.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel

from ...core.errors import WorkspaceError
from ...core.procs import process_alive  # (a zombie holds no lock: gone)

STDERR_TAIL = 20_000  # characters of the CLI's stderr kept for the driver's log
_STOP_GRACE = 10.0  # seconds a stopped CLI gets to save its session after SIGTERM


class AttemptJob(BaseModel):
    """Everything one attempt needs; no key (those are in the worker's environment)."""

    fleet_id: str
    task_id: str
    session_id: str
    attempt: int
    mode: str
    prompt: str
    workspace: str  # a folder on the worker, or a git URL
    ref: str | None = None
    git: bool = False
    flags: list[str]  # a new session: the task's flags after `goal|run`
    resume: bool = False  # go on with the session if it exists (here, or in `bundle`)
    resume_flags: list[str] = []  # a resumed session: the budget caps
    bundle: bytes | None = None
    home: str  # the driver's RECURSIVE_HOME, used when this worker is on the driver's host
    driver_host: str
    user_config: str | None = None  # the driver's config.toml, for a worker on another host
    bundle_every: float = 2.0


class AttemptStarted(BaseModel):
    """The CLI process is running."""

    kind: Literal["started"] = "started"
    pid: int
    host: str
    workspace: str
    resumed: bool
    imported: bool


class AttemptLine(BaseModel):
    """One stream-json line of the CLI, as it printed it."""

    kind: Literal["event"] = "event"
    event: dict[str, Any]


class AttemptBundle(BaseModel):
    """The session's latest bundle."""

    kind: Literal["bundle"] = "bundle"
    data: bytes


class SessionTotals(BaseModel):
    """The session's totals over every attempt (from its meta.json)."""

    steps: int = 0
    turns: int = 0
    usage: dict[str, int] = {}
    cost_usd: float | None = None


class AttemptDone(BaseModel):
    """How the attempt ended: the CLI's exit code and result line, or why it could not run."""

    kind: Literal["done"] = "done"
    returncode: int | None = None
    result: dict[str, Any] | None = None
    totals: SessionTotals | None = None
    stderr: str = ""
    error: str | None = None
    host: str = ""
    workspace: str = ""


AttemptItem = AttemptStarted | AttemptLine | AttemptBundle | AttemptDone


def run_attempt(job: AttemptJob) -> Iterator[AttemptItem]:
    """Run one attempt of a task and report it as it goes (see the module's docstring)."""
    host = socket.gethostname()
    home = worker_home(job, host)
    try:
        workspace = prepare_workspace(job)
        argv, resumed, imported = _command(job, home, workspace)
    except WorkspaceError as exc:
        yield AttemptDone(error=str(exc), host=host, workspace=job.workspace)
        return
    env = dict(os.environ) | {"RECURSIVE_HOME": str(home)}
    env.pop("RECURSIVE_WORKSPACE", None)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errors:
        proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=errors, start_new_session=True,
                                preexec_fn=_die_with_parent)
        yield AttemptStarted(pid=proc.pid, host=host, workspace=str(workspace), resumed=resumed,
                             imported=imported)
        result: dict[str, Any] | None = None
        try:
            for item in _follow(proc, job, home):
                if isinstance(item, AttemptLine) and item.event.get("type") == "result":
                    result = item.event
                yield item
        finally:
            _stop(proc)
        errors.seek(0)
        stderr = errors.read()[-STDERR_TAIL:]
    last = _bundle(home, job.session_id)
    if last is not None:
        yield last
    yield AttemptDone(returncode=proc.returncode, result=result, totals=_totals(home, job.session_id),
                      stderr=stderr, host=host, workspace=str(workspace))


def worker_home(job: AttemptJob, host: str) -> Path:
    """The driver's home on its own host (sessions land where the user is); elsewhere a home
    of the worker's, with the driver's config.toml (prices, defaults) in it."""
    if host == job.driver_host:
        return Path(job.home)
    home = Path(tempfile.gettempdir()) / "recursive-fleet" / "home"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.toml"
    if job.user_config is not None and (not config.is_file() or config.read_text(encoding="utf-8") != job.user_config):
        config.write_text(job.user_config, encoding="utf-8")
    return home


def prepare_workspace(job: AttemptJob) -> Path:
    """The task's folder; or its repository cloned (once per task and worker: a retry on the
    same worker goes on in the same clone) and checked out at its ref."""
    if not job.git:
        folder = Path(job.workspace)
        if not folder.is_dir():
            raise WorkspaceError(f"workspace {folder} is not a folder on {socket.gethostname()}")
        return folder
    folder = Path(tempfile.gettempdir()) / "recursive-fleet" / job.fleet_id / job.task_id
    if job.resume and (folder / ".git").exists():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    _git(["clone", "--quiet", "--", job.workspace, str(folder)], f"cannot clone {job.workspace}")
    if job.ref:
        _git(["-C", str(folder), "checkout", "--quiet", job.ref], f"cannot check out {job.ref!r} of {job.workspace}")
    return folder


def _git(args: list[str], what: str) -> None:
    try:
        proc = subprocess.run(["git", *args], capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorkspaceError(f"{what}: {exc}") from None
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise WorkspaceError(f"{what}: {lines[-1] if lines else f'git exited {proc.returncode}'}")


def _command(job: AttemptJob, home: Path, workspace: Path) -> tuple[list[str], bool, bool]:
    """The CLI's command line: resume the session when asked and it exists (importing the
    bundle when only that does), else start it; and whether it resumes, whether it imported."""
    cli = [sys.executable, "-m", "recursive_cli"]
    imported = False
    if job.resume and not _has_session(home, job.session_id) and job.bundle:
        from .bundles import import_bytes

        try:
            import_bytes(home, job.bundle, workspace)
        except Exception as exc:  # a damaged or foreign bundle: say which, do not start over silently
            raise WorkspaceError(f"cannot import the session bundle of {job.session_id}: {exc}") from None
        imported = True
    if job.resume and _has_session(home, job.session_id):
        _wait_for_lock(home / "sessions" / job.session_id)
        moved = not _works_in(_session_workspace(home, job.session_id), workspace)
        where = ["-C", str(workspace)] if moved else []
        return [*cli, "resume", job.session_id, "--no-stdin", "-o", "stream-json", *where,
                *job.resume_flags], True, imported
    return [*cli, job.mode, "--no-stdin", "-o", "stream-json", "--session-id", job.session_id,
            "-C", str(workspace), *job.flags, "--", job.prompt], False, imported


def _wait_for_lock(folder: Path, timeout: float = _STOP_GRACE + 5) -> None:
    """Give the previous attempt's CLI, still saving the session after its worker died (it
    gets SIGTERM then), the time to let go of its lock, so that `resume` does not find the
    session in use."""
    from ...features.sessions.lock import read_lock

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        owner = read_lock(folder)
        if owner is None or owner.host != socket.gethostname() or not process_alive(owner.pid):
            return
        time.sleep(0.1)


def _has_session(home: Path, session_id: str) -> bool:
    return (home / "sessions" / session_id / "transcript.jsonl").is_file()


def _works_in(saved: str | None, workspace: Path) -> bool:
    """Whether a session saved with workspace `saved` goes on where it was: `workspace` itself,
    or a git worktree of it (`"worktree": true`) that is still there."""
    if saved is None:
        return False
    path = Path(saved)
    return saved == str(workspace) or (path.is_relative_to(workspace) and path.is_dir())


def _session_workspace(home: Path, session_id: str) -> str | None:
    try:
        return str(json.loads((home / "sessions" / session_id / "meta.json").read_text(encoding="utf-8"))["workspace"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _follow(proc: subprocess.Popen[bytes], job: AttemptJob, home: Path) -> Iterator[AttemptItem]:
    """The CLI's stdout lines as they come, and a bundle whenever the session changed and
    `bundle_every` has passed (a silent CLI, e.g. in a long shell command, is looked at too)."""
    lines: queue.Queue[bytes | None] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
    seen: tuple[int, int] | None = None
    sent = time.monotonic()
    while True:
        try:
            raw = lines.get(timeout=job.bundle_every)
        except queue.Empty:
            raw = b""
        if raw is None:
            break
        if raw.strip():
            event = _parse(raw)
            if event is not None:
                yield AttemptLine(event=event)
        if time.monotonic() - sent >= job.bundle_every:
            sent = time.monotonic()
            state = _session_state(home, job.session_id)
            if state is not None and state != seen:
                seen = state
                bundle = _bundle(home, job.session_id, live=True)
                if bundle is not None:
                    yield bundle
    proc.wait()


def _read_lines(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    try:
        for raw in stream:
            lines.put(raw)
    finally:
        lines.put(None)


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _session_state(home: Path, session_id: str) -> tuple[int, int] | None:
    """Size and mtime of the session's transcript: whether it changed since the last bundle."""
    try:
        stat = (home / "sessions" / session_id / "transcript.jsonl").stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _bundle(home: Path, session_id: str, live: bool = False) -> AttemptBundle | None:
    from .bundles import export_bytes

    try:
        data = export_bytes(home, session_id, live)
    except Exception:  # a bundle is a copy for retries elsewhere: failing to make one must not fail the task
        return None
    return AttemptBundle(data=data) if data is not None else None


def _totals(home: Path, session_id: str) -> SessionTotals | None:
    from ...core.values import as_json, load
    from ...features.sessions.meta import META_FILE, SessionMeta

    try:
        meta = load(SessionMeta, (home / "sessions" / session_id / META_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return SessionTotals(steps=meta.steps, turns=meta.turns, usage=as_json(meta.usage, exclude_none=True),
                         cost_usd=meta.cost_usd)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the CLI if it still runs (the attempt was cancelled): SIGTERM lets it save its
    session and release its lock; SIGKILL after a grace period."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(_STOP_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, get SIGTERM when the worker dies, so that a killed
    worker leaves no agent running (and holding the session's lock) behind it."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
