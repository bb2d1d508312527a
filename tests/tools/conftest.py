"""Fixtures for tool tests: a real workspace in tmp_path and a helper that runs a tool call."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any, Protocol

import pytest

from recursive_cli.core.messages import ToolCall
from recursive_cli.core.tool import ToolContext, ToolRegistry, ToolResult
from recursive_cli.tools.catalog import core_tools
from recursive_cli.tools.sandbox import WorkspaceSandbox


class CallTool(Protocol):
    def __call__(self, name: str, /, **arguments: Any) -> ToolResult: ...


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def ctx(tmp_path: Path, workspace: Path) -> ToolContext:
    return ToolContext(sandbox=WorkspaceSandbox(workspace), home=tmp_path / "home")


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(core_tools())


@pytest.fixture
def call(registry: ToolRegistry, ctx: ToolContext) -> CallTool:
    """Run one tool call through the registry, as the kernel does."""

    def run(name: str, /, **arguments: Any) -> ToolResult:
        tool_call = ToolCall(id="call_1", name=name, arguments=json.dumps(arguments))
        return asyncio.run(registry.execute(tool_call, ctx))

    return run


def git(cwd: Path, *args: str) -> None:
    """Run a git command in `cwd`, failing the test if it fails."""
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


@pytest.fixture
def git_repo(workspace: Path) -> Path:
    """The workspace as a git repo with an ignored build dir and an ignored *.log."""
    git(workspace, "init", "-q")
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def main():\n    return 'needle'\n")
    (workspace / "notes.txt").write_text("a needle here\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.py").write_text("needle = 1\n")
    (workspace / "debug.log").write_text("needle in a log\n")
    git(workspace, "add", "src/app.py", ".gitignore")
    return workspace
