"""Helpers for the hooks tests: settings files with real hook scripts, scripted replies."""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

from clitools import write_script
from fakeserver import FakeLLMServer


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def scripted(tmp_path: Path, replies: list[dict[str, Any]]) -> list[str]:
    return ["--provider", "scripted", "--script", str(write_script(tmp_path / "script.json", replies)),
            "--no-checkpoints"]


def script(path: Path, text: str) -> Path:
    """An executable hook script at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def settings(path: Path, hooks: dict[str, list[dict[str, Any]]]) -> Path:
    """A settings file in Claude Code's format at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def command(cmd: str, matcher: str | None = None, timeout: float | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": cmd}
    if timeout is not None:
        hook["timeout"] = timeout
    entry: dict[str, Any] = {"hooks": [hook]}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


def inputs(log: Path) -> list[dict[str, Any]]:
    """The JSON lines a recording hook appended to `log`."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# A Python hook that appends its stdin to $1 and prints $2 (a JSON output) if given.
RECORDER = """#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(event) + "\\n")
if len(sys.argv) > 2:
    print(sys.argv[2])
"""


KEY = {"RECURSIVE_API_KEY": "sk-test-0123456789abcdef"}


def recorder(tmp_path: Path, log: Path, output: dict[str, Any] | None = None) -> str:
    """A hook command that appends its stdin event to `log` and prints `output` as its JSON."""
    path = script(tmp_path / "hooks" / "record.py", RECORDER)
    extra = f" {shlex.quote(json.dumps(output))}" if output is not None else ""
    return f"{shlex.quote(sys.executable)} {path} {log}{extra}"


def fake_args(server: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
            "--no-checkpoints"]
