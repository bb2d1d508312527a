"""Reading a session bundle (bundle.py describes the format) into this `$RECURSIVE_HOME`.

The bundle is unpacked in a temporary folder beside the sessions and checked against its
manifest (every file's size and sha256, no path that could leave the session folder), then
rebound to its new workspace (meta.json, the transcript's header, saved paths into the old
session folder). Its checkpoint objects go into the workspace's shadow repository without
touching a ref; the folder is renamed into place (an existing session, with --force, moved
aside first) and the session's refs are then set in one transaction. Should that fail, the
folder is taken out again and the replaced session put back: nothing is left half-imported.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import json
import lzma
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from pydantic import ValidationError

from ...core.errors import BundleError, CheckpointError
from ..checkpoints.bundle_refs import delete_session_refs, install_session_refs, unbundle_session_refs
from ..checkpoints.git import ShadowGit, find_git, require_git
from ..checkpoints.repo import ensure_repo, shadow_folder, shadow_git
from ..sessions.ids import check_session_id
from ..sessions.lock import LOCK_FILE, SessionLock, acquire_lock
from ..sessions.meta import META_FILE, SessionMeta, fsync_dir, read_meta, write_meta
from ..sessions.quarantine import quarantine
from ..sessions.records import (
    SessionError,
    SessionExistsError,
    SessionHeader,
    SessionSchemaError,
    SessionWriteError,
    dump_record,
)
from ..sessions.store import SessionStore
from ..sessions.writer import TRANSCRIPT_FILE
from .bundle import (
    CHECKPOINTS,
    CHUNK,
    FORMAT,
    MANIFEST,
    MANIFEST_LIMIT,
    SESSION_PREFIX,
    VERSION,
    BundleFile,
    BundleManifest,
    ImportedSession,
    Warn,
)

ROOM_KEPT = 16 << 20  # bytes left free on the disk after an import, at least


def unpack_bundle(home: Path, src: Path, workspace: Path | None = None, force: bool = False,
                  warn: Warn | None = None, *, own: bool = False) -> ImportedSession:
    """`import_bundle`, returning what was imported. `own`: a bundle this user's own fleet
    made of its own task's session (surfaces/fleet), whose settings are kept; any other
    bundle is someone else's data (quarantine.py)."""
    store = SessionStore(home)
    temp: Path | None = None
    try:
        with _reading(src) as tar:
            members = iter(tar)
            manifest = _read_manifest(src, tar, next(members, None))
            session_id = manifest.session_id
            if store.exists(session_id) and not force:
                raise SessionExistsError(_exists_message(store, session_id))
            place = _workspace(workspace)
            temp = _temp_folder(store)
            _extract(src, tar, members, manifest, temp)
        final = store.root / session_id
        dropped = _rebind(src, temp / "session", manifest, place, final, own)
        git, refs = _checkpoints(src, home, place, manifest, temp / "checkpoints.bundle")
        with _Placement(store, session_id, temp, force) as placement:
            if git is not None:
                try:
                    install_session_refs(git, session_id, refs)
                except CheckpointError as exc:
                    placement.undo()
                    raise SessionError(f"cannot import the checkpoints of session {session_id}: {exc}") from None
            if placement.old_workspace and Path(placement.old_workspace) != place:
                _forget_refs(home, Path(placement.old_workspace), session_id)
        return ImportedSession(session_id, final, place, len(refs), placement.replaced, dropped,
                               manifest.workspace)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


_CORRUPT = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, lzma.LZMAError)


@contextlib.contextmanager
def _reading(src: Path) -> Iterator[tarfile.TarFile]:
    """The bundle opened as a tar; its read errors become BundleError."""
    try:
        tar = tarfile.open(src, mode="r:*")
    except FileNotFoundError:
        raise BundleError(f"{src} does not exist") from None
    except IsADirectoryError:
        raise BundleError(f"{src} is a folder, not a session bundle") from None
    except _CORRUPT:
        raise BundleError(f"{src} is not a session bundle (not a tar archive)") from None
    except OSError as exc:
        raise BundleError(f"cannot read {src}: {exc.strerror or exc}") from None
    try:
        with tar:
            yield tar
    except _CORRUPT:
        raise BundleError(f"{src} is not a whole session bundle: it is truncated or corrupt") from None
    except OSError as exc:  # (our own writes raise SessionWriteError: this is the bundle's read)
        reason = exc.strerror or "it is truncated or corrupt"
        raise BundleError(f"cannot read {src}: {reason}") from None


