"""Finding files: `list_dir` (a tree) and `glob` (pattern match, .gitignore respected).

`project_files` and `glob_regex` are shared with `search_files`' Python fallback so both
tools agree on which files exist: inside a git work tree that is what
`git ls-files --cached --others --exclude-standard` reports, elsewhere a walk that skips `.git`.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from msgspec import Meta

from ..core.tool import BaseTool, ToolContext, ToolError, ToolResult
from ..core.wording import counted

MAX_LIST_ENTRIES = 500
MAX_GLOB_RESULTS = 200
GIT_TIMEOUT_SECONDS = 30
# Shown but never expanded by list_dir: generated trees that drown the listing.
UNEXPANDED_DIRS = frozenset({"node_modules", "__pycache__", ".venv", "venv", ".tox",
                             ".mypy_cache", ".pytest_cache", ".ruff_cache"})


@dataclass(slots=True, kw_only=True)
class ListArgs:
    path: Annotated[str, Meta(description="Directory to list, relative to the workspace.")] = "."
    depth: Annotated[int, Meta(ge=1, le=10, description="How many levels deep to go (1 = only its entries).")] = 2


class ListDirTool(BaseTool[ListArgs]):
    name = "list_dir"
    description = (
        "Show a directory as an indented tree (directories end with `/`, symlinks show their "
        f"target), `depth` levels deep, at most {MAX_LIST_ENTRIES} entries. `.git` is skipped "
        "and dependency/cache folders such as node_modules are not expanded. Use it to get "
        "oriented; use glob to find files by name and search_files to find text."
    )
    kind = "read"
    Args = ListArgs

    async def run(self, args: ListArgs, ctx: ToolContext) -> ToolResult:
        root = ctx.sandbox.resolve(args.path)
        shown = ctx.sandbox.display(root)
        if not root.is_dir():
            problem = "is not a directory" if root.exists() else "does not exist"
            raise ToolError(f"{shown} {problem}")
        lines, full = await asyncio.to_thread(tree_lines, root, args.depth, MAX_LIST_ENTRIES)
        if not lines:
            return ToolResult(f"{shown}/ is empty", summary="empty")
        text = "\n".join([f"{shown}/", *lines])
        if full:
            text += (f"\n[listing stopped at {MAX_LIST_ENTRIES} entries; list a subdirectory "
                     "or use a smaller depth]")
        return ToolResult(text, summary=counted(len(lines), "entry", "entries"))


def tree_lines(root: Path, depth: int, cap: int) -> tuple[list[str], bool]:
    """The entries under `root` as indented lines, and whether `cap` cut the listing short."""
    lines: list[str] = []

    def visit(directory: str, level: int) -> bool:
        for entry in sorted_entries(directory):
            if len(lines) >= cap:
                return True
            lines.append("  " * (level + 1) + entry_label(entry))
            expand = entry.is_dir(follow_symlinks=False) and entry.name not in UNEXPANDED_DIRS
            if expand and level + 1 < depth and visit(entry.path, level + 1):
                return True
        return False

    return lines, visit(str(root), 0)


def sorted_entries(directory: str) -> list[os.DirEntry[str]]:
    """A directory's entries except `.git`, sorted by name; unreadable directories are empty."""
    try:
        with os.scandir(directory) as it:
            entries = [entry for entry in it if entry.name != ".git"]
    except OSError:
        return []
    return sorted(entries, key=lambda entry: entry.name.lower())


def entry_label(entry: os.DirEntry[str]) -> str:
    """`name/` for directories, `name -> target` for symlinks, `name` otherwise."""
    if entry.is_symlink():
        try:
            return f"{entry.name} -> {os.readlink(entry.path)}"
        except OSError:
            return f"{entry.name} -> ?"
    return entry.name + "/" if entry.is_dir() else entry.name


@dataclass(slots=True, kw_only=True)
class GlobArgs:
    pattern: Annotated[str, Meta(description="Glob such as `**/*.py`, `src/*.ts` or `**/test_*.{py,txt}`.")]
    path: Annotated[str, Meta(description="Directory the pattern is relative to (default: the workspace).")] = "."


