"""`recursive acp` driven by the official TypeScript ACP client, `@agentclientprotocol/sdk` from
npm (its zod schemas check every message we send): a session, a turn with an edit asked about,
rejected and then allowed.

The package is installed once per machine into $XDG_CACHE_HOME (else ~/.cache)
/recursive-tests/acp-sdk/VERSION, and used while the marker its install writes last is there.
Without node and npm, or without the registry when it must install, the test is skipped."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import write_script

PACKAGE = "@agentclientprotocol/sdk"
VERSION = "2.4.0"
CLIENT = Path(__file__).with_name("ts_client.mjs")
DONE = ".installed"  # written once npm has finished


def sdk_folder() -> Path:
    """The folder PACKAGE@VERSION is installed in, installed first if it is not yet (skipped when
    it cannot be)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the TypeScript ACP client")
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "recursive-tests" / "acp-sdk" / VERSION
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (another test process may be installing it)
        if not (folder / DONE).exists():
            (folder / "package.json").write_text('{"name": "recursive-acp-test", "private": true, "type": "module"}')
            try:
                subprocess.run(["npm", "install", "--no-audit", "--no-fund", f"{PACKAGE}@{VERSION}"], cwd=folder,
                               check=True, capture_output=True, text=True, timeout=300)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                pytest.skip(f"npm could not install {PACKAGE}@{VERSION}: {(getattr(exc, 'stderr', '') or '')[-500:]}")
            (folder / DONE).write_text(VERSION)
    return folder


def test_the_typescript_client_runs_a_turn_with_a_permission_request(tmp_path: Path, workspace: Path) -> None:
    folder = sdk_folder()
    shutil.copy(CLIENT, folder / CLIENT.name)  # (ESM finds the package from the script's folder)
    (workspace / "a.txt").write_text("one\n", encoding="utf-8")
    script = write_script(tmp_path / "s.json", [
        {"thinking": "an edit", "tool_calls": [{"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "two"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "three"}}]},
        {"text": "a.txt says three."},
    ])
    spec = {"command": [sys.executable, "-m", "recursive_cli", "acp", "--provider", "scripted", "--script", str(script)],
            "cwd": str(workspace), "prompt": "change a.txt", "answers": ["reject_once", "allow_once"]}
    done = subprocess.run(["node", str(folder / CLIENT.name), json.dumps(spec)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["init"]["agentCapabilities"]["loadSession"] is True
    assert out["session"]["modes"]["currentModeId"] == "ask"
    assert out["answer"]["stopReason"] == "end_turn"
    kinds = [update["sessionUpdate"] for update in out["updates"]]
    assert kinds.count("tool_call") == 2 and "agent_thought_chunk" in kinds
    assert [update["status"] for update in out["updates"] if update["sessionUpdate"] == "tool_call_update"] == [
        "failed", "completed"]
    assert [request["toolCall"]["content"][0]["newText"] for request in out["asked"]] == ["two\n", "three\n"]
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "three\n"
    assert out["exit"] == 0