def _read_manifest(src: Path, tar: tarfile.TarFile, first: tarfile.TarInfo | None) -> BundleManifest:
    """The manifest, which must be the bundle's first member."""
    name = MANIFEST.rsplit("/", 1)[1]
    handle = tar.extractfile(first) if first is not None and first.name == MANIFEST \
        and first.isfile() and first.size <= MANIFEST_LIMIT else None
    if handle is None:
        raise BundleError(f"{src} is not a session bundle (it has no {name})")
    try:
        raw = json.loads(handle.read())
    except ValueError:
        raise BundleError(f"{src} is not a session bundle (its {name} is not JSON)") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise BundleError(f"{src} is not a session bundle (its {name} is not one of {FORMAT})")
    version = raw.get("version")
    if isinstance(version, int) and version > VERSION:
        raise BundleError(f"{src} was written by a newer version of recursive (bundle version "
                          f"{version}); upgrade to import it")
    try:
        manifest = BundleManifest.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise BundleError(f"{src} has an invalid {name}: {where}: {error['msg']}") from None
    problem = check_session_id(manifest.session_id)
    if problem:
        raise BundleError(f"{src} names a session that cannot be imported: {problem}")
    return manifest


def _exists_message(store: SessionStore, session_id: str) -> str:
    return (f"session {session_id} already exists ({store.root / session_id}); "
            "import with --force to replace it")


def _workspace(chosen: Path | None) -> Path:
    """The workspace the session is bound to: `chosen`, else the folder the user is in. Never
    the folder the manifest names: a bundle does not choose which of the importer's folders
    its agent works in."""
    if chosen is not None:
        path = chosen.expanduser()
        if not path.is_dir():
            raise SessionError(f"workspace {chosen} is not a folder")
        return path.resolve()
    try:
        return Path.cwd().resolve()
    except OSError as exc:
        raise SessionError(f"the current folder is gone ({exc.strerror}); name the session's workspace "
                           "with --workspace") from None


def _temp_folder(store: SessionStore) -> Path:
    """A folder beside the sessions (so the session is renamed into place, never copied); its
    name is no session's, and what it holds sits one level down, out of `sessions list`."""
    try:
        store.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return Path(tempfile.mkdtemp(dir=store.root, prefix=".import-"))
    except OSError as exc:
        raise SessionWriteError(f"cannot write to {store.root}: {exc.strerror or exc}") from None


def _extract(src: Path, tar: tarfile.TarFile, members: Iterator[tarfile.TarInfo],
             manifest: BundleManifest, temp: Path) -> None:
    """Unpack the session folder into `temp/session` and the checkpoints into
    `temp/checkpoints.bundle`, checking each file against the manifest."""
    _check_room(src, manifest, temp)
    staged = temp / "session"
    _mkdir(staged)
    found: dict[str, BundleFile] = {}
    checkpoints: BundleFile | None = None
    for member in members:
        if member.name == CHECKPOINTS:
            key, target = CHECKPOINTS, temp / "checkpoints.bundle"
        elif member.name.startswith(SESSION_PREFIX):
            key = _safe_path(src, member.name[len(SESSION_PREFIX):])
            target = staged / key
        else:
            continue  # something a later version adds: not needed to resume
        if key in found or (key == CHECKPOINTS and checkpoints is not None):
            raise BundleError(f"{src} is damaged: it holds {member.name} twice")
        if member.isdir():
            _mkdir(target)
            continue
        handle = tar.extractfile(member) if member.isfile() else None
        if handle is None:
            raise BundleError(f"{src} holds {member.name}, which is not a regular file")
        expected = manifest.checkpoints if key == CHECKPOINTS else manifest.files.get(key)
        if expected is None or member.size != expected.size:
            what = "its checkpoints" if key == CHECKPOINTS else f"session file {key}"
            raise BundleError(f"{src} is damaged: {what} "
                              + ("is not in its manifest" if expected is None else "differs from its manifest"))
        entry = _copy(handle, target, expected.size)
        if key == CHECKPOINTS:
            checkpoints = entry
        else:
            found[key] = entry
    for key in sorted(set(found) | set(manifest.files)):
        if found.get(key) != manifest.files.get(key):
            state = "is missing" if key not in found else (
                "is not in its manifest" if key not in manifest.files else "differs from its manifest")
            raise BundleError(f"{src} is damaged: session file {key} {state}")
    if checkpoints != manifest.checkpoints:
        raise BundleError(f"{src} is damaged: its checkpoints "
                          + ("are missing" if checkpoints is None else "differ from its manifest"))
    for needed in (META_FILE, TRANSCRIPT_FILE):
        if needed not in found:
            raise BundleError(f"{src} holds no {needed} for session {manifest.session_id}")


