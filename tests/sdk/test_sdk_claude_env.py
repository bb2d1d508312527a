"""Claude Code's environment, as programs that wrap `claude` hand it over: with only
`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`) and `ANTHROPIC_MODEL`
set, `recursive` in Claude-compatible mode talks to that Anthropic endpoint with that model;
and `recursive -v` prints a version line the Agent SDK's version check reads as `claude -v`'s."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import require
from fakeserver import FakeLLMServer

from .test_python_sdk import collect, result_of

sdk = require("claude_agent_sdk")

from claude_agent_sdk import ClaudeAgentOptions  # noqa: E402
from claude_agent_sdk._internal.transport import subprocess_cli  # noqa: E402


def bare_cli(tmp_path: Path, flags: str = "--no-checkpoints") -> Path:
    """`recursive` as the SDK's CLI, with no provider flags of ours."""
    path = tmp_path / "recursive-bare"
    path.write_text(f'#!/bin/bash\nexec {sys.executable} -m recursive_cli {flags} "$@"\n', encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.parametrize("key", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_claudes_variables_choose_the_anthropic_provider(tmp_path: Path, workspace: Path, isolated_home: Path,
                                                         key: str) -> None:
    with FakeLLMServer([{"text": "from the anthropic endpoint"}], model="claude-wrapped") as server:
        env = {"ANTHROPIC_BASE_URL": server.anthropic_base_url, key: "sk-ant-test",
               "ANTHROPIC_MODEL": "claude-wrapped", "RECURSIVE_HOME": str(isolated_home)}
        options = ClaudeAgentOptions(cli_path=str(bare_cli(tmp_path)), cwd=str(workspace), env=env)
        messages = collect("hi", options)
        (request,) = server.requests

    assert result_of(messages).result == "from the anthropic endpoint"
    assert request.path == "/v1/messages" and request.body["model"] == "claude-wrapped"
    assert request.headers["authorization"] == "Bearer sk-ant-test"
    assert (messages[0].data["model"], messages[0].data["apiKeySource"]) == ("claude-wrapped", key)


def test_version_line_reads_as_claude_codes(tmp_path: Path) -> None:
    proc = subprocess.run([str(bare_cli(tmp_path, flags="")), "-v"], capture_output=True, text=True, timeout=30)

    assert proc.returncode == 0 and proc.stderr == ""
    match = re.match(r"([0-9]+\.[0-9]+\.[0-9]+)", proc.stdout.strip())  # as the SDK's check reads `-v`
    assert match, proc.stdout
    version = [int(part) for part in match.group(1).split(".")]
    assert version >= [int(part) for part in subprocess_cli.MINIMUM_CLAUDE_CODE_VERSION.split(".")]
    assert "recursive" in proc.stdout
