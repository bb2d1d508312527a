"""The README's examples run as shown."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from clitools import invoke

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_embedding_example_runs(workspace: Path) -> None:
    code = README.split("## Embedding", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "completed hello from the agent\n"


def test_offline_tour_prints_what_the_readme_shows(workspace: Path) -> None:
    shown = README.split("examples/hello.json`):", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    expected = shown.strip().splitlines()[1:5]
    proc = invoke("run", "add a hello script", "-C", str(workspace), "--provider", "scripted",
                  "--script", str(ROOT / "examples" / "hello.json"))
    assert proc.returncode == 0
    assert proc.stdout == "Added hello.py; running it prints `hello`.\n"
    volatile = re.compile(r"\d+\.\d s|\d{8}-\d{6}-[0-9a-f]{6,}")  # timings, session ids
    assert [volatile.sub("X", line) for line in proc.stderr.splitlines()] == \
        [volatile.sub("X", line) for line in expected]