def _check_room(src: Path, manifest: BundleManifest, temp: Path) -> None:
    """Refuse a bundle whose files would not fit on the disk, before writing any of them."""
    needed = sum(entry.size for entry in manifest.files.values())
    needed += manifest.checkpoints.size if manifest.checkpoints else 0
    try:
        free = shutil.disk_usage(temp).free
    except OSError:
        return
    if needed + ROOM_KEPT > free:
        raise SessionWriteError(f"cannot import {src}: its files take {_size(needed)} and {temp.parent} has "
                                f"{_size(free)} free")


def _size(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB" if count >= 1 << 20 else f"{count} bytes"


def _safe_path(src: Path, relative: str) -> str:
    """A member's path inside the session folder, refused when it could leave the folder."""
    path = PurePosixPath(relative)
    if not relative or path.is_absolute() or any(part in ("..", ".") for part in relative.split("/")) \
            or path.as_posix() == LOCK_FILE:
        raise BundleError(f"{src} holds a file the session folder cannot take: {relative!r}")
    return path.as_posix()


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise SessionWriteError(f"cannot create {path}: {exc.strerror or exc}") from None


def _copy(source: IO[bytes], target: Path, limit: int) -> BundleFile:
    """Copy a member to a new file, returning its size and hash (read errors propagate); no
    more than `limit` bytes (its manifest's size) are written: one more is a damaged bundle."""
    _mkdir(target.parent)
    digest, size = hashlib.sha256(), 0
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise SessionWriteError(f"cannot create {target}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            if size > limit:
                break
            _write(out, chunk, target)
        _write(out, b"", target)  # (flushed here: a failure to write is ours, not the bundle's)
    return BundleFile(size=size, sha256=digest.hexdigest())


def _write(out: IO[bytes], chunk: bytes, target: Path) -> None:
    try:
        out.write(chunk)
        if not chunk:
            out.flush()
    except OSError as exc:
        raise SessionWriteError(f"cannot write {target}: {exc.strerror or exc}") from None


def _rebind(src: Path, folder: Path, manifest: BundleManifest, workspace: Path, final: Path,
            own: bool) -> list[str]:
    """Point the unpacked session at its new workspace (meta.json and the transcript's header)
    and its saved state's paths at its new folder; keep out what would run or reach the
    network (quarantine.py). Returns what was kept out, a line each."""
    try:
        meta = read_meta(folder)
    except SessionSchemaError:
        raise
    except SessionError as exc:
        raise BundleError(f"{src} holds no valid {META_FILE}: {exc}") from None
    if meta.id != manifest.session_id:
        raise BundleError(f"{src} is damaged: its {META_FILE} is session {meta.id}'s, "
                          f"not {manifest.session_id}'s")
    meta.workspace = str(workspace)
    if manifest.folder:
        meta.state = _rebased(meta.state, manifest.folder.rstrip("/") + "/", str(final) + "/")
    dropped = [] if own else quarantine(meta, str(src), final)
    try:
        write_meta(folder, meta)
        _rewrite_header(src, folder / TRANSCRIPT_FILE, meta)
    except OSError as exc:
        raise SessionWriteError(f"cannot write the imported session: {exc.strerror or exc}") from None
    return dropped


def _rebased(value: Any, old: str, new: str) -> Any:
    """`value` (saved state) with each string that is a path inside `old` moved inside `new`."""
    if isinstance(value, str):
        return new + value[len(old):] if value.startswith(old) else value
    if isinstance(value, list):
        return [_rebased(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _rebased(item, old, new) for key, item in value.items()}
    return value


def _rewrite_header(src: Path, path: Path, meta: SessionMeta) -> None:
    """The transcript with its `session` header naming the new workspace; the rest verbatim."""
    data = path.read_bytes()
    first, newline, rest = data.partition(b"\n")
    try:
        header = json.loads(first) if first.strip() else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("type") != "session":
        return  # no header (a crash before it): the reader rebuilds from meta.json
    if header.get("id") != meta.id:
        raise BundleError(f"{src} is damaged: its {TRANSCRIPT_FILE} is session {header.get('id')}'s")
    line = dump_record(SessionHeader(id=meta.id, created=str(header.get("created") or meta.created),
                                     workspace=meta.workspace))
    path.write_bytes(line + rest if newline else line)


def _checkpoints(src: Path, home: Path, workspace: Path, manifest: BundleManifest,
                 bundle: Path) -> tuple[ShadowGit | None, dict[str, str]]:
    """Store the bundle's checkpoint objects in the workspace's shadow repository; the refs to
    set. With no checkpoints, the repository (if any) is still returned, so that refs left
    there by an earlier session of that id are dropped."""
    try:
        if manifest.checkpoints is None:
            exists = (shadow_folder(home, workspace) / "repo" / "HEAD").is_file()
            executable = find_git()
            return (shadow_git(executable, home, workspace) if exists and executable else None), {}
        git = shadow_git(require_git(), home, workspace)
        ensure_repo(git, home)
        return git, unbundle_session_refs(git, bundle, manifest.session_id)
    except CheckpointError as exc:
        raise BundleError(f"cannot import the checkpoints of {src}: {exc}") from None


def _forget_refs(home: Path, workspace: Path, session_id: str) -> None:
    """Drop the refs a replaced session had in another workspace's shadow repository (best effort)."""
    executable = find_git()
    if executable is None or not (shadow_folder(home, workspace) / "repo" / "HEAD").is_file():
        return
    with contextlib.suppress(CheckpointError, OSError):
        delete_session_refs(shadow_git(executable, home, workspace), session_id)


class _Placement:
    """The unpacked session renamed into place, an existing one (with --force) moved aside
    first; `undo` puts things back as they were. The replaced session's lock is held throughout."""

    def __init__(self, store: SessionStore, session_id: str, temp: Path, force: bool) -> None:
        self.target = store.root / session_id
        self.staged = temp / "session"
        self.aside = temp / "replaced"
        self.store, self.session_id, self.force = store, session_id, force
        self.lock: SessionLock | None = None
        self.replaced = False
        self.old_workspace: str | None = None

    def __enter__(self) -> _Placement:
        if self.target.exists() or self.target.is_symlink():
            if not self.force:
                raise SessionExistsError(_exists_message(self.store, self.session_id))
            self.lock = acquire_lock(self.target, self.session_id)  # refused while a run holds it
        try:
            self._place()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _place(self) -> None:
        if self.lock is not None:
            with contextlib.suppress(SessionError):
                self.old_workspace = read_meta(self.target).workspace
            self._rename(self.target, self.aside)
            self.replaced = True
        try:
            self._rename(self.staged, self.target)
        except SessionError:
            self._put_back()
            raise
        fsync_dir(self.store.root)

    def __exit__(self, *exc_info: object) -> None:
        if self.lock is not None:
            self.lock.release()  # (a no-op unless `undo` brought the replaced session back)

    def undo(self) -> None:
        """Take the imported session out again and bring back the one it replaced."""
        with contextlib.suppress(OSError):
            os.rename(self.target, self.staged)
        self._put_back()

    def _put_back(self) -> None:
        if self.replaced:
            with contextlib.suppress(OSError):
                os.rename(self.aside, self.target)
            self.replaced = False

    def _rename(self, old: Path, new: Path) -> None:
        try:
            os.rename(old, new)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise SessionExistsError(_exists_message(self.store, self.session_id)) from None
            raise SessionWriteError(f"cannot move {old} to {new}: {exc.strerror or exc}") from None
