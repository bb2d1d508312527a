"""Confine the paths tools touch to the workspace and the extra `--add-dir` roots.

Every path is resolved with symlinks followed (`os.path.realpath`) before it is checked,
so `..`, absolute paths and symlinks — to files or to directories, existing or not — that
lead outside every root are refused. Writes are also refused inside `.git/` and inside the
protected folders (RECURSIVE_HOME, which holds the sessions, checkpoints and settings), even
when a root contains them; and FIFOs, devices and sockets are refused outright, since opening
one can block forever. The check happens when a tool resolves a path; a process racing to
swap a directory for a symlink in between is outside this threat model.

Hot path: a plain path inside the workspace (no `.`, `..`, `~` or empty parts) is resolved by
one lstat per part below the workspace, which is already real; only when one of those parts is
a symlink does `os.path.realpath` walk the whole path (one lstat for every part from `/`). The
last part's lstat is also the special-file check, since it is not a symlink.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.tool import ToolError

MAX_PATH_CHARS = 4096  # PATH_MAX on Linux; longer paths only produce OS errors


class WorkspaceSandbox:
    """The `Sandbox` of a run: the workspace plus any extra roots the user allowed."""

    def __init__(self, workspace: Path, extra_roots: Sequence[Path] = (),
                 protected: Sequence[Path] = (), read_only: bool = False) -> None:
        self.read_only = read_only  # `--sandbox read-only`: the file tools write nothing either
        self.workspace = real_path(workspace)
        self.roots: tuple[Path, ...] = (self.workspace, *(real_path(r) for r in extra_roots))
        self.protected: tuple[Path, ...] = tuple(real_path(p) for p in protected)
        self._base = str(self.workspace)
        self._prefix = _below(self._base)

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Absolute real path for `path`; raises ToolError when it leads outside the roots."""
        check_path_text(path)
        fast = self._plain_in_workspace(path)
        if fast is not None:
            real_text, mode = fast
            real, root = Path(real_text), self.workspace
        else:
            candidate = Path(os.path.expanduser(path))
            if not candidate.is_absolute():
                candidate = self.workspace / candidate
            real = real_path(candidate)
            found = self.root_of(real)
            if found is None:
                raise ToolError(f"{path} is outside the workspace ({self.describe_roots()}); "
                                "file tools only work inside it")
            root, mode = found, _stat_mode(real)
        if write:
            self.check_writable(path, real, root)
        refuse_special_mode(path, mode)
        return real

    def _plain_in_workspace(self, path: str) -> tuple[str, int | None] | None:
        """(real path, mode or None when missing) for a path inside the workspace whose parts
        below it are no symlinks; None when `os.path.realpath` has to decide."""
        if path.startswith(self._prefix):
            rest = path[len(self._prefix):]
        elif path == self._base:
            return self._base, _stat_mode(self.workspace)
        elif path.startswith(("/", "~")):
            return None
        else:
            rest = path
        parts = rest.split("/")
        if "" in parts or "." in parts or ".." in parts:
            return None
        current = self._prefix.rstrip("/")
        mode: int | None = None
        for part in parts:
            current = current + "/" + part
            try:
                mode = os.lstat(current).st_mode
            except OSError:  # missing (or unsearchable): nothing below it can be a symlink
                return self._prefix + rest, None
            if stat.S_ISLNK(mode):
                return None
        return current, mode

    def check_writable(self, path: str, real: Path, root: Path) -> None:
        """Raise ToolError when `real` lies inside `.git/` or a protected folder, or when the
        sandbox is read-only."""
        if self.read_only:
            raise ToolError(f"blocked by the sandbox: refusing to write {path}: nothing may be written "
                            "(--sandbox read-only)")
        if inside_git_dir(real.relative_to(root)):
            raise ToolError(f"refusing to write {path}: files inside .git/ are managed by git")
        text = str(real)
        for guard in self.protected:
            if text == str(guard) or text.startswith(_below(str(guard))):
                raise ToolError(f"refusing to write {path}: it is inside {guard}, recursive's own "
                                "folder (RECURSIVE_HOME: sessions, checkpoints and settings)")

    def display(self, path: Path) -> str:
        """`path` relative to the workspace in posix form, or absolute when elsewhere."""
        text = str(path)
        if text.startswith(self._prefix):
            return text[len(self._prefix):]
        if text == self._base:
            return "."
        return path.as_posix()

    def root_of(self, real: Path) -> Path | None:
        """The root that contains `real`, or None."""
        for root in self.roots:
            if real == root or real.is_relative_to(root):
                return root
        return None

    def describe_roots(self) -> str:
        """The roots as one short phrase for error messages."""
        return ", ".join(str(root) for root in self.roots)


    def outside(self, path: str) -> bool:
        """Whether `path` (as a tool would resolve it) leads outside every root."""
        return self.root_of(real_path(self.absolute(path))) is None

    def absolute(self, path: str) -> Path:
        candidate = Path(os.path.expanduser(path))
        return candidate if candidate.is_absolute() else self.workspace / candidate


