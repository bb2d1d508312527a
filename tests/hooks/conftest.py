"""Fixtures for the hooks tests (helpers in hookkit.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _trusted(trusted_workspaces: None) -> None:
    """The workspaces' own settings files' hooks run here (whether they may: tests/test_trust.py)."""
