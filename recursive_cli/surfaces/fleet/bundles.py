"""Session bundles as bytes, for a task's session to travel between a worker and the driver.

The format is the one of `recursive sessions export ID --bundle FILE` (features/sessions/
bundle.py): transcript, meta, job logs and checkpoints in one file. That export holds the
session's lock, so it cannot read a session a live CLI is writing; a bundle of a live session
is therefore made from a snapshot: the session's files copied into a scratch home (meta.json
first, transcript.jsonl last, so the copy is never ahead of itself in the way a `kill -9` can
leave it: a meta behind its transcript, a torn last line — both of which resume repairs),
beside a link to the real checkpoint stores, which the export only reads.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_LAST = ("transcript.jsonl",)
_FIRST = ("meta.json",)
_SKIPPED = ("lock",)


def export_bytes(home: Path, session_id: str, live: bool = False) -> bytes | None:
    """The bundle of session `session_id` in `home`, or None when there is no such session yet.
    `live`: a CLI may be writing the session (see the module's docstring)."""
    from ...features.bundles.bundle import export_bundle

    folder = home / "sessions" / session_id
    if not (folder / "transcript.jsonl").is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="recursive-bundle-") as scratch:
        dest = Path(scratch) / f"{session_id}.bundle"
        source_home = _snapshot(home, folder, Path(scratch) / "home") if live else home
        export_bundle(source_home, session_id, dest)
        return dest.read_bytes()


def import_bytes(home: Path, data: bytes, workspace: Path) -> str:
    """Make the bundle `data` a resumable session in `home`, working in `workspace`; its id."""
    from ...features.bundles.bundle import import_bundle

    with tempfile.TemporaryDirectory(prefix="recursive-bundle-") as scratch:
        src = Path(scratch) / "session.bundle"
        src.write_bytes(data)
        return import_bundle(home, src, workspace=workspace, force=True, own=True)  # (this fleet's own bundle)


def _snapshot(home: Path, folder: Path, scratch_home: Path) -> Path:
    """A home holding a copy of the session `folder` and a link to `home`'s checkpoints."""
    copy = scratch_home / "sessions" / folder.name
    copy.mkdir(parents=True)
    checkpoints = home / "checkpoints"
    if checkpoints.is_dir():
        os.symlink(checkpoints, scratch_home / "checkpoints", target_is_directory=True)
    files = [path for path in folder.rglob("*") if path.is_file() and path.name not in _SKIPPED]
    files.sort(key=lambda path: (path.name not in _FIRST, path.name in _LAST, str(path)))
    for path in files:
        target = copy / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(path, target)
        except FileNotFoundError:  # a temp file of an atomic write, renamed meanwhile
            continue
    return scratch_home
