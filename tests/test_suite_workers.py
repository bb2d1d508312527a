"""The suite's own machinery (tests/conftest.py) as a pytest run sees it: `-n auto` starts two
workers per CPU, a worker's first temp folders made by threads at once all survive, and a
worker that ends early still reports its results, tears down its session fixtures and runs its
atexit handlers."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

INNER = '''
import atexit
import os
import sys
import threading
from pathlib import Path

import pytest

atexit.register(lambda: Path(os.environ["MARKS"], f"atexit-{os.getpid()}").write_text("ran"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Eight threads make their folders at the same moment: this worker's first ones (and
    switch often, so that they meet inside pytest's making of the base folder)."""
    barrier = threading.Barrier(8)
    made = {}
    sys.setswitchinterval(1e-6)

    def make(index):
        barrier.wait()
        folder = tmp_path_factory.mktemp(f"thread{index}")
        (folder / "mine").write_text(str(index))
        made[index] = folder

    threads = [threading.Thread(target=make, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sys.setswitchinterval(0.005)
    return made


def test_folders_made_at_once_all_survive(folders):
    assert sorted(folders) == list(range(8))
    assert [(folders[i] / "mine").read_text() for i in range(8)] == [str(i) for i in range(8)]


@pytest.fixture(scope="session")
def session_thing():
    yield
    Path(os.environ["MARKS"], "session-teardown").write_text("ran")


def test_with_a_session_fixture(session_thing):
    pass


def test_that_fails():
    assert 1 == 2, "on purpose"
'''


def test_auto_is_two_workers_per_cpu_and_workers_end_cleanly(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(INNER)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PYTEST_XDIST_", "PYTEST_ADDOPTS"))}
    tests_dir = str(Path(__file__).resolve().parent)
    env.update(MARKS=str(marks), PYTHONPATH=os.pathsep.join(filter(None, [tests_dir, env.get("PYTHONPATH")])))
    # On one CPU (so: 2 workers, whatever this machine has), this checkout's conftest as a plugin
    # of a run of its own (no pyproject: `-c` an empty file).
    one_cpu = "import os, sys, pytest; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); sys.exit(pytest.main())"
    proc = subprocess.run([sys.executable, "-c", one_cpu, "-p", "conftest", "-p", "no:cacheprovider", "-c", os.devnull,
                           "--rootdir", str(tmp_path), "-n", "auto", "-v", "test_inner.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "created: 2/2 workers" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "PASSED test_inner.py::test_folders_made_at_once_all_survive" in proc.stdout, proc.stdout
    assert "FAILED test_inner.py::test_that_fails - AssertionError: on purpose" in proc.stdout, proc.stdout
    assert "1 failed, 2 passed" in proc.stdout, proc.stdout
    assert (marks / "session-teardown").read_text() == "ran"
    # both workers (each imported the module; the controller does not) ran their atexit handlers
    assert len(list(marks.glob("atexit-*"))) == 2, sorted(p.name for p in marks.iterdir())
    assert proc.stderr == "", proc.stderr


def suite_conftest() -> ModuleType:
    """tests/conftest.py, loaded afresh under a name of its own."""
    spec = importlib.util.spec_from_file_location("suite_conftest", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_auto_has_a_cap_and_the_variable_still_decides(monkeypatch: pytest.MonkeyPatch,
                                                       pytestconfig: pytest.Config) -> None:
    hook = suite_conftest().pytest_xdist_auto_num_workers
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    for cpus, workers in [(1, 2), (3, 6), (8, 16), (64, 16)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        assert hook(pytestconfig) == workers
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert hook(pytestconfig) is None  # (pytest-xdist's own hook then reads the variable)
