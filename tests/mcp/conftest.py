"""Fixtures for the MCP tests (helpers in mcphelpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcphelpers import serve, zygote


@pytest.fixture(autouse=True)
def _trusted(trusted_workspaces: None) -> None:
    """The workspaces' `.mcp.json` servers start here (whether they may: tests/test_trust.py)."""


@pytest.fixture(scope="session")
def demo_zygote() -> Iterator[str]:
    """This worker's demo zygote (started for the first test that asks for `demo_dir`)."""
    yield from zygote()


@pytest.fixture
def demo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_zygote: str) -> Path:
    """Where the demo servers write their pids and files ($DEMO_DIR, inherited by them); and
    $DEMO_ZYGOTE, so that they are forked from the zygote."""
    folder = tmp_path / "demo"
    folder.mkdir()
    monkeypatch.setenv("DEMO_DIR", str(folder))
    monkeypatch.setenv("DEMO_ZYGOTE", demo_zygote)
    return folder


@pytest.fixture
def http_url(demo_dir: Path) -> Iterator[str]:
    yield from serve(demo_dir, "http")


@pytest.fixture
def sse_url(demo_dir: Path) -> Iterator[str]:
    yield from serve(demo_dir, "sse")
