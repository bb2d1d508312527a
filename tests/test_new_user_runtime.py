"""What a new user trusts the runtime to print and to stop (issue 32, part B): a checkpoint
hint only when the snapshot is slow, the run's limits, the providers' URLs, costs and logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import invoke
from fakeserver import FakeLLMServer

KEY = {"RECURSIVE_API_KEY": "sk-test-0123456789abcdef"}
HINT = "checkpoint: the snapshot took"


def openai_args(server: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model"]


def one_file(workspace: Path) -> Path:
    (workspace / "notes.txt").write_text("hello\n")
    return workspace


def test_a_slow_model_reply_is_not_blamed_on_the_snapshot(workspace: Path) -> None:
    with FakeLLMServer([{"text": "done", "delay": 6}]) as server:
        proc = invoke("run", "hi", "-C", str(one_file(workspace)), *openai_args(server), env=KEY)
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout
    assert HINT not in proc.stderr


def test_a_slow_snapshot_still_gets_the_hint(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.features.checkpoints import observer

    monkeypatch.setattr(observer, "SLOW_SECONDS", -1.0)  # every snapshot counts as slow
    with FakeLLMServer([{"text": "done"}]) as server:
        proc = invoke("run", "hi", "-C", str(one_file(workspace)), *openai_args(server), env=KEY)
    assert proc.returncode == 0, proc.stderr
    assert HINT in proc.stderr and "--no-checkpoints" in proc.stderr
