"""Which tool calls get a window of their own (attribution.py), and what a file tool may claim.

Every tool that may change the workspace is watched: the file tools, `run_shell`, and any
tool whose kind is not "read" (tools added later, e.g. from an MCP server, that we know
nothing about). A file tool writes only the paths in its arguments, so only those count as
its changes: an edit someone else saves during its few milliseconds stays theirs. A shell
command may write anything, so everything that changes while it runs counts as ours.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ...core.tool import Sandbox, Tool

# Tools that never touch the workspace (they write the session or RECURSIVE_HOME only), and
# run_background, whose job is watched from start to end by the job manager instead.
UNWATCHED = frozenset({"todo_write", "remember", "schedule_wakeup", "stop_loop", "job_stop",
                       "run_background"})
PATH_TOOLS = frozenset({"write_file", "edit_file"})


def is_watched(tool: Tool) -> bool:
    """Whether a call of `tool` may change the workspace, so gets a window."""
    return tool.kind != "read" and tool.name not in UNWATCHED


def written_paths(tool: str, arguments: dict[str, Any], sandbox: Sandbox) -> list[str] | None:
    """The workspace paths a file tool call may write, relative and in posix form (symlinks
    resolved as the tool resolves them); None for a tool that may write anything."""
    if tool in PATH_TOOLS:
        named = [arguments.get("path")]
    elif tool == "apply_patch":
        from ...tools.patch import patch_paths

        patch = arguments.get("patch")
        named = list(patch_paths(patch)) if isinstance(patch, str) else []
    else:
        return None
    found: list[str] = []
    for name in named:
        path = _inside(name, sandbox) if isinstance(name, str) else None
        if path is not None:
            found.append(path)
    return found


def _inside(name: str, sandbox: Sandbox) -> str | None:
    """`name` as a workspace-relative path, or None when the tool could not write it there."""
    with contextlib.suppress(Exception):  # a path the tool refuses: it writes nothing there
        return sandbox.resolve(name, write=True).relative_to(sandbox.workspace).as_posix()
    return None
