"""Test guard: every test gets its own RECURSIVE_HOME and no real API keys or endpoints."""

from __future__ import annotations

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
             "RECURSIVE_WORKSPACE", "RECURSIVE_SCRIPT", "RECURSIVE_MAX_STEPS", "NO_COLOR")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point RECURSIVE_HOME at a temp folder and strip keys, so no test touches the real home."""
    home = tmp_path / "recursive-home"
    monkeypatch.setenv("RECURSIVE_HOME", str(home))
    monkeypatch.setenv("RECURSIVE_RETRY_BASE_DELAY", "0.01")
    for name in _SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    return home


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
