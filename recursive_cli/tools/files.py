"""File tools: `read_file` (line-numbered text), `write_file` and `edit_file` (exact replace)."""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TextIO

from msgspec import Meta

from ..core.errors import ImageError
from ..core.images import image_size, load_image, looks_like_image
from ..core.tool import BaseTool, ToolContext, ToolError, ToolResult
from ..core.wording import counted

DEFAULT_LINE_LIMIT = 2000
MAX_LINE_CHARS = 2000
BINARY_PROBE_BYTES = 8192
DIFF_LINE_LIMIT = 20_000  # above this, line counts come from lengths, not a real diff


@dataclass(slots=True, kw_only=True)
class ReadArgs:
    path: Annotated[str, Meta(description="File to read, relative to the workspace.")]
    offset: Annotated[Annotated[int, Meta(ge=1)] | None, Meta(description="First line to show (1-based).")] = None
    limit: Annotated[Annotated[int, Meta(ge=1)] | None,
                     Meta(description=f"Most lines to show (default {DEFAULT_LINE_LIMIT}).")] = None


class ReadFileTool(BaseTool[ReadArgs]):
    name = "read_file"
    description = (
        "Read a text file and return its lines numbered from 1 (`number<TAB>text`). "
        f"Shows at most {DEFAULT_LINE_LIMIT} lines; use `offset` and `limit` to page through "
        "long files. Read a file before editing it. An image file (PNG, JPEG, GIF, WebP) is "
        "returned as the image. Other binary files and directories are refused "
        "(use list_dir for directories)."
    )
    kind = "read"
    Args = ReadArgs

    async def run(self, args: ReadArgs, ctx: ToolContext) -> ToolResult:
        path = ctx.sandbox.resolve(args.path)
        shown = ctx.sandbox.display(path)
        if looks_like_image(path):
            return _read_image(path, shown)
        first = args.offset or 1
        limit = args.limit or DEFAULT_LINE_LIMIT
        budget = max(ctx.output_limit - 300, 1000)
        with open_text_file(path, shown) as handle:
            lines, last, more = numbered_lines(handle, first, limit, budget)
        if not lines:
            if first == 1:
                return ToolResult(f"{shown} is empty", summary="empty file")
            raise ToolError(f"offset {first} is past the end of {shown} ({last} lines)")
        text = "\n".join(lines)
        if more:
            text += (f"\n\n[{shown} continues after line {last}; "
                     f"call read_file with offset={last + 1} to read more]")
        return ToolResult(text, summary=f"lines {first}-{last}")


def _read_image(path: Path, shown: str) -> ToolResult:
    """An image file as an image for the model, with a line of text naming it."""
    try:
        image = load_image(path, shown)
    except ImageError as exc:
        raise ToolError(str(exc)) from None
    return ToolResult(f"{shown} is an image ({image.media_type}, {image_size(image)} bytes); it follows.",
                      summary="image", images=(image,))


@contextlib.contextmanager
def open_text_file(path: Path, shown: str) -> Iterator[TextIO]:
    """The text of `path` (undecodable bytes become U+FFFD, line endings untouched), opened once;
    ToolError unless it is an existing, non-binary regular file.

    One open, one fstat and one read for a file that fits the binary probe: its bytes are
    decoded as they are; a longer file is read on from the same descriptor.
    """
    try:  # O_NONBLOCK: a FIFO put in the file's place after the sandbox's check cannot block
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"{shown} does not exist") from None
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{shown} is a directory, not a file; use list_dir to see what it contains")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{shown} is not a regular file")
        try:
            probe = os.read(fd, BINARY_PROBE_BYTES)
        except OSError as exc:
            raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from None
        if b"\x00" in probe:
            raise ToolError(f"{shown} looks like a binary file ({info.st_size} bytes); "
                            "read_file only shows text files")
        if len(probe) < BINARY_PROBE_BYTES and len(probe) == info.st_size:  # the whole file
            yield io.StringIO(probe.decode("utf-8", "replace"), newline="")
            return
        os.lseek(fd, 0, os.SEEK_SET)
        with open(fd, encoding="utf-8", errors="replace", newline="", closefd=False) as handle:
            yield handle
    finally:
        os.close(fd)


def numbered_lines(handle: TextIO, first: int, limit: int, budget: int) -> tuple[list[str], int, bool]:
    """Lines `first`.. of the open text `handle`, numbered, within `limit` lines and about
    `budget` characters.

    Returns the lines, the number of the last line shown (or of the file's last line when
    none are shown) and whether more lines follow.
    """
    out: list[str] = []
    used = 0
    number = 0
    for number, raw in enumerate(bounded_lines(handle, MAX_LINE_CHARS + 1), start=1):
        if number < first:
            continue
        if len(out) >= limit:
            return out, number - 1, True
        line = number_line(number, raw)
        if out and used + len(line) > budget:
            return out, number - 1, True
        out.append(line)
        used += len(line) + 1
    return out, (first + len(out) - 1) if out else number, False


def bounded_lines(handle: TextIO, keep: int) -> Iterator[str]:
    """The handle's lines without their line ending, each cut to `keep` characters.

    The rest of a longer line is read and dropped in pieces, so a huge file with no
    newline never sits in memory whole.
    """
    while piece := handle.readline(keep):
        if not piece.endswith(("\n", "\r")):
            while (rest := handle.readline(keep)) and not rest.endswith(("\n", "\r")):
                pass
        yield piece.rstrip("\r\n")


