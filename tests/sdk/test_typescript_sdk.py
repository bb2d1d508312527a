"""Claude's TypeScript Agent SDK (`@anthropic-ai/claude-agent-sdk`, from npm without its optional
native binary) runs on `recursive` through `pathToClaudeCodeExecutable`.

The package is installed once per test session into a temporary folder; without node and npm,
or without the registry, these tests are skipped (say why with `-rs`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import AgentCli, system_text

# The module-scoped fixture is costly: with the suite spread over cores (pytest-xdist), keep
# this module on one worker so it is built once.
pytestmark = pytest.mark.xdist_group("typescript-sdk")

SCRIPT = Path(__file__).with_name("ts_query.mjs")
PACKAGE = "@anthropic-ai/claude-agent-sdk"


@pytest.fixture(scope="session")
def ts_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the TypeScript SDK installed and the test's driver script beside it."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the TypeScript SDK")
    folder = tmp_path_factory.mktemp("ts-sdk")
    (folder / "package.json").write_text('{"name": "recursive-sdk-test", "private": true, "type": "module"}')
    try:
        subprocess.run(["npm", "install", "--omit=optional", "--no-audit", "--no-fund", PACKAGE], cwd=folder,
                       check=True, capture_output=True, text=True, timeout=300)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"npm could not install {PACKAGE}: {getattr(exc, 'stderr', '')[-500:]}")
    shutil.copy(SCRIPT, folder / SCRIPT.name)  # ESM finds packages next to the script
    return folder


def ts_query(folder: Path, cli: AgentCli, prompt: str, options: dict[str, Any] | None = None,
             permissions: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = {"cli": str(cli.path), "cwd": str(cli.workspace), "prompt": prompt, "options": options or {},
            "permissions": permissions}
    proc = subprocess.run(["node", str(folder / SCRIPT.name), json.dumps(spec)], cwd=folder,
                          env={**os.environ, **cli.env()}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_typescript_query(ts_sdk: Path, agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [{"name": "run_shell", "arguments": {"command": "ls"}}]},
                         {"tool_calls": [{"name": "write_file", "arguments": {"path": "t.txt", "content": "model"}}]},
                         {"text": "done"})

    out = ts_query(ts_sdk, agent_cli, "go", {"systemPrompt": "You are a TS test.", "maxTurns": 5},
                   permissions={"Write": {"behavior": "allow", "merge": {"content": "from ts"}}})

    assert out["error"] is None
    assert out["asked"] == [["Bash", {"command": "ls"}],
                            ["Write", {"file_path": str(agent_cli.workspace / "t.txt"), "content": "model"}]]
    assert (agent_cli.workspace / "t.txt").read_text() == "from ts"
    kinds = [m["type"] for m in out["messages"]]
    assert kinds[0] == "system" and kinds[-1] == "result" and "assistant" in kinds
    result = out["messages"][-1]
    assert (result["subtype"], result["is_error"], result["result"], result["num_turns"]) == ("success", False, "done", 3)
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
    # the TypeScript SDK sends the system prompt in `initialize`, not as a flag
    assert system_text(agent_cli.server.requests[0].body).startswith("You are a TS test.")
    agent_cli.lines()


def test_typescript_query_error_result(ts_sdk: Path, agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]},
                         {"text": "never asked for"})

    out = ts_query(ts_sdk, agent_cli, "read", {"maxTurns": 1})

    result = out["messages"][-1]
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "error_max_turns", True)
    assert result["errors"] and out["error"] is not None  # the SDK raises, as it does for Claude Code
    assert out["error"].endswith("Reached maximum number of turns (1)")