class GlobTool(BaseTool[GlobArgs]):
    name = "glob"
    description = (
        "Find files whose path matches a glob pattern, relative to `path`. `*` and `?` stay "
        "within one directory, `**/` matches any number of directories (so `*.py` matches only "
        "the top level and `**/*.py` every Python file), `{a,b}` gives alternatives. Files "
        "ignored by .gitignore are left out. Newest first, at most "
        f"{MAX_GLOB_RESULTS} paths."
    )
    kind = "read"
    Args = GlobArgs
    subject_field = "pattern"

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolResult:
        base = ctx.sandbox.resolve(args.path)
        if not base.is_dir():
            raise ToolError(f"{ctx.sandbox.display(base)} is not a directory")
        matcher = glob_regex(relative_pattern(args.pattern))
        found = await asyncio.to_thread(matching_files, base, matcher)
        if not found:
            return ToolResult(f"no files match {args.pattern} in {ctx.sandbox.display(base)}",
                              summary="0 files")
        lines = [ctx.sandbox.display(path) for path in found[:MAX_GLOB_RESULTS]]
        if len(found) > MAX_GLOB_RESULTS:
            lines.append(f"[{len(found) - MAX_GLOB_RESULTS} more files match; showing the "
                         f"{MAX_GLOB_RESULTS} most recently modified — narrow the pattern]")
        return ToolResult("\n".join(lines), summary=counted(len(found), "file"))


def relative_pattern(pattern: str) -> str:
    """The pattern without a leading `./`; absolute patterns are refused."""
    pattern = pattern.strip()
    if not pattern:
        raise ToolError("pattern is empty")
    if pattern.startswith("/"):
        raise ToolError("pattern must be relative; put the directory in `path` instead")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def matching_files(base: Path, matcher: re.Pattern[str]) -> list[Path]:
    """Files under `base` whose relative path matches, newest modification first."""
    found = [base / rel for rel in project_files(base) if matcher.fullmatch(rel)]
    return sorted(found, key=modified_time, reverse=True)


def modified_time(path: Path) -> float:
    """The file's mtime, or 0 when it cannot be read."""
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def project_files(base: Path) -> list[str]:
    """Posix paths, relative to `base`, of the files below it that git would not ignore."""
    listed = git_files(base)
    return listed if listed is not None else walked_files(base)


def git_files(base: Path) -> list[str] | None:
    """Tracked and untracked-but-not-ignored files per git, or None outside a work tree."""
    command = ["git", "-C", str(base), "ls-files", "-z", "--cached", "--others",
               "--exclude-standard"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=GIT_TIMEOUT_SECONDS,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = dict.fromkeys(os.fsdecode(raw) for raw in done.stdout.split(b"\0") if raw)
    # Deleted-but-tracked files are listed too, and submodules appear as directories.
    return [name for name in names if os.path.isfile(base / name) or os.path.islink(base / name)]


def walked_files(base: Path) -> list[str]:
    """Every file below `base`, skipping `.git` and not following directory symlinks."""
    found: list[str] = []
    for directory, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(name for name in dirnames if name != ".git")
        prefix = Path(directory).relative_to(base)
        found.extend((prefix / name).as_posix() for name in sorted(filenames))
    return found


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob (`*`, `?`, `[..]`, `**`, `{a,b}`) into a regex over posix paths."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        token, i = glob_token(pattern, i)
        out.append(token)
    return re.compile("".join(out), re.DOTALL)


def glob_token(pattern: str, i: int) -> tuple[str, int]:
    """The regex for the glob syntax starting at `pattern[i]`, and the index after it."""
    if pattern.startswith("**/", i):
        return "(?:.*/)?", i + 3
    if pattern.startswith("**", i):
        return ".*", i + 2
    char = pattern[i]
    if char == "*":
        return "[^/]*", i + 1
    if char == "?":
        return "[^/]", i + 1
    if char == "[":
        end = pattern.find("]", i + 2)
        if end != -1:
            body = pattern[i + 1:end].replace("\\", "\\\\")
            return "[" + ("^" + body[1:] if body.startswith("!") else body) + "]", end + 1
    if char == "{":
        end = pattern.find("}", i)
        if end != -1 and "," in pattern[i:end]:
            options = [glob_regex(part).pattern for part in pattern[i + 1:end].split(",")]
            return "(?:" + "|".join(options) + ")", end + 1
    return re.escape(char), i + 1