def number_line(number: int, text: str) -> str:
    """One output line: right-aligned number, a tab, the text (cut when very long)."""
    if len(text) > MAX_LINE_CHARS:
        text = f"{text[:MAX_LINE_CHARS]}… [line cut at {MAX_LINE_CHARS} characters]"
    return f"{number:6}\t{text}"


@dataclass(slots=True, kw_only=True)
class WriteArgs:
    path: Annotated[str, Meta(description="File to write, relative to the workspace.")]
    content: Annotated[str, Meta(description="The complete new content of the file.")]


class WriteFileTool(BaseTool[WriteArgs]):
    name = "write_file"
    description = (
        "Create a file, or replace a file's whole content, creating parent directories as "
        "needed. Use it for new files; to change part of an existing file prefer edit_file or "
        "apply_patch, which do not need the whole file resent."
    )
    kind = "edit"
    Args = WriteArgs

    async def run(self, args: WriteArgs, ctx: ToolContext) -> ToolResult:
        path = ctx.sandbox.resolve(args.path, write=True)
        shown = ctx.sandbox.display(path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path")
        old = read_text(path, shown) if path.exists() else None
        data = utf8_bytes(args.content)  # refused before anything is created
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        lines = count_lines(args.content)
        if old is None:
            return ToolResult(f"created {shown} ({counted(lines, 'line')})",
                              summary=f"new file, +{counted(lines, 'line')}")
        added, removed = line_delta(old, args.content)
        return ToolResult(f"wrote {shown} ({counted(lines, 'line')})", summary=f"+{added} −{removed}")


@dataclass(slots=True, kw_only=True)
class EditArgs:
    path: Annotated[str, Meta(description="File to edit, relative to the workspace.")]
    old_string: Annotated[str, Meta(description="Exact text to replace, including whitespace and indentation.")]
    new_string: Annotated[str, Meta(description="Text to put in its place.")]
    replace_all: Annotated[bool, Meta(description="Replace every occurrence instead of exactly one.")] = False


class EditFileTool(BaseTool[EditArgs]):
    name = "edit_file"
    description = (
        "Replace an exact piece of text in a file. `old_string` must match the file exactly "
        "(whitespace and indentation included) and occur exactly once, unless replace_all is "
        "true; include a few surrounding lines to make it unique. Read the file first."
    )
    kind = "edit"
    Args = EditArgs

    async def run(self, args: EditArgs, ctx: ToolContext) -> ToolResult:
        path = ctx.sandbox.resolve(args.path, write=True)
        shown = ctx.sandbox.display(path)
        check_edit(args)
        with open_text_file(path, shown) as handle:
            original = handle.read()
        crlf = args.old_string not in original and "\r\n" in original
        text, old, new = original, args.old_string, args.new_string
        if crlf:  # models write "\n": edit a CRLF file in "\n" form, then convert back
            text, old, new = lf(text), lf(old), lf(new)
        count = text.count(old)
        check_matches(count, args.replace_all, shown)
        updated = text.replace(old, new, -1 if args.replace_all else 1)
        write_text(path, updated.replace("\n", "\r\n") if crlf else updated)
        added, removed = line_delta(args.old_string, args.new_string)
        added, removed = added * count, removed * count
        times = counted(count, 'occurrence')
        return ToolResult(f"edited {shown}: replaced {times} (+{added} −{removed} lines)",
                          summary=f"+{added} −{removed}")


def check_edit(args: EditArgs) -> None:
    """Refuse edits that cannot mean anything."""
    if not args.old_string:
        raise ToolError("old_string is empty; to create or overwrite a file use write_file")
    if args.old_string == args.new_string:
        raise ToolError("old_string and new_string are identical; nothing would change")


def check_matches(count: int, replace_all: bool, shown: str) -> None:
    """Refuse when old_string is missing, or ambiguous without replace_all."""
    if count == 0:
        raise ToolError(f"old_string was not found in {shown}; it must match exactly, "
                        "including whitespace and indentation (read the file to check)")
    if count > 1 and not replace_all:
        raise ToolError(f"old_string occurs {count} times in {shown}; add surrounding lines to "
                        "make it unique, or set replace_all=true to replace every occurrence")


def read_text(path: Path, shown: str) -> str:
    """The file's text, line endings untouched; undecodable bytes become U+FFFD."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            return handle.read()
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from exc


def write_text(path: Path, text: str) -> None:
    """Write `text` as UTF-8 exactly as given (no newline translation)."""
    path.write_bytes(utf8_bytes(text))


def utf8_bytes(text: str) -> bytes:
    """`text` as UTF-8; ToolError when it holds a lone surrogate (from a `\\ud800` JSON escape)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"the text holds a lone surrogate ({text[exc.start]!r} at character "
                        f"{exc.start}), which is not valid Unicode; nothing was written") from None


def lf(text: str) -> str:
    """`text` with CRLF line endings turned into LF."""
    return text.replace("\r\n", "\n")


def count_lines(text: str) -> int:
    """Number of lines in `text`, counting a last line without a newline."""
    return len(text.splitlines())


def line_delta(old: str, new: str) -> tuple[int, int]:
    """Lines added and removed going from `old` to `new`."""
    before, after = old.splitlines(), new.splitlines()
    if len(before) + len(after) > DIFF_LINE_LIMIT:
        return max(len(after) - len(before), 0), max(len(before) - len(after), 0)
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed
