"""A job's process caught between fork and the end of exec still counts as the job's: its
environment, empty for that moment, is read again before it is taken for someone else's."""

from __future__ import annotations

import threading
from pathlib import Path

from recursive_cli.features.loop import jobs

MARKER_VARIABLE = jobs.MARKER_VARIABLE


def test_an_environment_that_is_empty_for_a_moment_is_read_again(tmp_path: Path) -> None:
    entry = tmp_path / "4242"  # stands in for /proc/4242 of a process mid-exec
    entry.mkdir()
    (entry / "environ").write_bytes(b"")
    filled = threading.Timer(0.01, (entry / "environ").write_bytes,
                             (f"HOME=/root\0{MARKER_VARIABLE}=job-marker\0".encode(),))
    filled.start()
    try:
        assert jobs._carries(entry, "job-marker")
    finally:
        filled.join()


def test_an_environment_that_stays_empty_is_not_the_jobs(tmp_path: Path) -> None:
    entry = tmp_path / "4243"  # a zombie or a kernel thread: empty for good
    entry.mkdir()
    (entry / "environ").write_bytes(b"")
    assert not jobs._carries(entry, "job-marker")
    (entry / "environ").write_bytes(f"{MARKER_VARIABLE}=another\0".encode())
    assert not jobs._carries(entry, "job-marker")
