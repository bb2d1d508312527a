"""Issue 16, start-up second pass: the first snapshot overlaps the first model call."""

from __future__ import annotations

import os
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, json_lines
from fakeserver import FakeLLMServer, RecordedRequest

API_KEY = "sk-test-0123456789"
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


class MarkingServer(FakeLLMServer):
    """A fake server that creates `marker` when the first request arrives."""

    def __init__(self, replies: list[dict[str, Any]], marker: Path) -> None:
        super().__init__(replies)
        self.marker = marker

    def record(self, request: RecordedRequest) -> None:
        super().record(request)
        self.marker.touch()


def slow_git(folder: Path, marker: Path) -> dict[str, str]:
    """A PATH with a `git` whose `write-tree` waits (up to 20 s) for `marker` to exist: a
    snapshot that must finish before the first request would hold that request back 20 s."""
    folder.mkdir()
    script = folder / "git"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case " $* " in
          *" write-tree "*)
            n=0
            while [ ! -e '{marker}' ] && [ $n -lt 200 ]; do /bin/sleep 0.1; n=$((n+1)); done ;;
        esac
        exec '{GIT}' "$@"
        """))
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}", "RECURSIVE_API_KEY": API_KEY}


def run_against(server: FakeLLMServer, workspace: Path, env: dict[str, str], *extra: str) -> Any:
    return invoke("run", "go", "-C", str(workspace), "--provider", "openai", "--api-base",
                  server.openai_base_url, "-m", "fake-model", "-o", "stream-json", *extra, env=env)


@needs_git
def test_the_first_request_does_not_wait_for_the_first_snapshot(tmp_path: Path, workspace: Path) -> None:
    marker = tmp_path / "requested"
    env = slow_git(tmp_path / "bin", marker)
    with MarkingServer([{"text": "done"}], marker) as server:
        started = time.monotonic()
        proc = run_against(server, workspace, env)
        took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert took < 15, f"the run waited for the snapshot before its request ({took:.1f} s)"
    lines = json_lines(proc.stdout)
    checkpoints = [(line["turn"], line["phase"]) for line in lines if line.get("subtype") == "checkpoint"]
    assert checkpoints == [(1, "before"), (1, "after")]  # both taken, in order
    assert lines[-1]["subtype"] == "success"


@needs_git
def test_a_tool_call_waits_for_the_snapshot_and_its_changes_are_the_turns(tmp_path: Path,
                                                                            workspace: Path) -> None:
    marker = tmp_path / "requested"
    env = slow_git(tmp_path / "bin", marker)
    (workspace / "old.txt").write_text("old\n")
    replies = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "new\n"}}]},
               {"tool_calls": [{"name": "checkpoint_list", "arguments": {}}]},
               {"text": "done"}]
    with MarkingServer(replies, marker) as server:
        proc = run_against(server, workspace, env, "--session-id", "s1")
        listed = server.requests[2].body["messages"][-1]["content"]
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    kinds = [line.get("phase") or line["type"] for line in lines if line["type"] in ("user", "system")]
    assert kinds.index("before") < kinds.index("user")  # reported before the first tool result
    after = [line for line in lines if line.get("subtype") == "checkpoint" and line.get("phase") == "after"]
    assert after and after[0]["files_changed"] == 1  # the write was the session's own
    assert "1" in listed and "turn" in listed.lower()  # the agent's own view of its checkpoints
    restored = invoke("checkpoints", "restore", "s1", "--turn", "1", env=env)
    assert restored.returncode == 0, restored.stderr
    assert not (workspace / "new.txt").exists()  # back to before turn 1: its snapshot came first
    assert (workspace / "old.txt").read_text() == "old\n"
