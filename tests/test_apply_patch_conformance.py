"""Codex's own apply_patch scenarios, run end to end against the patch engine."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

from recursive_cli.tools.patch_engine import PatchError, apply_patch

SCENARIOS = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "apply_patch_scenarios"


def _scenarios() -> list[object]:
    if not SCENARIOS.is_dir():
        reason = f"apply_patch conformance data not found at {SCENARIOS}"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="missing")]
    return [pytest.param(path, id=path.name) for path in sorted(SCENARIOS.iterdir()) if path.is_dir()]


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and every folder (as None) under ``root``."""
    if not root.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in root.rglob("*")
    }


@pytest.mark.parametrize("scenario", _scenarios())
def test_scenario_matches_codex(scenario: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", workspace)
    else:
        workspace.mkdir()
    patch = (scenario / "patch.txt").read_bytes().decode("utf-8")

    with contextlib.suppress(PatchError):  # the verdict is the tree, not the exit status
        apply_patch(patch, lambda path: workspace / path)

    assert _tree(workspace) == _tree(scenario / "expected")
