"""The `search_files` tool: regex search over file contents, with ripgrep or pure Python.

Both back ends see the same files — .gitignore respected inside a git work tree, hidden
files included, `.git` and binary files skipped — and print `path:line:text`. The Python
back end does not read text files over 50 MiB; the result names them, so a "no matches" is
never taken for an answer about a file that was not searched.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from msgspec import Meta

from ..core.tool import BaseTool, ToolContext, ToolError, ToolResult
from .listing import glob_regex, project_files

DEFAULT_MAX_RESULTS = 100
MAX_MATCH_CHARS = 500
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_SKIPPED_NAMES = 10  # the skipped-files note names this many, then counts the rest
SEARCH_SECONDS = 60.0
BINARY_PROBE_BYTES = 8192


@dataclass(slots=True, kw_only=True)
class SearchArgs:
    pattern: Annotated[str, Meta(description="Regular expression to look for in each line.")]
    path: Annotated[str, Meta(description="File or directory to search (default: the workspace).")] = "."
    glob: Annotated[str | None, Meta(description="Only files matching this glob, e.g. `*.py` or `src/**/*.ts`.")] = None
    case_insensitive: Annotated[bool, Meta(description="Ignore letter case.")] = False
    max_results: Annotated[int, Meta(ge=1, le=2000, description="Most matching lines to return.")] = DEFAULT_MAX_RESULTS


@dataclass
class Hits:
    """Matching lines found so far, and why the search stopped early, if it did."""

    matches: list[tuple[Path, str]] = field(default_factory=list)  # (file, "line:text")
    stopped: str = ""
    too_big: list[Path] = field(default_factory=list)  # text files over MAX_FILE_BYTES, not searched


class SearchFilesTool(BaseTool[SearchArgs]):
    name = "search_files"
    description = (
        "Search file contents for a regular expression and list matching lines as "
        "`path:line:text`. Searches `path` (default: the whole workspace), skipping files "
        "ignored by .gitignore and binary files; `glob` narrows the files (`*.py` matches by "
        "name anywhere). Use it to find definitions, usages and strings before reading files. "
        f"Returns at most max_results (default {DEFAULT_MAX_RESULTS}) lines."
    )
    kind = "read"
    Args = SearchArgs
    subject_field = "pattern"

    async def run(self, args: SearchArgs, ctx: ToolContext) -> ToolResult:
        base = ctx.sandbox.resolve(args.path)
        if not base.exists():
            raise ToolError(f"{ctx.sandbox.display(base)} does not exist")
        rg = shutil.which("rg")
        if rg:
            hits = await ripgrep_search(rg, args, base)
        else:
            hits = await asyncio.to_thread(python_search, args, base, compile_pattern(args))
        return render(hits, args, ctx.sandbox.display, base)


def render(hits: Hits, args: SearchArgs, display: Callable[[Path], str], base: Path) -> ToolResult:
    """The result the model sees: matching lines plus a note when the search stopped early and
    one naming the files too big to search."""
    skipped = f"\n[{skipped_note(hits.too_big, display)}]" if hits.too_big else ""
    also = f", {len(hits.too_big)} skipped" if hits.too_big else ""
    if not hits.matches:
        return ToolResult(f"no matches for {args.pattern!r} in {display(base)}{skipped}",
                          summary=f"0 matches{also}")
    text = "\n".join(f"{display(path)}:{rest}" for path, rest in hits.matches)
    if hits.stopped:
        text += f"\n[{hits.stopped}]"
    count = len(hits.matches)
    return ToolResult(text + skipped, summary=f"{count} match" + ("" if count == 1 else "es") + also)


def skipped_note(paths: list[Path], display: Callable[[Path], str]) -> str:
    """`skipped 2 files over 50 MiB (not searched): big.bin, data.csv`, naming at most
    MAX_SKIPPED_NAMES of them."""
    count = len(paths)
    names = ", ".join(display(path) for path in paths[:MAX_SKIPPED_NAMES])
    more = f" and {count - MAX_SKIPPED_NAMES} more" if count > MAX_SKIPPED_NAMES else ""
    noun = "file" if count == 1 else "files"
    return f"skipped {count} {noun} over {MAX_FILE_BYTES // (1024 * 1024)} MiB (not searched): {names}{more}"


def compile_pattern(args: SearchArgs) -> re.Pattern[str]:
    """The pattern as a Python regex; an invalid one is a ToolError the model can fix."""
    try:
        return re.compile(args.pattern, re.IGNORECASE if args.case_insensitive else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {args.pattern!r}: {exc}") from exc


def cap_note(max_results: int) -> str:
    return (f"stopped at max_results={max_results} matching lines; narrow the pattern, path or "
            "glob, or raise max_results")


def timeout_note() -> str:
    return (f"search stopped after {SEARCH_SECONDS:.0f} s; results are incomplete — "
            "narrow the path")


# --- ripgrep ---------------------------------------------------------------------------


def ripgrep_command(rg: str, args: SearchArgs, base: Path) -> list[str]:
    """The rg command line: hidden files searched, `.git` skipped, NUL after each path."""
    command = [rg, "--no-heading", "--with-filename", "--line-number", "--null", "--color=never",
               "--hidden", "--glob=!.git", f"--max-columns={MAX_MATCH_CHARS}",
               "--max-columns-preview"]
    if args.case_insensitive:
        command.append("--ignore-case")
    if args.glob:
        command.append(f"--glob={args.glob}")
    return [*command, "--regexp", args.pattern, "--", str(base)]


async def ripgrep_search(rg: str, args: SearchArgs, base: Path) -> Hits:
    """Run rg, reading matches until max_results, then stop it."""
    proc = await asyncio.create_subprocess_exec(
        *ripgrep_command(rg, args, base), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=1 << 20)
    errors = asyncio.ensure_future(proc.stderr.read())  # type: ignore[union-attr]
    hits = Hits()
    read_all = False
    try:
        await asyncio.wait_for(collect_rg(proc, args.max_results, hits), SEARCH_SECONDS)
        read_all = not hits.stopped
    except asyncio.TimeoutError:
        hits.stopped = timeout_note()
    finally:
        # Kill only when stopping early: Popen.kill() polls, and reaping an rg that already
        # exited would steal its status from asyncio's child watcher.
        if not read_all and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
        stderr = (await errors).decode("utf-8", "replace").strip()
    if proc.returncode == 2 and not hits.matches and stderr:
        raise ToolError(f"search failed: {stderr[:2000]}")
    return hits


async def collect_rg(proc: asyncio.subprocess.Process, max_results: int, hits: Hits) -> None:
    """Turn rg's `path\\0line:text` lines into hits."""
    assert proc.stdout is not None
    while raw := await proc.stdout.readline():
        if len(hits.matches) >= max_results:
            hits.stopped = cap_note(max_results)
            return
        path, _, rest = raw.decode("utf-8", "replace").rstrip("\r\n").partition("\0")
        hits.matches.append((Path(path), rest))