class OutsideAllowed:
    """The sandbox of one file-tool call the user allowed explicitly (a program's permission
    answer, as Claude Code takes it): a path outside the roots resolves as if its folder were
    one more root. Writes into `.git/` and the protected folders stay refused; shell commands
    keep the OS sandbox."""

    def __init__(self, inner: WorkspaceSandbox) -> None:
        self.inner = inner
        self.workspace = inner.workspace

    def resolve(self, path: str, *, write: bool = False) -> Path:
        check_path_text(path)
        if not self.inner.outside(path):
            return self.inner.resolve(path, write=write)
        real = real_path(self.inner.absolute(path))
        folder = real if real.is_dir() else real.parent
        wider = WorkspaceSandbox(self.inner.workspace, [*self.inner.roots[1:], folder], self.inner.protected,
                                 self.inner.read_only)
        return wider.resolve(path, write=write)

    def display(self, path: Path) -> str:
        return self.inner.display(path)


def check_path_text(path: str) -> None:
    """Raise ToolError for a path no file can have: empty, too long, with a NUL byte, or not encodable."""
    if "\x00" in path:
        raise ToolError("invalid path: it contains a NUL byte")
    if not path.strip():
        raise ToolError("invalid path: it is empty")
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(f"invalid path: it is {len(path):,} characters long; "
                        f"paths are at most {MAX_PATH_CHARS:,}")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise ToolError("invalid path: it contains a lone surrogate character, which no file "
                        "name can hold") from None


_SPECIAL_FILES: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def refuse_special_file(path: str, real: Path) -> None:
    """Raise ToolError when `real` is a FIFO, device or socket: opening one can block forever."""
    refuse_special_mode(path, _stat_mode(real))


def refuse_special_mode(path: str, mode: int | None) -> None:
    """`refuse_special_file` for a mode already known (None: missing or unreadable, which the
    tool reports itself)."""
    if mode is None or stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    for is_kind, kind in _SPECIAL_FILES:
        if is_kind(mode):
            raise ToolError(f"{path} is {kind}, not a regular file; file tools only read and write "
                            "regular files (opening this one could block forever)")


def _stat_mode(real: Path | str) -> int | None:
    """The mode of what `real` leads to (symlinks followed), or None when it cannot be read."""
    try:
        return os.stat(real).st_mode
    except (OSError, ValueError):
        return None


def _below(folder: str) -> str:
    """The prefix every path inside `folder` starts with."""
    return folder if folder.endswith("/") else folder + "/"


def real_path(path: Path | str) -> Path:
    """`path` made absolute with every symlink resolved, even where the tail does not exist."""
    return Path(os.path.realpath(path))


def inside_git_dir(relative: Path) -> bool:
    """Whether a root-relative path is, or lies inside, a `.git` directory."""
    return any(part.lower() == ".git" for part in relative.parts)
