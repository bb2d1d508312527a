"""Test guard: every test gets its own RECURSIVE_HOME and no real API keys or endpoints."""

from __future__ import annotations

from pathlib import Path

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
