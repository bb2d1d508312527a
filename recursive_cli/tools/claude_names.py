"""Claude Code's tool names and argument shapes, and ours (`Bash {command}` ⇄ `run_shell {command}`).

Shared by the headless surface and the hooks (features/hooks). A program written for Claude's
Agent SDK names tools the way Claude Code does, in its flags (`--allowedTools Bash,Read`) and in its callbacks (`can_use_tool("Bash", {"command": …})`).
Toward such a client every call of a tool Claude Code also has is shown under Claude's name
with Claude's argument names; an input the client sends back (`updatedInput`) is turned into
ours again. Tools Claude Code does not have keep their names; our names are accepted anywhere
Claude's are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.messages import ToolCall


@dataclass(frozen=True)
class ToolAlias:
    """One of Claude Code's tools that we have: its name, ours, and the argument renames."""

    claude: str
    ours: str
    fields: tuple[tuple[str, str], ...]  # (Claude's argument, ours)
    path_field: str | None = None  # Claude's absolute-path argument (`file_path`)


ALIASES = (
    ToolAlias("Bash", "run_shell", (("command", "command"), ("timeout", "timeout_seconds"))),
    ToolAlias("Read", "read_file", (("file_path", "path"), ("offset", "offset"), ("limit", "limit")),
              "file_path"),
    ToolAlias("Write", "write_file", (("file_path", "path"), ("content", "content")), "file_path"),
    ToolAlias("Edit", "edit_file", (("file_path", "path"), ("old_string", "old_string"),
                                    ("new_string", "new_string"), ("replace_all", "replace_all")),
              "file_path"),
    ToolAlias("Glob", "glob", (("pattern", "pattern"), ("path", "path"))),
    ToolAlias("Grep", "search_files", (("pattern", "pattern"), ("path", "path"), ("glob", "glob"),
                                       ("-i", "case_insensitive"), ("head_limit", "max_results"))),
    ToolAlias("LS", "list_dir", (("path", "path"),)),
    ToolAlias("WebFetch", "web_fetch", (("url", "url"),)),
    ToolAlias("TodoWrite", "todo_write", (("todos", "todos"),)),
    ToolAlias("ExitPlanMode", "exit_plan_mode", (("plan", "plan"),)),
    ToolAlias("Skill", "skill", (("skill", "skill"), ("args", "args"))),
    ToolAlias("ListMcpResourcesTool", "list_mcp_resources", (("server", "server"),)),
    ToolAlias("ReadMcpResourceTool", "read_mcp_resource", (("server", "server"), ("uri", "uri"))),
    ToolAlias("Agent", "task", (("description", "description"), ("prompt", "prompt"),
                                ("subagent_type", "subagent_type"), ("model", "model"),
                                ("run_in_background", "run_in_background"))),
)
BY_CLAUDE = {alias.claude: alias for alias in ALIASES}
BY_CLAUDE["Task"] = BY_CLAUDE["Agent"]  # (Claude Code's name for it before 2.1)
BY_OURS = {alias.ours: alias for alias in ALIASES}


def our_name(name: str) -> str:
    """Our name for a tool named in Claude's spelling or ours (other names come back as given:
    the caller checks them against the registry)."""
    alias = BY_CLAUDE.get(name)
    return alias.ours if alias is not None else name


# Claude's names a hook matcher may use for one of our tools that has no alias of its own.
MATCHER_EXTRAS = {"apply_patch": ("Edit", "MultiEdit"), "edit_file": ("MultiEdit",), "task": ("Task",)}


def matcher_names(ours: str) -> tuple[str, ...]:
    """Every name a hook matcher may match our tool `ours` by: ours, Claude's, and extras."""
    return tuple(dict.fromkeys((ours, claude_name(ours), *MATCHER_EXTRAS.get(ours, ()))))


def claude_name(ours: str) -> str:
    """The name a client sees for our tool `ours`."""
    alias = BY_OURS.get(ours)
    return alias.claude if alias is not None else ours


def listed_name(ours: str) -> str:
    """The name an `init` line lists our tool `ours` under: Claude Code lists its Agent tool
    as `Task` there (its name before 2.1), while its calls say `Agent`."""
    return "Task" if ours == "task" else claude_name(ours)


class ClaudeView:
    """Shows our calls in Claude's shape, and takes Claude-shaped inputs back, for one workspace."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    def present(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        """The call's name and input as Claude Code would have made it."""
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            return claude_name(call.name), {"_raw": call.arguments}
        if not isinstance(arguments, dict):
            return claude_name(call.name), {"_raw": call.arguments}
        return self.present_input(call.name, arguments)

    def present_input(self, ours: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        alias = BY_OURS.get(ours)
        if alias is None:
            return ours, dict(arguments)
        theirs = {mine: claude for claude, mine in alias.fields}
        shown: dict[str, Any] = {}
        for key, value in arguments.items():
            name = theirs.get(key, key)
            if name == "timeout" and isinstance(value, (int, float)):
                value = int(value * 1000)  # Claude's Bash timeout is in milliseconds
            elif name == alias.path_field and isinstance(value, str):
                value = str(self.workspace / value) if not Path(value).is_absolute() else value
            shown[name] = value
        return alias.claude, shown

    def take_input(self, ours: str, shown: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
        """An input in Claude's shape (a client's `updatedInput`) as arguments of our tool.

        Arguments Claude's tool has and ours lacks (Bash's `description`) are dropped; ours
        that Claude's lacks keep the value the model gave unless the client named them.
        """
        alias = BY_OURS.get(ours)
        if alias is None:
            return dict(shown)
        mine = dict(alias.fields)
        arguments = {key: value for key, value in original.items() if key not in mine.values()}
        for key, value in shown.items():
            if key in mine:
                if key == "timeout" and isinstance(value, (int, float)):
                    value = value / 1000
                arguments[mine[key]] = value
            elif key in original:
                arguments[key] = value
        return arguments
