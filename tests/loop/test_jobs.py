"""BackgroundJobManager with real processes: files not pipes, whole-group kills, timeouts, orphans."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

from recursive_cli.features.loop.jobs import MARKER_VARIABLE, BackgroundJobManager, JobRecord, kill_orphans

from .conftest import alive, wait_gone


def wait_marked(pid: int, marker: str, program: str = "sleep", timeout: float = 10) -> None:
    """Wait until process `pid` runs `program` and shows `marker` in /proc: until its exec is
    complete. Popen returns (and a shell's `$!` is written) while the exec is still under way;
    until the kernel has set up the new program's environment, /proc/PID/environ reads empty and
    the process cannot be recognised yet, unlike the long-running orphans the tests stand for."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    proc = Path(f"/proc/{pid}")
    deadline = time.monotonic() + timeout
    while (proc / "comm").read_text().strip() != program or \
            needle not in (proc / "environ").read_bytes().split(b"\0"):
        assert time.monotonic() < deadline, f"process {pid} never showed its marker"
        time.sleep(0.005)


def test_a_job_writes_to_a_file_and_its_end_wakes_the_waiter(tmp_path: Path, workspace: Path) -> None:
    jobs = BackgroundJobManager(tmp_path / "session")
    ended: list[str] = []
    jobs.on_finish = lambda record: ended.append(record.id)

    async def scenario() -> tuple[JobRecord, float]:
        changed = jobs.changed()
        changed.clear()
        record = await jobs.start("pwd; echo err >&2; sleep 0.3; exit 4", workspace)
        assert record.running and jobs.running() == [record]
        started = time.monotonic()
        await asyncio.wait_for(changed.wait(), 10)
        return record, time.monotonic() - started

    record, waited = asyncio.run(scenario())
    assert 0.2 < waited < 3
    assert record.status == "exited" and record.exit_code == 4 and ended == ["job-1"]
    assert Path(record.output) == tmp_path / "session" / "jobs" / "job-1.log"
    assert Path(record.output).read_text() == f"{workspace}\nerr\n"
    assert jobs.next_unreported() is record


def test_stop_kills_the_whole_process_group(workspace: Path) -> None:
    jobs = BackgroundJobManager()

    async def scenario() -> JobRecord:
        record = await jobs.start("sleep 300 & echo $! > child.pid; wait", workspace)
        while not (workspace / "child.pid").exists():
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.05)
        await jobs.stop(record.id)
        return record

    record = asyncio.run(scenario())
    assert record.status == "stopped"
    assert wait_gone(int((workspace / "child.pid").read_text()))
    jobs.close()


def test_a_timeout_kills_the_job(workspace: Path) -> None:
    jobs = BackgroundJobManager()

    async def scenario() -> JobRecord:
        record = await jobs.start("sleep 30", workspace, timeout_seconds=0.3)
        await asyncio.wait_for(jobs.changed().wait(), 10)
        return record

    record = asyncio.run(scenario())
    assert record.status == "timed_out" and record.duration() < 5
    jobs.close()


def test_shutdown_marks_running_jobs_and_kills_finished_jobs_leftovers(workspace: Path) -> None:
    jobs = BackgroundJobManager()

    async def scenario() -> tuple[JobRecord, JobRecord]:
        done = await jobs.start("(sleep 300 & echo $! > leftover.pid)", workspace)
        running = await jobs.start("exec sleep 300", workspace)
        await asyncio.wait_for(jobs.changed().wait(), 10)
        wait_marked(int((workspace / "leftover.pid").read_text()), done.marker)
        await jobs.shutdown("lost", grace=False)
        return done, running

    done, running = asyncio.run(scenario())
    assert done.status == "exited" and running.status == "lost"
    assert wait_gone(running.pgid)
    assert wait_gone(int((workspace / "leftover.pid").read_text()))


def test_the_temp_folder_goes_away_on_close(workspace: Path) -> None:
    jobs = BackgroundJobManager()

    async def scenario() -> JobRecord:
        record = await jobs.start("echo hi", workspace)
        await asyncio.wait_for(jobs.changed().wait(), 10)
        return record

    record = asyncio.run(scenario())
    folder = Path(record.output).parent
    assert folder.is_dir()
    jobs.close()
    assert not folder.exists()


def test_restore_kills_recognised_orphans_and_marks_them_lost(tmp_path: Path) -> None:
    marker = "0123456789abcdef"
    orphan = subprocess.Popen(["sleep", "60"], start_new_session=True,
                              env={**os.environ, MARKER_VARIABLE: marker})
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        wait_marked(orphan.pid, marker)
        records = [
            JobRecord(id="job-1", command="sleep 60", output=str(tmp_path / "1.log"), pgid=orphan.pid,
                      marker=marker, started=time.time()),
            # Same group id as a process that is not ours: it must survive.
            JobRecord(id="job-2", command="sleep 60", output=str(tmp_path / "2.log"),
                      pgid=stranger.pid, marker="ffffffffffffffff", started=time.time()),
            JobRecord(id="job-3", command="true", output=str(tmp_path / "3.log"), pgid=1,
                      marker="x", started=time.time(), status="exited", exit_code=0, ended=time.time()),
        ]
        jobs = BackgroundJobManager()
        lost = jobs.restore(records, next_id=4)
        assert [r.id for r in lost] == ["job-1", "job-2"]
        assert all(r.status == "lost" and not r.reported for r in lost)
        assert orphan.wait(timeout=5) == -signal.SIGKILL
        assert alive(stranger.pid)
        assert kill_orphans(records[1:2]) == []
    finally:
        for proc in (orphan, stranger):
            proc.kill()
            proc.wait()


def test_saved_state_keeps_unsettled_jobs_and_the_latest_settled(tmp_path: Path) -> None:
    jobs = BackgroundJobManager()
    records = [JobRecord(id=f"job-{i}", command="true", output="", pgid=0, marker="", started=0.0,
                         status="exited", reported=i % 2 == 0) for i in range(1, 61)]
    jobs.restore(records, next_id=61)
    saved, next_id = jobs.saved()
    assert next_id == 61
    unreported = [r.id for r in saved if not r.reported]
    assert len(unreported) == 30 and len(saved) == 50
    assert saved[-1].id == "job-60"
