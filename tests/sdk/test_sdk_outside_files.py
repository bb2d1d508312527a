"""File tools and paths outside the workspace, through the real Agent SDK, as the real Claude
Code CLI treats them against the same scripted model: such a call is asked about (`can_use_tool`),
and once the program allows it explicitly (its answer, an --allowedTools rule, a hook's allow)
the file tool goes there; with nobody to ask it is denied and nothing is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clitools import require

from .conftest import AgentCli
from .test_python_sdk import call, collect, options, result_of

sdk = require("claude_agent_sdk")

from claude_agent_sdk import PermissionResultAllow, ToolResultBlock, UserMessage  # noqa: E402


def results(messages: list[Any]) -> list[ToolResultBlock]:
    return [block for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list)
            for block in m.content if isinstance(block, ToolResultBlock)]


def outside_calls(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "notes.txt").write_text("read me\n")
    return folder / "new.txt", folder / "notes.txt"


def test_can_use_tool_allow_lets_file_tools_leave_the_workspace(agent_cli: AgentCli, tmp_path: Path) -> None:
    written, notes = outside_calls(tmp_path)
    (agent_cli.workspace / "inside.txt").write_text("in\n")
    agent_cli.server.add({"tool_calls": [call("write_file", path=str(written), content="hi\n"),
                                         call("read_file", path=str(notes)), call("read_file", path="inside.txt")]},
                         {"text": "done"})
    asked: list[tuple[str, str]] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append((name, tool_input["file_path"]))
        return PermissionResultAllow()

    messages = collect("go", options(agent_cli, can_use_tool=can_use_tool))

    assert asked == [("Write", str(written)), ("Read", str(notes))]  # the workspace file is not asked about
    assert written.read_text() == "hi\n"
    write, read, inside = results(messages)
    assert not write.is_error and not read.is_error and "read me" in str(read.content)
    assert "in" in str(inside.content)
    assert result_of(messages).permission_denials == []


def test_an_allowed_tools_rule_is_an_explicit_allow(agent_cli: AgentCli, tmp_path: Path) -> None:
    written, _ = outside_calls(tmp_path)
    agent_cli.server.add({"tool_calls": [call("write_file", path=str(written), content="ruled\n")]}, {"text": "done"})

    result_of(collect("go", options(agent_cli, allowed_tools=["Write"])))

    assert written.read_text() == "ruled\n"


def test_with_nobody_to_ask_outside_paths_are_denied(agent_cli: AgentCli, tmp_path: Path) -> None:
    written, notes = outside_calls(tmp_path)
    agent_cli.server.add({"tool_calls": [call("write_file", path=str(written), content="hi\n"),
                                         call("read_file", path=str(notes))]}, {"text": "could not"})

    messages = collect("go", options(agent_cli, permission_mode="acceptEdits"))

    assert not written.exists()
    assert [d["tool_name"] for d in result_of(messages).permission_denials or []] == ["Write", "Read"]
    assert all(r.is_error and "outside the workspace" in str(r.content) for r in results(messages))
