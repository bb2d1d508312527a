"""Harbor as the oracle: its own ATIF models and validator, run by a Python ≥ 3.12 interpreter.

Harbor (PyPI `harbor`) needs Python 3.12, newer than the suite's, so it lives in a venv of its
own: `RECURSIVE_HARBOR_PYTHON` names that venv's interpreter (.ci/run makes it and sets the
variable); locally `.venv312/bin/python` in the checkout is used when present. Without either a
test skips, except in CI (CI=1), where it fails: the oracle must never silently vanish.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VARIABLE = "RECURSIVE_HARBOR_PYTHON"

# Every file is checked with Harbor's TrajectoryValidator (its pydantic models, image paths),
# then loaded as a `Trajectory`; one JSON line of errors per file on stdout.
_VALIDATE = """
import json, sys
from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator
for path in sys.argv[1:]:
    validator = TrajectoryValidator()
    ok = validator.validate(path)
    errors = list(validator.errors)
    if ok:
        Trajectory.model_validate_json(open(path, encoding="utf-8").read())
    print(json.dumps({"path": path, "errors": errors}))
"""


def harbor_python() -> str:
    """The interpreter that has harbor installed; skips (fails in CI) when there is none."""
    named = os.environ.get(VARIABLE)
    if named:
        if not Path(named).exists():
            pytest.fail(f"{VARIABLE}={named} does not exist")
        return named
    local = ROOT / ".venv312" / "bin" / "python"
    if local.exists():
        return str(local)
    message = (f"no Python with harbor: set {VARIABLE} (python3.12 -m venv V && "
               "V/bin/pip install harbor)")
    if os.environ.get("CI"):
        pytest.fail(f"{message}; .ci/run sets it in CI")
    pytest.skip(message)


def run_harbor_python(*args: str, env: dict[str, str] | None = None,
                      cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the harbor interpreter with `args`; the result, whatever its exit code."""
    return subprocess.run([harbor_python(), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


def atif_errors(*paths: Path) -> dict[str, list[str]]:
    """Harbor's validation errors for each ATIF file (an empty list: valid)."""
    done = run_harbor_python("-c", _VALIDATE, *map(str, paths))
    assert done.returncode == 0, f"harbor could not validate: {done.stderr[-3000:]}"
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {Path(result["path"]).name: result["errors"] for result in results}


def assert_valid_atif(*paths: Path) -> None:
    """Fail unless Harbor's models accept every file."""
    errors = atif_errors(*paths)
    assert set(errors) == {path.name for path in paths}
    assert all(not found for found in errors.values()), errors
