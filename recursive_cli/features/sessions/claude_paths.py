"""Where Claude Code keeps a session's transcript: `$CLAUDE_CONFIG_DIR/projects/<project>/<id>.jsonl`.

`<project>` is the working folder's real path (NFC) with every character other than a letter
or digit made `-`, cut at 200 characters with a hash of the path after it, as Claude Code and
its Agent SDKs name it. The headless surface keeps such a transcript of its sessions
(surfaces/headless/claude_view.py); `sessions rm` removes it with the session.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path

_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")
_LONGEST = 200  # a longer folder name is cut here and given a hash of the path (as Claude's are)


def claude_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's configuration folder: `CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    given = (env if env is not None else os.environ).get("CLAUDE_CONFIG_DIR")
    folder = given or str(Path.home() / ".claude")
    return Path(unicodedata.normalize("NFC", folder))


def project_folder_name(path: Path) -> str:
    """The folder under `projects/` for a working folder, as Claude Code and its SDKs name it."""
    try:
        real = os.path.realpath(path)
    except OSError:
        real = str(path)
    real = unicodedata.normalize("NFC", real)
    name = _NOT_ALNUM.sub("-", real)
    return name if len(name) <= _LONGEST else f"{name[:_LONGEST]}-{_base36_hash(real)}"


def _base36_hash(text: str) -> str:
    """A 32-bit string hash in base 36 (JavaScript's `h = (h << 5) - h + c | 0`), the suffix
    Claude's SDKs give a cut folder name."""
    h = 0
    for char in text:
        h = ((h << 5) - h + ord(char)) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, digit = divmod(h, 36)
        out = digits[digit] + out
        if h == 0:
            return out


def view_path(workspace: Path, session_id: str, env: Mapping[str, str] | None = None) -> Path:
    """Where the view of session `session_id` run in `workspace` lives."""
    return claude_config_dir(env) / "projects" / project_folder_name(workspace) / f"{session_id}.jsonl"
