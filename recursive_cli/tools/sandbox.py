"""Confine the paths tools touch to the workspace and the extra `--add-dir` roots.

Every path is resolved with symlinks followed (`os.path.realpath`) before it is checked,
so `..`, absolute paths and symlinks — to files or to directories, existing or not — that
lead outside every root are refused. The check happens when a tool resolves a path; a
process racing to swap a directory for a symlink in between is outside this threat model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .base import ToolError


class WorkspaceSandbox:
    """The `Sandbox` of a run: the workspace plus any extra roots the user allowed."""

    def __init__(self, workspace: Path, extra_roots: Sequence[Path] = ()) -> None:
        self.workspace = real_path(workspace)
        self.roots: tuple[Path, ...] = (self.workspace, *(real_path(r) for r in extra_roots))

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Absolute real path for `path`; raises ToolError when it leads outside the roots."""
        if "\x00" in path:
            raise ToolError("invalid path: it contains a NUL byte")
        if not path.strip():
            raise ToolError("invalid path: it is empty")
        candidate = Path(os.path.expanduser(path))
        if not candidate.is_absolute():
            candidate = self.workspace / candidate
        real = real_path(candidate)
        root = self.root_of(real)
        if root is None:
            raise ToolError(f"{path} is outside the workspace ({self.describe_roots()}); "
                            "file tools only work inside it")
        if write and inside_git_dir(real.relative_to(root)):
            raise ToolError(f"refusing to write {path}: files inside .git/ are managed by git")
        return real

    def display(self, path: Path) -> str:
        """`path` relative to the workspace in posix form, or absolute when elsewhere."""
        try:
            relative = path.relative_to(self.workspace)
        except ValueError:
            return path.as_posix()
        text = relative.as_posix()
        return "." if text in ("", ".") else text

    def root_of(self, real: Path) -> Path | None:
        """The root that contains `real`, or None."""
        for root in self.roots:
            if real == root or real.is_relative_to(root):
                return root
        return None

    def describe_roots(self) -> str:
        """The roots as one short phrase for error messages."""
        return ", ".join(str(root) for root in self.roots)


def real_path(path: Path | str) -> Path:
    """`path` made absolute with every symlink resolved, even where the tail does not exist."""
    return Path(os.path.realpath(path))


def inside_git_dir(relative: Path) -> bool:
    """Whether a root-relative path is, or lies inside, a `.git` directory."""
    return any(part.lower() == ".git" for part in relative.parts)
