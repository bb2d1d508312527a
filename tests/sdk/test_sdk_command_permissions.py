"""Claude Code's shell allowances through the real Agent SDK, as the real Claude Code CLI makes
them against the same scripted model: in `default` mode read-only commands inside the workspace
run without asking (pipelines and `&&` lists of them too); under `acceptEdits` its filesystem
commands (mkdir, touch, rm, rmdir, mv, cp) and `>` into workspace files run as well. Anything
else, or any path outside the workspace, still needs permission (and is denied headless with
nobody to ask)."""

from __future__ import annotations

import subprocess
from typing import Any

from clitools import require

from .conftest import AgentCli
from .test_python_sdk import collect_until_error, options, result_of

sdk = require("claude_agent_sdk")

from claude_agent_sdk import ToolResultBlock, UserMessage  # noqa: E402


def shell_calls(commands: list[str]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_shell", "arguments": {"command": command}, "id": f"call_{i}"}
                           for i, command in enumerate(commands)]}


def run_commands(cli: AgentCli, commands: list[str], mode: str) -> dict[str, bool]:
    """Which of `commands` (in one reply) ran: command → True, or False when denied."""
    (cli.workspace / "a.txt").write_text("one\ntwo\n")
    (cli.workspace / "sub").mkdir()
    subprocess.run(["git", "init", "-q", str(cli.workspace)], check=True)
    cli.server.add(shell_calls(commands), {"text": "done"})
    messages, error = collect_until_error("go", options(cli, permission_mode=mode))
    assert error is None, error
    denied = {d["tool_input"]["command"] for d in result_of(messages).permission_denials or []}
    results = [block for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list)
               for block in m.content if isinstance(block, ToolResultBlock)]
    assert len(results) == len(commands)
    return {command: command not in denied for command in commands}


READS = ["ls", "echo hi", "sleep 0", "wc -l a.txt", "cat a.txt | sort", "ls | wc -l", "pwd && ls sub",
         "grep one a.txt", "head -1 a.txt", "find . -name '*.txt'", "git status"]
ASKED = ["touch made.txt", "echo x > made.txt", "ls /etc", "cat ../outside.txt", "find . -delete",
         "echo $(pwd)", "ls; chmod +x a.txt"]


def test_default_mode_runs_read_only_commands_without_asking(agent_cli: AgentCli) -> None:
    ran = run_commands(agent_cli, ASKED + READS, "default")  # (the denials first: no stuck verdict)

    assert ran == {**dict.fromkeys(READS, True), **dict.fromkeys(ASKED, False)}
    assert not (agent_cli.workspace / "made.txt").exists()


EDITS = ["touch made.txt", "mkdir -p d/e", "cp a.txt b.txt", "mv b.txt c.txt", "rm c.txt", "rmdir sub",
         "echo x > out.txt", "ls | wc -l", "touch t.txt && ls"]
STILL_ASKED = ["touch /tmp/sdkr-outside.txt", "mkdir ../escape", "chmod +x a.txt", "git add a.txt",
               "cat a.txt | tee copy.txt", "sed -i s/one/1/ a.txt"]


def test_accept_edits_runs_filesystem_commands_in_the_workspace(agent_cli: AgentCli) -> None:
    ran = run_commands(agent_cli, STILL_ASKED + EDITS, "acceptEdits")

    assert ran == {**dict.fromkeys(EDITS, True), **dict.fromkeys(STILL_ASKED, False)}
    workspace = agent_cli.workspace
    assert (workspace / "made.txt").exists() and (workspace / "d" / "e").is_dir()
    assert not (workspace / "sub").exists() and (workspace / "out.txt").read_text() == "x\n"
    assert not (workspace / "copy.txt").exists() and (workspace / "a.txt").read_text() == "one\ntwo\n"
    assert not (workspace.parent / "escape").exists()
