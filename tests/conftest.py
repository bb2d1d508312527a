"""Test guard: every test gets its own RECURSIVE_HOME and no real API keys or endpoints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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
