"""The V4A patch format: its markers, its operations, and the parser that reads them.

See `patch_engine` for how a parsed patch is applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import PatchError

BEGIN_MARKER = "*** Begin Patch"
END_MARKER = "*** End Patch"
ADD_HEADER = "*** Add File:"
DELETE_HEADER = "*** Delete File:"
UPDATE_HEADER = "*** Update File:"
MOVE_HEADER = "*** Move to:"
EOF_MARKER = "*** End of File"
HUNK_MARKER = "@@"

_OPERATION_HEADERS = (ADD_HEADER, DELETE_HEADER, UPDATE_HEADER)
_HEREDOC_OPENER = re.compile(r"(?:[\w./-]+\s+)?<<-?\s*(['\"]?)(\w+)\1")
_UNIFIED_HUNK_HEADER = re.compile(r"-\d+(?:,\d+)? \+\d+(?:,\d+)? @@\s*(.*)")


@dataclass(frozen=True)
class PatchResult:
    """The files a patch touched, as their paths were written in the patch."""

    added: list[str]
    modified: list[str]
    deleted: list[str]

    def summary(self) -> str:
        """One ``A``/``M``/``D`` line per file, in that order, like Codex prints."""
        rows = [f"A {path}" for path in self.added]
        rows += [f"M {path}" for path in self.modified]
        rows += [f"D {path}" for path in self.deleted]
        return "\n".join(rows)


@dataclass(frozen=True)
class Chunk:
    """One ``@@`` section of an Update File, as ``(marker, text)`` lines.

    Markers are ``" "`` (context, kept), ``"-"`` (removed) and ``"+"`` (added).
    """

    context: str | None
    lines: tuple[tuple[str, str], ...]
    at_eof: bool

    @property
    def old(self) -> list[str]:
        """The lines to find in the file."""
        return [text for marker, text in self.lines if marker != "+"]

    @property
    def new(self) -> list[str]:
        """The lines as the patch author wrote them after the change."""
        return [text for marker, text in self.lines if marker != "-"]

    def without_trailing_blank(self) -> Chunk | None:
        """This chunk minus a final blank old line, which a file may lack; else None."""
        for position in range(len(self.lines) - 1, -1, -1):
            marker, text = self.lines[position]
            if marker != "+":
                if text:
                    return None
                kept = self.lines[:position] + self.lines[position + 1:]
                return Chunk(self.context, kept, self.at_eof)
        return None


@dataclass(frozen=True)
class AddFile:
    path: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]


Operation = AddFile | DeleteFile | UpdateFile




def parse_patch(patch: str) -> list[Operation]:
    """Turn patch text into operations, or raise PatchError naming the bad line."""
    lines = [line.removesuffix("\r") for line in patch.strip().split("\n")]
    index, end = _body_bounds(lines)
    operations: list[Operation] = []
    while index < end:
        if not lines[index].strip():
            index += 1
            continue
        operation, index = _parse_operation(lines, index, end)
        operations.append(operation)
    if not operations:
        raise PatchError(
            "the patch contains no file operations; put '*** Add File: <path>', "
            "'*** Delete File: <path>' or '*** Update File: <path>' between the markers"
        )
    return operations


def _body_bounds(lines: list[str]) -> tuple[int, int]:
    """Index range between the Begin and End markers, allowing a heredoc around them."""
    first, last = 0, len(lines) - 1
    opener = _HEREDOC_OPENER.fullmatch(lines[0].strip())
    if opener and last >= 2 and lines[last].strip() == opener.group(2):
        first, last = 1, last - 1
    if lines[first].strip() != BEGIN_MARKER:
        raise PatchError(f"the first line of the patch must be '{BEGIN_MARKER}'")
    if last <= first or lines[last].strip() != END_MARKER:
        raise PatchError(f"the last line of the patch must be '{END_MARKER}'")
    return first + 1, last


def _parse_operation(lines: list[str], index: int, end: int) -> tuple[Operation, int]:
    """Parse the file operation whose header is at ``lines[index]``."""
    header = lines[index].strip()
    if header.startswith(ADD_HEADER):
        return _parse_add(lines, index + 1, end, _header_path(header, ADD_HEADER, index))
    if header.startswith(DELETE_HEADER):
        return DeleteFile(_header_path(header, DELETE_HEADER, index)), index + 1
    if header.startswith(UPDATE_HEADER):
        return _parse_update(lines, index + 1, end, _header_path(header, UPDATE_HEADER, index))
    hint = "" if header.startswith("***") else " (every line of an added file must start with '+')"
    raise PatchError(
        f"line {index + 1}: '{header}' is not a valid file operation header; expected "
        f"'{ADD_HEADER} <path>', '{DELETE_HEADER} <path>' or '{UPDATE_HEADER} <path>'{hint}"
    )


def _header_path(header: str, prefix: str, index: int) -> str:
    path = header[len(prefix):].strip()
    if not path:
        raise PatchError(f"line {index + 1}: '{header}' names no file")
    return path


def _parse_add(lines: list[str], index: int, end: int, path: str) -> tuple[AddFile, int]:
    body: list[str] = []
    while index < end and lines[index].startswith("+"):
        body.append(lines[index][1:])
        index += 1
    return AddFile(path, tuple(body)), index


def _parse_update(lines: list[str], index: int, end: int, path: str) -> tuple[UpdateFile, int]:
    move_to = None
    if index < end and lines[index].strip().startswith(MOVE_HEADER):
        move_to = _header_path(lines[index].strip(), MOVE_HEADER, index)
        index += 1
    chunks: list[Chunk] = []
    while index < end and not _ends_update(lines[index]):
        if not lines[index].strip():  # blank lines may separate chunks
            index += 1
            continue
        chunk, index = _parse_chunk(lines, index, end, path, first=not chunks)
        chunks.append(chunk)
    if not chunks:
        raise PatchError(
            f"'{UPDATE_HEADER} {path}' has no hunks; follow it with '@@' and "
            "' ' (context), '-' (removed) and '+' (added) lines"
        )
    return UpdateFile(path, move_to, tuple(chunks)), index


def _ends_update(line: str) -> bool:
    """Whether ``line`` closes an Update File section (the next operation begins)."""
    return line.startswith("***") or line.strip().startswith(_OPERATION_HEADERS)


def _parse_chunk(
    lines: list[str], index: int, end: int, path: str, *, first: bool
) -> tuple[Chunk, int]:
    """Parse one ``@@`` chunk; only the first chunk of a file may omit its header."""
    context, has_header = _chunk_header(lines[index])
    if has_header:
        index += 1
    elif not first:
        raise PatchError(
            f"line {index + 1}: expected a '{HUNK_MARKER}' hunk header in {path}, "
            f"got '{lines[index]}'"
        )
    body: list[tuple[str, str]] = []
    start, at_eof = index, False
    while index < end:
        line = lines[index]
        if line.strip() == EOF_MARKER:
            at_eof = index > start
            index += 1
            break
        entry = _chunk_line(line)
        if entry is None or line.lstrip().startswith(_OPERATION_HEADERS):
            break
        body.append(entry)
        index += 1
    if not body:
        raise PatchError(
            f"line {start + 1}: hunk in {path} has no lines; every line must start with "
            f"' ' (context), '-' (removed) or '+' (added), got '{lines[min(start, end - 1)]}'"
        )
    return Chunk(context, tuple(body), at_eof), index


def _chunk_header(line: str) -> tuple[str | None, bool]:
    """The context of a ``@@`` header line, and whether the line is a header at all."""
    if line.strip() == HUNK_MARKER:
        return None, True
    if not line.startswith(HUNK_MARKER + " "):
        return None, False
    context = line[len(HUNK_MARKER) + 1:]
    unified = _UNIFIED_HUNK_HEADER.fullmatch(context.strip())
    if unified:  # a unified-diff header ("@@ -1,3 +1,4 @@ def f():") carries no usable numbers
        context = unified.group(1)
    return (context if context.strip() else None), True


def _chunk_line(line: str) -> tuple[str, str] | None:
    """A chunk line as ``(marker, text)``, or None when it is not a chunk line."""
    if not line:  # an empty line is an empty context line
        return " ", ""
    if line[0] in " -+":
        return line[0], line[1:]
    return None

