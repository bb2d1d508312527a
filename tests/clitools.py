"""Helpers for driving the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None,
            env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (`python -m recursive_cli`), stdin closed unless `input`."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "recursive_cli", *args], cwd=cwd, env=full_env,
                          input=input, stdin=None if input is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def write_script(path: Path, replies: list[dict[str, Any]]) -> Path:
    """A script file for the scripted provider."""
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


def json_lines(text: str) -> list[dict[str, Any]]:
    """Parse stream-json output; every line must be one JSON object."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]
