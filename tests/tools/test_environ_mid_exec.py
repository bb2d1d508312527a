"""A command's process caught between fork and the end of exec still counts as the command's:
its environment, empty for that moment, is read again (the shell's leftover sweep and count
used to miss it — "the shell left 2 processes running" where 3 were left, seen under load)."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from recursive_cli.core import tool as base


def test_an_environment_that_is_empty_for_a_moment_is_read_again(tmp_path: Path) -> None:
    environ = tmp_path / "environ"  # stands in for /proc/PID/environ of a process mid-exec
    environ.write_bytes(b"")
    filled = threading.Timer(0.01, environ.write_bytes, (f"{base.MARKER_VARIABLE}=run.1\0".encode(),))
    filled.start()
    try:
        assert base.read_environ(str(environ)) == f"{base.MARKER_VARIABLE}=run.1\0".encode()
    finally:
        filled.join()


def test_one_that_stays_empty_or_cannot_be_read_is_given_back_as_it_is(tmp_path: Path) -> None:
    environ = tmp_path / "environ"
    environ.write_bytes(b"")
    assert base.read_environ(str(environ)) == b""  # a zombie: empty for good, after a short wait
    assert base.read_environ(str(tmp_path / "gone")) is None


def test_the_sweep_finds_a_marked_process_and_leaves_kernel_threads_out() -> None:
    marker = base.child_marker(None)
    env = {**os.environ, base.MARKER_VARIABLE: marker}
    with subprocess.Popen(["sleep", "30"], env=env, start_new_session=True) as child:
        try:
            found = base.live_processes(marker)
            assert child.pid in found
            kernel = [pid for pid in base.proc_pids() if pid != child.pid
                      and (fields := base._stat_fields(pid)) is not None and int(fields[6]) & base.PF_KTHREAD]
            assert not found & set(kernel)
        finally:
            child.kill()
