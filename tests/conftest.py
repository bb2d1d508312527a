"""Test guard: every test gets its own RECURSIVE_HOME and no real API keys or endpoints."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    # With PYTHONDONTWRITEBYTECODE set (as in many container images) every `python -m
    # recursive_cli` a test starts would compile the package from source (≈ 0.1 s of CPU each)
    # and each xdist worker would re-rewrite every test module's asserts. Keep the bytecode in
    # a cache folder of its own instead (in the checkout's git-ignored .pytest_cache, not a
    # shared temp folder someone else could fill), never beside the sources, for this process
    # and its children: what an installed package (whose .pyc files pip writes) has anyway.
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"] = str(
        Path(__file__).resolve().parent.parent / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False

_SCRUBBED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RECURSIVE_API_KEY", "OPENAI_BASE_URL",
             "ANTHROPIC_BASE_URL", "RECURSIVE_API_BASE", "RECURSIVE_MODEL", "RECURSIVE_PROVIDER",
             "RECURSIVE_WORKSPACE", "RECURSIVE_SCRIPT", "RECURSIVE_MAX_STEPS", "NO_COLOR",
             "RECURSIVE_TRUST_WORKSPACE", "RECURSIVE_OTEL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point RECURSIVE_HOME (and CLAUDE_CONFIG_DIR) at temp folders and strip keys, so no test
    touches the real home."""
    home = tmp_path / "recursive-home"
    monkeypatch.setenv("RECURSIVE_HOME", str(home))
    monkeypatch.setenv("RECURSIVE_RETRY_BASE_DELAY", "0.01")
    # Headless sessions also keep Claude's transcript under $CLAUDE_CONFIG_DIR/projects/ (else ~/.claude).
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    for name in _SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session", autouse=True)
def base_temp_first(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Make this process's base temp folder before any fixture of a test can: pytest makes it on
    first use, and an xdist worker's (a given `--basetemp`) is emptied then, so two threads of a
    module-scoped fixture making the first folders of a worker at once had one delete the other's
    (tests/reliability/test_hostile_input.py: "workspace does not exist")."""
    tmp_path_factory.getbasetemp()


@pytest.fixture
def trusted_workspaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every workspace's own hooks, `.mcp.json` servers and config count, for the CLI this test
    runs in process or starts (`RECURSIVE_TRUST_WORKSPACE=1`, as `--trust-workspace`): for the
    tests of what those files do, not of whether they may (tests/test_trust.py)."""
    monkeypatch.setenv("RECURSIVE_TRUST_WORKSPACE", "1")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def meanwhile(monkeypatch: pytest.MonkeyPatch) -> dict[int, Callable[[], None]]:
    """`meanwhile[k] = action`: run `action` just before the scripted model returns reply k
    (0-based, over the whole script): after the previous reply's tool calls ended, before the
    next ones run — as a user editing files during a turn would."""
    from recursive_cli.providers.scripted import ScriptedProvider

    actions: dict[int, Callable[[], None]] = {}
    complete = ScriptedProvider.complete

    async def acting(self: ScriptedProvider, *args: Any) -> Any:
        action = actions.pop(self.consumed, None)
        if action is not None:
            action()
        return await complete(self, *args)

    monkeypatch.setattr(ScriptedProvider, "complete", acting)
    return actions


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` (pyproject's addopts) sends the tests of one `xdist_group` to one
    worker by the `@GROUP` that pytest-xdist appends to their node ids; from pytest 9.2 on a
    node id is built from `item._id`, and xdist 3.8's append (to `item._nodeid`) is lost, so
    every group was spread over the workers (pytest-xdist issue 1386). Append it where it counts."""
    if not getattr(config.option, "loadgroup", False):  # (set on xdist's workers only)
        return
    for item in items:
        group = "_".join(sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                                 for mark in item.iter_markers("xdist_group")}))
        node_id = getattr(item, "_id", None)
        if group and node_id is not None and not item.nodeid.endswith(f"@{group}"):
            item._id = type(node_id).parse(f"{item.nodeid}@{group}")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts): two workers per CPU this process may run on, 16 at most.
    Much of the suite waits (on the CLI processes it starts, servers, pseudo-terminals), so with
    one worker per CPU a third of the cores' time went idle: on 2 CPUs 4 workers ran it in about
    four fifths of the time 2 took. PYTEST_XDIST_AUTO_NUM_WORKERS, when set, still decides."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # (pytest-xdist's own hook reads it)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (not on every platform)
        cpus = os.cpu_count() or 1
    return max(1, min(2 * cpus, 16))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """An xdist worker whose session is over (its results and `workerfinished` sent, its
    fixtures torn down, pytest's last look for unraisable exceptions done) ends here: its atexit
    handlers run and its output is flushed, but the interpreter's own teardown is skipped. A
    worker holds thousands of modules by then (the SDKs, Ray, MCP) and freeing them took 1.5–2.5 s
    of a busy machine, for each worker at once, while the controller waits for the last one."""
    if not hasattr(config, "workerinput"):  # (the controller, or -n 0: a normal exit)
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(0)
