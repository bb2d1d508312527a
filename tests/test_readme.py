"""The README's examples run as shown, and its test command is the one CI runs.

The README is the first thing a newcomer reads: its first code block is the install line and
the test command, and `.ci/run` runs that test command verbatim (its last line). The library
example lives in docs/agent-sdk.md, with the rest of the headless use.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from clitools import invoke

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
AGENT_SDK_DOC = (ROOT / "docs" / "agent-sdk.md").read_text(encoding="utf-8")


def first_commands(markdown: str) -> list[str]:
    """The command lines (comments and blank lines left out) of the first ```sh block."""
    block = markdown.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    install, test_command = first_commands(README)
    assert "python -m pytest" in test_command
    assert ci[-1] == test_command, "the README's test command and .ci/run's last line must agree"
    assert "pip install ." in install and 'recursive run "' in install


def test_embedding_example_runs(workspace: Path) -> None:
    code = AGENT_SDK_DOC.split("## Embedding", 1)[1].split("```python", 1)[1].split("```", 1)[0]
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


def test_links_between_the_docs_resolve() -> None:
    """Every relative link in README.md, docs/ and bench/README.md names a file that exists,
    and a #fragment names one of its headings (as GitHub makes their anchors)."""
    pages = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif fragment and fragment not in anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken


def anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
