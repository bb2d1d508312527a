"""Session bundles: one file that carries a session, checkpoints included, to another machine.

`sessions export ID --bundle FILE` writes it and `sessions import FILE` makes the session
resumable under another `$RECURSIVE_HOME`. A bundle is a gzip-compressed tar:

    recursive-session/manifest.json        what it holds: format and version, the session's
                                           id and workspace, a size and sha256 per file
    recursive-session/session/...          the session folder: transcript.jsonl, meta.json,
                                           job logs, ... (never its lock)
    recursive-session/checkpoints.bundle   a `git bundle` of the session's refs in its
                                           workspace's shadow repository (absent without any)

Sessions never hold an API key; should the value of one (from the environment of the export)
appear in a session file anyway, because a prompt or a tool's output quoted it, the bundle
has `[redacted]` in its place. This module holds the format, the library API
(`export_bundle`, `import_bundle`) and the writing; bundle_import.py reads a bundle in, whole
or not at all.

Errors: BundleError (a SessionError) when the file is not a readable bundle; otherwise the
sessions and checkpoints errors, e.g. SessionExistsError, SessionInUseError.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict

from ...core.errors import CheckpointError
from ...core.settings import key_variables
from ..checkpoints.bundle_refs import bundle_session_refs
from ..checkpoints.git import require_git
from ..checkpoints.repo import shadow_folder, shadow_git
from ..sessions.lock import LOCK_FILE, acquire_lock
from ..sessions.meta import SessionMeta, fsync_dir, read_meta
from ..sessions.records import SessionError, SessionNotFoundError, SessionWriteError, now_iso
from ..sessions.store import SessionStore
from ..sessions.writer import TRANSCRIPT_FILE

FORMAT: Literal["recursive-session-bundle"] = "recursive-session-bundle"
VERSION = 1
ROOT = "recursive-session"
MANIFEST = f"{ROOT}/manifest.json"
SESSION_PREFIX = f"{ROOT}/session/"
CHECKPOINTS = f"{ROOT}/checkpoints.bundle"
REDACTED = b"[redacted]"
_MIN_SECRET = 8  # shorter values would redact ordinary words
MANIFEST_LIMIT = 4 << 20  # a manifest larger than this is no manifest of ours
CHUNK = 1 << 20

Warn = Callable[[str], None]


class BundleFile(BaseModel):
    """One file of the bundle: its size and sha256, checked on import."""

    size: int
    sha256: str


class BundleManifest(BaseModel):
    """`manifest.json`, the bundle's first member."""

    model_config = ConfigDict(extra="ignore")

    format: Literal["recursive-session-bundle"]
    version: int
    session_id: str
    workspace: str  # the session's workspace where it was exported
    folder: str = ""  # its session folder there (paths inside its saved state are rebased)
    created: str = ""
    files: dict[str, BundleFile]  # path inside the session folder → size and hash
    checkpoints: BundleFile | None = None
    refs: int = 0  # how many checkpoint refs checkpoints.bundle holds


@dataclass(frozen=True)
class ImportedSession:
    """What `unpack_bundle` made: the session, where it lives now, and its checkpoint refs."""

    session_id: str
    folder: Path
    workspace: Path
    refs: int
    replaced: bool
    dropped: list[str] = field(default_factory=list)  # what quarantine.py kept out, a line each
    exported_from: str = ""  # the workspace it had where it was exported


def export_bundle(home: Path, session_id: str, dest: Path, warn: Warn | None = None) -> None:
    """Write session `session_id` of `home` (an exact id) to the bundle file `dest`."""
    write_bundle(home, session_id, dest, warn)


def import_bundle(home: Path, src: Path, workspace: Path | None = None, force: bool = False,
                  warn: Warn | None = None, *, own: bool = False) -> str:
    """Import the bundle `src` into `home`; returns the session id. The session is bound to
    `workspace`, by default to the cwd (never the folder the bundle names); what would reach the network, run code or widen
    permissions is kept out (quarantine.py). An existing session with that id is refused
    (SessionExistsError) unless `force`. `own`: a bundle the user's own fleet made of its own
    task's session; its settings are kept."""
    from .bundle_import import unpack_bundle

    return unpack_bundle(home, src, workspace, force, warn, own=own).session_id


# -- export ------------------------------------------------------------------------------------