# --- pure Python -----------------------------------------------------------------------


def python_search(args: SearchArgs, base: Path, regex: re.Pattern[str]) -> Hits:
    """Search like rg does, for machines without it."""
    hits = Hits()
    deadline = time.monotonic() + SEARCH_SECONDS
    for path in candidate_files(base, args.glob):
        if time.monotonic() > deadline:
            hits.stopped = timeout_note()
            break
        if search_file(path, regex, hits, args.max_results):
            hits.stopped = cap_note(args.max_results)
            break
    return hits


def candidate_files(base: Path, glob: str | None) -> list[Path]:
    """The files to search: `base` itself, or the non-ignored files under it that match `glob`."""
    if base.is_file():
        return [base]
    keep = glob_filter(glob)
    return [base / rel for rel in project_files(base) if keep(rel)]


def glob_filter(glob: str | None) -> Callable[[str], bool]:
    """rg-style glob test: a glob without `/` matches the file name, `!glob` excludes."""
    if not glob:
        return lambda rel: True
    negate = glob.startswith("!")
    pattern = glob[1:] if negate else glob
    regex = glob_regex(pattern.lstrip("/"))
    by_name = "/" not in pattern

    def keep(rel: str) -> bool:
        subject = rel.rsplit("/", 1)[-1] if by_name else rel
        return bool(regex.fullmatch(subject)) != negate

    return keep


def search_file(path: Path, regex: re.Pattern[str], hits: Hits, max_results: int) -> bool:
    """Add the file's matching lines to `hits`; True when max_results was reached."""
    try:
        # Only regular files: a symlink could lead outside the workspace (rg does not follow
        # them either) and opening a FIFO would block.
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or is_binary(path):
            return False
        if info.st_size > MAX_FILE_BYTES:
            hits.too_big.append(path)
            return False
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not regex.search(line):
                    continue
                if len(hits.matches) >= max_results:
                    return True
                text = clip(line.rstrip("\r\n"))
                hits.matches.append((path, f"{number}:{text}"))
    except OSError:
        pass  # unreadable files are skipped, as rg does
    return False


def is_binary(path: Path) -> bool:
    """Whether the file has a NUL byte near its start."""
    with path.open("rb") as handle:
        return b"\x00" in handle.read(BINARY_PROBE_BYTES)


def clip(text: str) -> str:
    """A matching line, cut to a readable length."""
    if len(text) <= MAX_MATCH_CHARS:
        return text
    return text[:MAX_MATCH_CHARS] + " …[line cut]"
