"""Background jobs: shell commands a loop's agent starts now and hears back from when they end.

Each job runs under bash as the leader of its own session (so its own process group), with
stdout and stderr going straight to one file in the session folder. No pipe is involved, so a
job printing gigabytes never blocks and costs no memory here. A watcher task per job waits
for it to exit (or for its timeout) and reports it; stopping a job kills its whole group
with `killpg` — never `Process.kill`, which reaches only the shell and does nothing once the
shell has been reaped, leaving its children running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from ...core.tool import read_environ
from ...tools.shell import ENV_HIDDEN, ENV_OVERRIDES, KILL_GRACE_SECONDS, kill_group, terminate_group

if TYPE_CHECKING:
    from ...core.tool import CommandSandbox, RunningCommand

JobStatus = Literal["running", "exited", "timed_out", "stopped", "lost"]
MARKER_VARIABLE = "RECURSIVE_JOB_MARKER"  # lets a resumed run recognise a job's orphans
JOBS_DIR = "jobs"
KEEP_SETTLED = 20  # finished and reported jobs still kept in the saved state


class JobRecord(BaseModel):
    """One background job as the session remembers it."""

    id: str
    command: str
    output: str  # the file its stdout and stderr go to
    pgid: int
    marker: str
    started: float  # wall-clock epoch seconds
    timeout_seconds: float | None = None
    status: JobStatus = "running"
    exit_code: int | None = None
    ended: float | None = None
    reported: bool = False  # the agent has been told how it ended

    @property
    def running(self) -> bool:
        return self.status == "running"

    def duration(self) -> float:
        """Seconds it ran (so far, while running)."""
        return (self.ended or time.time()) - self.started


def read_tail(path: str | Path, limit: int) -> tuple[str, int]:
    """The last `limit` bytes of a job's output as text, and the output's whole size."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            data = handle.read(limit)
    except OSError:
        return "", 0
    return data.decode("utf-8", "replace"), size


