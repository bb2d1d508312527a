"""Apply patches in OpenAI's V4A ``apply_patch`` format, with Codex's semantics.

A patch is a list of file operations between two markers::

    *** Begin Patch
    *** Add File: docs/new.md
    +hello
    *** Update File: src/app.py
    *** Move to: src/main.py
    @@ def main():
    -    print("hi")
    +    print("hello")
    *** Delete File: old.txt
    *** End Patch

The whole patch is parsed, and every path resolved, before the disk is touched. The
operations then run in order and, as in Codex, a failure part-way leaves the earlier ones
applied; the error says which. Hunk lines are located exactly first, then more and more
loosely: ignoring trailing whitespace, then surrounding whitespace, then typographic
punctuation (curly quotes, dashes, odd spaces).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                        "\u202f\u205f\u3000", " "),
    }
)


class PatchError(Exception):
    """A patch that cannot be parsed or applied; the message says why, in one line.

    ``applied`` lists the operations that had already been carried out (and were kept)
    when a later one failed, or is ``None`` when nothing was changed.
    """

    def __init__(self, message: str, applied: PatchResult | None = None) -> None:
        super().__init__(message)
        self.applied = applied


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
class _Chunk:
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

    def without_trailing_blank(self) -> _Chunk | None:
        """This chunk minus a final blank old line, which a file may lack; else None."""
        for position in range(len(self.lines) - 1, -1, -1):
            marker, text = self.lines[position]
            if marker != "+":
                if text:
                    return None
                kept = self.lines[:position] + self.lines[position + 1:]
                return _Chunk(self.context, kept, self.at_eof)
        return None


@dataclass(frozen=True)
class _AddFile:
    path: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class _DeleteFile:
    path: str


@dataclass(frozen=True)
class _UpdateFile:
    path: str
    move_to: str | None
    chunks: tuple[_Chunk, ...]


_Operation = _AddFile | _DeleteFile | _UpdateFile


@dataclass(frozen=True)
class _Step:
    """A parsed operation with its paths resolved to the filesystem."""

    operation: _Operation
    target: Path
    destination: Path | None = None


@dataclass
class _Ledger:
    """What has been done so far, for the result and for partial-failure errors."""

    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def touched(self) -> bool:
        return bool(self.added or self.modified or self.deleted)

    def result(self) -> PatchResult:
        return PatchResult(list(self.added), list(self.modified), list(self.deleted))


def apply_patch(patch: str, resolve: Callable[[str], Path]) -> PatchResult:
    """Apply a V4A patch, mapping each path in it to the filesystem through ``resolve``.

    Raises PatchError for a malformed patch (before anything is written) or for an
    operation that cannot be carried out. Exceptions raised by ``resolve`` propagate
    unchanged, also before anything is written.
    """
    steps = [_resolve_step(operation, resolve) for operation in _parse(patch)]
    ledger = _Ledger()
    for step in steps:
        try:
            _run_step(step, ledger)
        except PatchError as error:
            if not ledger.touched():
                raise
            raise _partial_failure(error, ledger.result()) from error
    return ledger.result()


# --- parsing ------------------------------------------------------------------------


def _parse(patch: str) -> list[_Operation]:
    """Turn patch text into operations, or raise PatchError naming the bad line."""
    lines = [line.removesuffix("\r") for line in patch.strip().split("\n")]
    index, end = _body_bounds(lines)
    operations: list[_Operation] = []
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


def _parse_operation(lines: list[str], index: int, end: int) -> tuple[_Operation, int]:
    """Parse the file operation whose header is at ``lines[index]``."""
    header = lines[index].strip()
    if header.startswith(ADD_HEADER):
        return _parse_add(lines, index + 1, end, _header_path(header, ADD_HEADER, index))
    if header.startswith(DELETE_HEADER):
        return _DeleteFile(_header_path(header, DELETE_HEADER, index)), index + 1
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


def _parse_add(lines: list[str], index: int, end: int, path: str) -> tuple[_AddFile, int]:
    body: list[str] = []
    while index < end and lines[index].startswith("+"):
        body.append(lines[index][1:])
        index += 1
    return _AddFile(path, tuple(body)), index


def _parse_update(lines: list[str], index: int, end: int, path: str) -> tuple[_UpdateFile, int]:
    move_to = None
    if index < end and lines[index].strip().startswith(MOVE_HEADER):
        move_to = _header_path(lines[index].strip(), MOVE_HEADER, index)
        index += 1
    chunks: list[_Chunk] = []
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
    return _UpdateFile(path, move_to, tuple(chunks)), index


def _ends_update(line: str) -> bool:
    """Whether ``line`` closes an Update File section (the next operation begins)."""
    return line.startswith("***") or line.strip().startswith(_OPERATION_HEADERS)


def _parse_chunk(
    lines: list[str], index: int, end: int, path: str, *, first: bool
) -> tuple[_Chunk, int]:
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
    return _Chunk(context, tuple(body), at_eof), index


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


# --- applying -----------------------------------------------------------------------


def _resolve_step(operation: _Operation, resolve: Callable[[str], Path]) -> _Step:
    destination = None
    if isinstance(operation, _UpdateFile) and operation.move_to is not None:
        destination = resolve(operation.move_to)
    return _Step(operation, resolve(operation.path), destination)


def _run_step(step: _Step, ledger: _Ledger) -> None:
    operation = step.operation
    if isinstance(operation, _AddFile):
        _write(step.target, "".join(line + "\n" for line in operation.lines), operation.path)
        _append_once(ledger.added, operation.path)
    elif isinstance(operation, _DeleteFile):
        _delete(step.target, operation.path)
        _append_once(ledger.deleted, operation.path)
    else:
        _update(step, operation)
        _append_once(ledger.modified, operation.move_to or operation.path)


def _append_once(paths: list[str], path: str) -> None:
    if path not in paths:
        paths.append(path)


def _partial_failure(error: PatchError, done: PatchResult) -> PatchError:
    """Tell the reader which earlier operations were kept, since nothing is rolled back."""
    kept = done.summary().replace("\n", ", ")
    return PatchError(f"{error} (the operations before it were applied and kept: {kept})", done)


def _delete(target: Path, path: str) -> None:
    if target.is_dir() and not target.is_symlink():
        raise PatchError(f"cannot delete {path}: it is a directory, not a file")
    if not (target.exists() or target.is_symlink()):
        raise PatchError(f"cannot delete {path}: no such file")
    try:
        target.unlink()
    except OSError as error:
        raise PatchError(f"cannot delete {path}: {error.strerror or error}") from error


def _update(step: _Step, operation: _UpdateFile) -> None:
    original = _read(step.target, operation.path)
    updated = _updated_text(original, operation.chunks, operation.path)
    destination = step.destination or step.target
    _write(destination, updated, operation.move_to or operation.path)
    if destination != step.target:
        _delete(step.target, operation.path)


def _read(target: Path, path: str) -> str:
    if target.is_dir():
        raise PatchError(f"cannot update {path}: it is a directory, not a file")
    if not target.exists():
        raise PatchError(f"cannot update {path}: no such file (use '{ADD_HEADER}' to create it)")
    try:
        return target.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise PatchError(f"cannot update {path}: it is not UTF-8 text") from error
    except OSError as error:
        raise PatchError(f"cannot read {path}: {error.strerror or error}") from error


def _write(target: Path, text: str, path: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
    except OSError as error:
        raise PatchError(f"cannot write {path}: {error.strerror or error}") from error


# --- locating and replacing lines ---------------------------------------------------


def _updated_text(original: str, chunks: Sequence[_Chunk], path: str) -> str:
    """The file's new text: every chunk applied, CRLF kept, one final newline."""
    newline = "\r\n" if "\r\n" in original else "\n"
    lines = original.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    for start, length, replacement in reversed(_plan_edits(lines, chunks, path)):
        lines[start:start + length] = replacement
    return "".join(line + newline for line in lines)