def write_bundle(home: Path, session_id: str, dest: Path, warn: Warn | None = None) -> BundleManifest:
    """`export_bundle`, returning the manifest written. The session's lock is held meanwhile,
    so a live run (SessionInUseError) or a resume cannot change it halfway."""
    store = SessionStore(home)
    folder = store.folder(session_id)
    if not store.exists(session_id):
        raise SessionNotFoundError(f"no session {session_id!r} (see `recursive sessions list`)")
    with acquire_lock(folder, session_id) as lock:
        if lock.warning and warn:
            warn(lock.warning)
        meta = read_meta(folder)
        if not (folder / TRANSCRIPT_FILE).is_file():
            raise SessionError(f"session {session_id} has no {TRANSCRIPT_FILE}: nothing to export")
        files = dict(_session_files(folder))
        redacted = _redact(files)
        if redacted and warn:
            warn(f"the files of session {session_id} held the value of {', '.join(redacted)}; "
                 f"the bundle has {REDACTED.decode()} in its place")
        with tempfile.TemporaryDirectory(prefix="recursive-bundle-") as temp:
            git_bundle = Path(temp) / "checkpoints.bundle"
            refs = _bundle_checkpoints(home, meta, git_bundle)
            manifest = BundleManifest(
                format=FORMAT, version=VERSION, session_id=session_id, workspace=meta.workspace,
                folder=str(folder), created=now_iso(),
                files={name: BundleFile(size=len(data), sha256=_sha256(data)) for name, data in files.items()},
                checkpoints=_file_entry(git_bundle) if refs else None, refs=refs)
            _write_tar(dest, manifest, files, git_bundle if refs else None)
    return manifest


def _session_files(folder: Path) -> Iterator[tuple[str, bytes]]:
    """(path inside the folder, content) of every regular file of the session but its lock and
    the temp files of an atomic write; symlinks are not followed."""
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        base = Path(root)
        for name in sorted(names):
            path = base / name
            relative = path.relative_to(folder).as_posix()
            if relative == LOCK_FILE or (name.startswith(".") and name.endswith(".tmp")) \
                    or not path.is_file() or path.is_symlink():
                continue
            try:
                yield relative, path.read_bytes()
            except OSError as exc:
                raise SessionError(f"cannot read {path}: {exc.strerror or exc}") from None


def _redact(files: dict[str, bytes]) -> list[str]:
    """Replace the values of the API key variables set now in the files; the names of those found."""
    names = dict.fromkeys([*key_variables("openai"), *key_variables("anthropic")])
    found = []
    for name in names:
        secret = os.environ.get(name, "").strip().encode()
        if len(secret) < _MIN_SECRET:
            continue
        hit = False
        for path, data in files.items():
            if secret in data:
                files[path], hit = data.replace(secret, REDACTED), True
        if hit:
            found.append(name)
    return found


def _bundle_checkpoints(home: Path, meta: SessionMeta, dest: Path) -> int:
    """Bundle the session's refs from its workspace's shadow repository; how many there are."""
    workspace = Path(meta.workspace)
    if not (shadow_folder(home, workspace) / "repo" / "HEAD").is_file():
        return 0
    try:
        return bundle_session_refs(shadow_git(require_git(), home, workspace), meta.id, dest)
    except CheckpointError as exc:
        raise SessionError(f"cannot bundle the checkpoints of session {meta.id}: {exc}") from None


def _write_tar(dest: Path, manifest: BundleManifest, files: dict[str, bytes],
               git_bundle: Path | None) -> None:
    """The tar.gz written beside `dest` and renamed over it, so `dest` is whole or untouched."""
    parent = dest.parent
    try:
        fd, temp = tempfile.mkstemp(dir=parent, prefix=f".{dest.name}.", suffix=".tmp")
    except OSError as exc:
        raise SessionWriteError(f"cannot write {dest}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
                _add(tar, MANIFEST, manifest.model_dump_json(indent=2).encode() + b"\n")
                for name, data in files.items():
                    _add(tar, SESSION_PREFIX + name, data)
                if git_bundle is not None:
                    with git_bundle.open("rb") as handle:
                        _add(tar, CHECKPOINTS, handle, git_bundle.stat().st_size)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(temp, dest)  # (mkstemp made it 0600: only its owner reads a session)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise SessionWriteError(f"cannot write {dest}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_dir(parent)


def _add(tar: tarfile.TarFile, name: str, data: bytes | BinaryIO, size: int = 0) -> None:
    """One regular file, owned by nobody in particular (no user or group names travel)."""
    info = tarfile.TarInfo(name)
    info.mode, info.mtime = 0o600, int(time.time())
    if isinstance(data, bytes):
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        info.size = size
        tar.addfile(info, data)


def _file_entry(path: Path) -> BundleFile:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return BundleFile(size=path.stat().st_size, sha256=digest.hexdigest())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
