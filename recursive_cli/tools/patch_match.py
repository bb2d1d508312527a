"""Finding a patch's hunks in a file, exactly first and then more loosely, and rewriting it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .patch_format import Chunk, PatchError

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                        "\u202f\u205f\u3000", " "),
    }
)


def updated_text(original: str, chunks: Sequence[Chunk], path: str) -> str:
    """The file's new text: every chunk applied, CRLF kept, one final newline."""
    newline = "\r\n" if "\r\n" in original else "\n"
    lines = original.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    for start, length, replacement in reversed(_plan_edits(lines, chunks, path)):
        lines[start:start + length] = replacement
    return "".join(line + newline for line in lines)


def _plan_edits(
    lines: list[str], chunks: Sequence[Chunk], path: str
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
    lines: list[str], chunk: Chunk, cursor: int, path: str, number: int
) -> tuple[int, Chunk]:
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


def _replacement(matched: list[str], chunk: Chunk) -> list[str]:
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


def _mismatch(lines: list[str], chunk: Chunk, cursor: int) -> str:
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