def _plan_edits(
    lines: list[str], chunks: Sequence[_Chunk], path: str
) -> list[tuple[int, int, list[str]]]:
    """Where each chunk goes, as sorted ``(start, length, replacement)`` edits."""
    edits: list[tuple[int, int, list[str]]] = []
    cursor = 0
    for number, chunk in enumerate(chunks, 1):
        if chunk.context is not None:
            cursor = _find_context(lines, chunk.context, cursor, path, number) + 1
        if not chunk.old:
            # Codex appends pure additions at the end of the file; after an explicit
            # "@@ context" line, inserting right below it is what the author meant.
            at = cursor if chunk.context is not None else len(lines)
            edits.append((at, 0, chunk.new))
            continue
        start, found = _find_chunk(lines, chunk, cursor, path, number)
        length = len(found.old)
        edits.append((start, length, _replacement(lines[start:start + length], found)))
        cursor = start + length
    return sorted(edits, key=lambda edit: (edit[0], edit[1]))


def _find_context(lines: list[str], context: str, cursor: int, path: str, number: int) -> int:
    found = _seek(lines, [context], cursor, at_eof=False)
    if found is None:
        raise PatchError(
            f"{path}: hunk {number}: context line '@@ {_clip(context)}' was not found"
            f"{_after(cursor)}; read the file again and resend the patch"
        )
    return found


