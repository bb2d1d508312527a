"""Claude's real Agent SDK clients driving `recursive` (as `cli_path=`) against the fake server.

`agent_cli` writes a small wrapper script that runs `python -m recursive_cli --provider openai
--api-base <fake server>` with whatever flags the SDK adds, and copies every line we print
to a log, so each test can also check every line against SPEC §4's shapes (`shapes.py`).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer

from .shapes import check_line


@dataclass
class AgentCli:
    """The wrapper the SDK spawns, the fake model behind it, and the lines it printed."""

    path: Path
    log: Path
    server: FakeLLMServer
    workspace: Path
    home: Path

    def lines(self) -> list[dict[str, Any]]:
        """Every stdout line of every run so far, each checked against its SPEC §4 shape."""
        if not self.log.exists():
            return []
        records = []
        for text in self.log.read_text(encoding="utf-8").splitlines():
            assert text.strip(), "a blank stdout line"
            assert ", " not in text[:2] and text == text.strip()
            record = json.loads(text)
            check_line(record)
            records.append(record)
        return records

    def env(self) -> dict[str, str]:
        """What the SDK should pass to the CLI (its own home, no real keys)."""
        return {"RECURSIVE_HOME": str(self.home), "RECURSIVE_RETRY_BASE_DELAY": "0.01"}


@pytest.fixture
def fake_model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(model="fake-model") as server:
        yield server


@pytest.fixture
def agent_cli(tmp_path: Path, fake_model: FakeLLMServer, workspace: Path, isolated_home: Path) -> AgentCli:
    log = tmp_path / "stdout.jsonl"
    path = tmp_path / "recursive-for-sdk"
    path.write_text(
        "#!/bin/bash\n"
        "set -o pipefail\n"
        f"{sys.executable} -m recursive_cli --provider openai --api-base {fake_model.openai_base_url} "
        f'--no-checkpoints "$@" | tee -a {log}\n', encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.environ.pop("CLAUDECODE", None)
    return AgentCli(path, log, fake_model, workspace, isolated_home)


def system_text(request_body: dict[str, Any]) -> str:
    """The system message the fake server received."""
    first = request_body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def tool_names(request_body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request_body.get("tools", [])]
