"""What an `ask`-mode question shows before the answer: what the call would change.

A unified diff for `edit_file` and `write_file` (a new file's content as added lines), the
patch itself for `apply_patch`, and the whole command for a `run_shell` command too long or
too many lines for the question's own line. Nothing is written; a file that cannot be read is
shown as the model's text alone. At most `MAX_LINES` lines, then how many more.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, NamedTuple

from ...core.messages import ToolCall
from ...core.wording import counted

MAX_LINES = 40
SHORT_COMMAND = 60  # a command this long or shorter, on one line, is shown in the question itself


class Shown(NamedTuple):
    """One line of a preview and its style."""

    text: str
    style: str


def preview(call: ToolCall, workspace: Path) -> list[Shown]:
    """The lines to show above the question about `call` (none when the question says it all)."""
    arguments = call.arguments_or_empty()
    if call.name == "run_shell":
        lines = _command(arguments.get("command"))
    elif call.name == "write_file":
        lines = _write(arguments, workspace)
    elif call.name == "edit_file":
        lines = _edit(arguments, workspace)
    elif call.name == "apply_patch":
        lines = _patch(arguments.get("patch"))
    else:
        lines = []
    return _capped(lines)


def diff_style(line: str) -> str:
    """The colour of one line of a unified diff."""
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return "cyan" if line.startswith("@@") else ""


def _command(command: object) -> list[Shown]:
    if not isinstance(command, str) or ("\n" not in command.strip() and len(command) <= SHORT_COMMAND):
        return []
    return [Shown(f"  {line}", "bold") for line in command.strip("\n").splitlines()]


def _write(arguments: dict[str, Any], workspace: Path) -> list[Shown]:
    path, content = arguments.get("path"), arguments.get("content")
    if not isinstance(path, str) or not isinstance(content, str):
        return []
    old = _read(workspace, path)
    if old is None:
        added = content.splitlines()
        return [Shown(f"new file {path} ({counted(len(added), 'line')})", "bold"),
                *(Shown(f"+{line}", "green") for line in added)]
    return _diff(path, old, content)


def _edit(arguments: dict[str, Any], workspace: Path) -> list[Shown]:
    path, old_string, new_string = (arguments.get(k) for k in ("path", "old_string", "new_string"))
    if not isinstance(path, str) or not isinstance(old_string, str) or not isinstance(new_string, str):
        return []
    text = _read(workspace, path)
    if text is not None and old_string and old_string in text:
        return _diff(path, text, text.replace(old_string, new_string, -1 if arguments.get("replace_all") else 1))
    return [Shown(f"--- {path}", "bold"), *(Shown(f"-{line}", "red") for line in old_string.splitlines()),
            *(Shown(f"+{line}", "green") for line in new_string.splitlines())]


def _patch(patch: object) -> list[Shown]:
    if not isinstance(patch, str):
        return []
    lines = [line for line in patch.strip("\n").splitlines() if line.strip() not in ("*** Begin Patch", "*** End Patch")]
    return [Shown(line, "bold" if line.startswith("***") else diff_style(line)) for line in lines]


def _diff(path: str, old: str, new: str) -> list[Shown]:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="")
    shown = [Shown(line, diff_style(line)) for line in lines]
    return shown or [Shown(f"{path}: no change", "dim")]


def _read(workspace: Path, path: str) -> str | None:
    """The file's text, if it is a file in the workspace (None: new, or not ours to read)."""
    target = (workspace / path).resolve()
    if not target.is_relative_to(workspace.resolve()) or not target.is_file():
        return None
    try:
        return target.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _capped(lines: list[Shown]) -> list[Shown]:
    if len(lines) <= MAX_LINES:
        return lines
    return [*lines[:MAX_LINES], Shown(f"… {counted(len(lines) - MAX_LINES, 'more line')}", "dim")]
