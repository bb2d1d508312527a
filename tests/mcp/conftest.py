"""Fixtures for the MCP tests (helpers in mcphelpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcphelpers import serve


@pytest.fixture
def demo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the demo servers write their pids and files ($DEMO_DIR, inherited by them)."""
    folder = tmp_path / "demo"
    folder.mkdir()
    monkeypatch.setenv("DEMO_DIR", str(folder))
    return folder


@pytest.fixture
def http_url(demo_dir: Path) -> Iterator[str]:
    yield from serve(demo_dir, "http")


@pytest.fixture
def sse_url(demo_dir: Path) -> Iterator[str]:
    yield from serve(demo_dir, "sse")
