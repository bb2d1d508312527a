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

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .patch_format import (
    ADD_HEADER,
    AddFile,
    DeleteFile,
    Operation,
    PatchError,
    PatchResult,
    UpdateFile,
    parse_patch,
)
from .patch_match import updated_text

__all__ = ["PatchError", "PatchResult", "apply_patch"]


@dataclass(frozen=True)
class _Step:
    """A parsed operation with its paths resolved to the filesystem."""

    operation: Operation
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
    steps = [_resolve_step(operation, resolve) for operation in parse_patch(patch)]
    ledger = _Ledger()
    for step in steps:
        try:
            _run_step(step, ledger)
        except PatchError as error:
            if not ledger.touched():
                raise
            raise _partial_failure(error, ledger.result()) from error
    return ledger.result()



def _resolve_step(operation: Operation, resolve: Callable[[str], Path]) -> _Step:
    destination = None
    if isinstance(operation, UpdateFile) and operation.move_to is not None:
        destination = resolve(operation.move_to)
    return _Step(operation, resolve(operation.path), destination)


def _run_step(step: _Step, ledger: _Ledger) -> None:
    operation = step.operation
    if isinstance(operation, AddFile):
        _write(step.target, "".join(line + "\n" for line in operation.lines), operation.path)
        _append_once(ledger.added, operation.path)
    elif isinstance(operation, DeleteFile):
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


def _update(step: _Step, operation: UpdateFile) -> None:
    original = _read(step.target, operation.path)
    updated = updated_text(original, operation.chunks, operation.path)
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

