"""Codex's own apply_patch scenarios, run end to end against the patch engine."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from recursive_cli.tools.patch_engine import PatchError, apply_patch

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT.parent / "shared" / "conformance" / "apply_patch_scenarios"  # ../shared beside the repo


def _scenario_folders() -> list[Path]:
    return sorted(path for path in SCENARIOS.iterdir() if path.is_dir()) if SCENARIOS.is_dir() else []


def test_the_conformance_data_is_there() -> None:
    """Wherever ../shared exists the scenarios run; only a local checkout without it may skip."""
    if _scenario_folders():
        return
    message = f"apply_patch conformance data not found at {SCENARIOS}"
    if os.environ.get("CI"):
        pytest.fail(f"{message}: CI must check out ../shared beside the repository")
    pytest.skip(message)


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and every folder (as None) under ``root``."""
    if not root.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in root.rglob("*")
    }


@pytest.mark.parametrize("scenario", [pytest.param(path, id=path.name) for path in _scenario_folders()])
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