class BackgroundJobManager:
    """Starts, watches, stops and remembers the background jobs of one loop."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder  # output goes to folder/jobs/; a temp folder when None
        self.on_finish: Callable[[JobRecord], None] = lambda record: None
        # Entered before a job starts and left once it has ended (checkpoints snapshot the
        # workspace there, to know what the job changed).
        self.around_job: Callable[[str], contextlib.AbstractAsyncContextManager[None]] = \
            lambda command: contextlib.nullcontext()
        self._records: dict[str, JobRecord] = {}
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._next = 1
        self._changed: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self._temp: Path | None = None

    async def start(self, command: str, cwd: Path, timeout_seconds: float | None = None,
                    sandbox: CommandSandbox | None = None) -> JobRecord:
        """Start `command` in `cwd` (inside `sandbox`, as run_shell's commands are); its exit is
        reported through `on_finish`."""
        job_id = f"job-{self._next}"
        self._next += 1
        path = self._output_folder() / f"{job_id}.log"
        marker = secrets.token_hex(8)
        watch = contextlib.AsyncExitStack()
        await watch.enter_async_context(self.around_job(command))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            proc = await _spawn(command, cwd, fd, marker, sandbox)
        except BaseException:
            await watch.aclose()
            raise
        finally:
            os.close(fd)
        record = JobRecord(id=job_id, command=command, output=str(path), pgid=proc.pid,
                           marker=marker, started=time.time(), timeout_seconds=timeout_seconds)
        self._records[job_id] = record
        self._watchers[job_id] = asyncio.ensure_future(self._watch(record, proc, watch))
        return record

    def get(self, job_id: str) -> JobRecord | None:
        return self._records.get(job_id.strip())

    def records(self) -> list[JobRecord]:
        return list(self._records.values())

    def running(self) -> list[JobRecord]:
        return [record for record in self._records.values() if record.running]

    def next_unreported(self) -> JobRecord | None:
        """The job that ended first among those the agent has not been told about."""
        ended = [r for r in self._records.values() if not r.running and not r.reported]
        return min(ended, key=lambda r: r.ended or 0.0, default=None)

    def saved(self) -> tuple[list[JobRecord], int]:
        """What to keep in the session: unsettled jobs and the latest settled ones; the next id."""
        settled = [r.id for r in self._records.values() if r.reported and not r.running]
        dropped = set(settled[:-KEEP_SETTLED])
        return [r for r in self._records.values() if r.id not in dropped], self._next

    def restore(self, records: list[JobRecord], next_id: int) -> list[JobRecord]:
        """Take back a session's jobs; those still marked running died with the old process:
        their orphans are killed and they become `lost`. Returns the lost ones."""
        lost = [record for record in records if record.running]
        kill_orphans(lost)
        for record in records:
            if record.running:
                record.status, record.ended = "lost", time.time()
            self._records[record.id] = record
        self._next = max(self._next, next_id, len(self._records) + 1)
        return lost

    async def stop(self, job_id: str) -> JobRecord | None:
        """Stop a running job and everything it started (SIGTERM, then SIGKILL)."""
        record = self.get(job_id)
        if record is None or not record.running:
            return record
        record.status = "stopped"
        await terminate_group(record.pgid)
        watcher = self._watchers.get(record.id)
        if watcher is not None:
            await asyncio.wait({watcher}, timeout=KILL_GRACE_SECONDS)
        return record

    async def shutdown(self, status: JobStatus, *, grace: bool) -> None:
        """End every job with `status`, killing all their processes (gently when `grace`).

        A running job's shell is not reaped yet, so its group id is still ours to kill. Once a
        job has ended its group id may be reused, so what its children left behind is killed
        only when recognised by the job's marker (as for orphans after a crash).
        """
        ours = [self._records[job_id] for job_id in self._watchers]
        running = [record for record in ours if record.running]
        ended = [record for record in ours if not record.running]
        for record in running:
            record.status = status
        if grace:
            await asyncio.gather(*(terminate_group(record.pgid) for record in running))
        for record in running:
            kill_group(record.pgid, signal.SIGKILL)
        kill_orphans(ended)
        pending = [task for task in self._watchers.values() if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=KILL_GRACE_SECONDS)

    def changed(self) -> asyncio.Event:
        """Set whenever a job ends; the loop clears it before looking and waits on it after.

        One event per event loop: a library user may drive the runtime with several
        `asyncio.run` calls, and an event cannot be awaited from another loop.
        """
        loop = asyncio.get_running_loop()
        if self._changed is None or self._changed[0] is not loop:
            self._changed = (loop, asyncio.Event())
        return self._changed[1]

    def close(self) -> None:
        """Remove the temporary output folder, if one was made."""
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

    def _output_folder(self) -> Path:
        if self.folder is not None:
            folder = self.folder / JOBS_DIR
        else:
            if self._temp is None:
                self._temp = Path(tempfile.mkdtemp(prefix="recursive-jobs-"))
            folder = self._temp
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    async def _watch(self, record: JobRecord, proc: asyncio.subprocess.Process | RunningCommand,
                     watch: contextlib.AsyncExitStack) -> None:
        timed_out = False
        try:
            await asyncio.wait_for(proc.wait(), record.timeout_seconds)
        except asyncio.TimeoutError:
            timed_out = True
            await terminate_group(record.pgid)
            await proc.wait()
        await watch.aclose()
        if record.running:
            record.status = "timed_out" if timed_out else "exited"
        record.exit_code, record.ended = proc.returncode, time.time()
        self.changed().set()
        self.on_finish(record)


async def _spawn(command: str, cwd: Path, output_fd: int, marker: str,
                 sandbox: CommandSandbox | None) -> asyncio.subprocess.Process | RunningCommand:
    """bash -c `command` as a new session leader (in `sandbox`, as run_shell's commands are),
    all output to `output_fd`, no stdin."""
    shell = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    env = ({k: v for k, v in os.environ.items() if k not in ENV_HIDDEN} | ENV_OVERRIDES
           | {MARKER_VARIABLE: marker})
    if sandbox is not None and sandbox.confined:
        return sandbox.spawn((shell, "-c", command), str(cwd), {os.fsencode(k): os.fsencode(v) for k, v in env.items()},
                             output_fd, asyncio.get_running_loop())
    return await asyncio.create_subprocess_exec(
        shell, "-c", command, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=output_fd, stderr=asyncio.subprocess.STDOUT, start_new_session=True)


def kill_orphans(records: list[JobRecord]) -> list[str]:
    """Kill what is left of jobs nobody supervises any more, if it can be recognised; returns
    the ids of the jobs whose processes were killed.

    A process group id can be reused once its processes are gone, so a group is killed only
    when one of its processes carries the job's marker in its environment (Linux /proc; one
    pass over the process table for all the jobs).
    """
    wanted = {record.pgid: record for record in records}
    killed: list[str] = []
    for entry in _proc_entries() if wanted else []:
        with contextlib.suppress(OSError, ValueError, IndexError):
            pgid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2])
            record = wanted.get(pgid)
            if record is not None and _carries(entry, record.marker):
                kill_group(pgid, signal.SIGKILL)
                killed.append(wanted.pop(pgid).id)
        if not wanted:
            break
    return killed


def _carries(entry: Path, marker: str) -> bool:
    """Whether the process at /proc/<pid> has the job marker `marker` in its environment (one
    caught mid-exec, its environment empty for a moment, is read again: `read_environ`)."""
    data = read_environ(str(entry / "environ"))
    if data is None:
        raise OSError(f"cannot read {entry / 'environ'}")
    return f"{MARKER_VARIABLE}={marker}".encode() in data.split(b"\0")


def _proc_entries() -> list[Path]:
    try:
        return [entry for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    except OSError:
        return []
