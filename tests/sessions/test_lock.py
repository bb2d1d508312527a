"""Session locks: one live owner, stale locks taken over."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from recursive_cli.core.values import dumps
from recursive_cli.features.sessions.lock import LOCK_FILE, LockInfo, acquire_lock, live_owner, read_lock
from recursive_cli.features.sessions.records import SessionInUseError, now_iso


def plant_lock(folder, pid: int, host: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    info = LockInfo(pid=pid, host=host or socket.gethostname(), started=now_iso())
    (folder / LOCK_FILE).write_text(dumps(info))


def dead_pid() -> int:
    child = subprocess.Popen(["true"])  # (any program that ends at once; no interpreter needed)
    child.wait()
    return child.pid


def test_acquire_writes_pid_host_and_start_and_release_removes_it(tmp_path):
    folder = tmp_path / "s1"
    with acquire_lock(folder, "s1") as lock:
        info = read_lock(folder)
        assert info == lock.info and info.pid == os.getpid() and info.host == socket.gethostname()
        assert lock.warning is None
        assert [p.name for p in folder.iterdir()] == [LOCK_FILE]  # no temp files left
    assert not (folder / LOCK_FILE).exists()


def test_a_live_owner_is_refused_with_its_pid(tmp_path):
    plant_lock(tmp_path / "s1", os.getpid())
    with pytest.raises(SessionInUseError) as caught:
        acquire_lock(tmp_path / "s1", "s1")
    assert str(caught.value) == f"session s1 is in use by pid {os.getpid()}"


def test_a_second_acquire_in_the_same_process_is_refused(tmp_path):
    with acquire_lock(tmp_path / "s1", "s1"):
        with pytest.raises(SessionInUseError, match="is in use by pid"):
            acquire_lock(tmp_path / "s1", "s1")


def test_an_owner_on_another_host_is_assumed_alive(tmp_path):
    plant_lock(tmp_path / "s1", 1, host="elsewhere.example")
    with pytest.raises(SessionInUseError, match="in use by pid 1 on host elsewhere.example"):
        acquire_lock(tmp_path / "s1", "s1")


def test_a_dead_owners_lock_is_taken_over_with_a_warning(tmp_path):
    pid = dead_pid()
    plant_lock(tmp_path / "s1", pid)
    assert live_owner(tmp_path / "s1") is None
    lock = acquire_lock(tmp_path / "s1", "s1")
    assert lock.warning == (f"took over the lock of session s1 from pid {pid}, "
                            "which is no longer running")
    assert read_lock(tmp_path / "s1").pid == os.getpid()
    lock.release()


def test_a_garbage_lock_is_taken_over(tmp_path):
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / LOCK_FILE).write_bytes(b"\x00\x00")
    lock = acquire_lock(tmp_path / "s1", "s1")
    assert lock.warning and "unreadable" in lock.warning
    lock.release()


def test_release_leaves_a_lock_that_is_no_longer_ours(tmp_path):
    lock = acquire_lock(tmp_path / "s1", "s1")
    plant_lock(tmp_path / "s1", 424242)
    lock.release()
    assert read_lock(tmp_path / "s1").pid == 424242


def test_two_processes_on_one_session(tmp_path):
    """A real second process is refused while the first holds the lock."""
    code = ("import sys; from pathlib import Path; from recursive_cli.features.sessions.lock import acquire_lock\n"
            "from recursive_cli.features.sessions.records import SessionInUseError\n"
            "try:\n    acquire_lock(Path(sys.argv[1]), 's1')\n"
            "except SessionInUseError as exc:\n    print(exc); sys.exit(1)\n")
    with acquire_lock(tmp_path / "s1", "s1"):
        other = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s1")],
                               capture_output=True, text=True, timeout=60)
    assert other.returncode == 1
    assert other.stdout.strip() == f"session s1 is in use by pid {os.getpid()}"