def _find_chunk(
    lines: list[str], chunk: _Chunk, cursor: int, path: str, number: int
) -> tuple[int, _Chunk]:
    """Locate a chunk's old lines; a trailing blank line may be absent from the file."""
    start = _seek(lines, chunk.old, cursor, chunk.at_eof)
    if start is not None:
        return start, chunk
    shorter = chunk.without_trailing_blank()
    if shorter is not None:
        start = _seek(lines, shorter.old, cursor, chunk.at_eof)
        if start is not None:
            return start, shorter
    raise PatchError(f"{path}: hunk {number}: {_mismatch(lines, chunk, cursor)}")


def _replacement(matched: list[str], chunk: _Chunk) -> list[str]:
    """The chunk's new lines, keeping the file's own text for context lines.

    Matching may be loose, so an unchanged line keeps its original whitespace and
    punctuation instead of taking the patch author's approximation of it.
    """
    original = iter(matched)
    result: list[str] = []
    for marker, text in chunk.lines:
        if marker == " ":
            result.append(next(original))
        elif marker == "-":
            next(original)
        else:
            result.append(text)
    return result


def _mismatch(lines: list[str], chunk: _Chunk, cursor: int) -> str:
    """Explain why a chunk's old lines could not be found, naming the first missing one."""
    retry = "read the file again and resend the patch"
    present = {_punctuation_free(line) for line in lines[cursor:]}  # the loosest match
    for line in chunk.old:
        if _punctuation_free(line) not in present:
            return f"line '{_clip(line)}' was not found{_after(cursor)}; {retry}"
    where = " at the end of the file" if chunk.at_eof else _after(cursor)
    return (
        f"the {len(chunk.old)} context/removed lines starting '{_clip(chunk.old[0])}' "
        f"do not appear together in this order{where}; {retry}"
    )


def _after(cursor: int) -> str:
    return f" after line {cursor} (hunks must follow file order)" if cursor else ""


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _seek(lines: list[str], pattern: list[str], start: int, at_eof: bool) -> int | None:
    """First index at or after ``start`` where ``pattern`` matches, loosest match last.

    With ``at_eof`` the pattern is tried against the end of the file first.
    """
    if not pattern:
        return start
    last = len(lines) - len(pattern)
    if at_eof and last >= start:
        found = _match(lines, pattern, range(last, last + 1))
        if found is not None:
            return found
    return _match(lines, pattern, range(start, last + 1))


def _match(lines: list[str], pattern: list[str], starts: range) -> int | None:
    for normalise in _NORMALISERS:
        have = [normalise(line) for line in lines]
        want = [normalise(line) for line in pattern]
        for index in starts:
            if have[index:index + len(want)] == want:
                return index
    return None


def _exact(line: str) -> str:
    return line


def _punctuation_free(line: str) -> str:
    return line.strip().translate(_PUNCTUATION)


_NORMALISERS: tuple[Callable[[str], str], ...] = (_exact, str.rstrip, str.strip, _punctuation_free)
