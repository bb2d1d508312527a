"""The record of trusted folders: `$RECURSIVE_HOME/trust.json` (issue 29).

Each folder (its real path) with the time it was trusted and a sha256 of each of its own
config files (`WORKSPACE_FILES`). A later change to any of them, or one added, makes the
folder untrusted again until it is trusted anew; one removed takes nothing new in. The file
is replaced atomically, under a lock, and readable by you alone (0600). Read only for a
workspace that has config files of its own (`features.trust.check_trust`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ...core.errors import TrustStoreError
from ...core.workspace_trust import TrustVerdict, own_files

TRUST_FILE = "trust.json"


class TrustRecord(BaseModel):
    """One trusted folder: when, and the sha256 of each of its config files then."""

    trusted_at: str
    files: dict[str, str] = {}  # relative path → sha256


class TrustFile(BaseModel):
    """The whole of `trust.json`."""

    version: int = 1
    folders: dict[str, TrustRecord] = {}  # real path → record


def fingerprint(workspace: Path, home: Path) -> dict[str, str]:
    """The sha256 of each of the workspace's own config files that exists, by relative path."""
    found: dict[str, str] = {}
    for name in own_files(workspace, home):
        try:
            found[name] = hashlib.sha256((workspace / name).read_bytes()).hexdigest()
        except OSError as exc:  # (unreadable now: not what was trusted)
            found[name] = f"unreadable: {exc.strerror or exc}"
    return found


def changed_files(record: TrustRecord, now: Mapping[str, str]) -> list[str]:
    """The files that differ from the record, or were added since it was made."""
    return [name for name, digest in now.items() if record.files.get(name) != digest]


class TrustStore:
    """`$RECURSIVE_HOME/trust.json`: check, record and revoke a folder's trust."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / TRUST_FILE

    def read(self) -> TrustFile:
        """The records; empty when there is no file yet; TrustStoreError for a damaged one."""
        try:
            return TrustFile.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            return TrustFile()
        except OSError as exc:
            raise TrustStoreError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        except ValidationError as exc:
            raise TrustStoreError(f"{self.path} is damaged ({exc.errors()[0]['msg']}); "
                                  f"remove it and trust your folders again") from None

    def check(self, workspace: Path) -> TrustVerdict:
        """Whether `workspace`'s own configuration counts, as recorded (the `TrustCheck` of
        `load_settings`: a workspace with no config files of its own costs a few stats)."""
        workspace = workspace.resolve()
        now = fingerprint(workspace, self.home)
        files = tuple(now)
        if not now:
            return TrustVerdict(workspace, False, "it has no configuration of its own")
        try:
            record = self.read().folders.get(str(workspace))
        except TrustStoreError as exc:
            return TrustVerdict(workspace, False, str(exc), files)
        if record is None:
            return TrustVerdict(workspace, False, "this workspace is not trusted", files)
        changed = changed_files(record, now)
        if changed:
            return TrustVerdict(workspace, False, f"{', '.join(changed)} changed since you trusted it", files)
        return TrustVerdict(workspace, True, f"trusted {record.trusted_at}", files)

    def trust(self, workspace: Path) -> TrustRecord:
        """Record `workspace` as trusted with its config files as they are now."""
        stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        record = TrustRecord(trusted_at=stamp, files=fingerprint(workspace.resolve(), self.home))
        with self._locked():
            data = self.read()
            data.folders[str(workspace.resolve())] = record
            self._write(data)
        return record

    def revoke(self, folder: str) -> str | None:
        """Forget `folder` (the path as recorded, or one that resolves to it); the path it
        was recorded as, None if it was not."""
        with self._locked():
            data = self.read()
            key = next((key for key in (folder, str(Path(folder).expanduser().resolve()))
                        if key in data.folders), None)
            if key is not None:
                del data.folders[key]
                self._write(data)
        return key

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold `trust.json.lock` while a change is read, made and written (two `recursive
        trust` at once must not lose one's record)."""
        import fcntl

        try:
            self.home.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.home / (TRUST_FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise TrustStoreError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, data: TrustFile) -> None:
        """Replace the file atomically: a temporary file (0600), fsync, rename."""
        import tempfile

        try:
            fd, temp = tempfile.mkstemp(dir=self.home, prefix=".trust.", suffix=".tmp")
        except OSError as exc:
            raise TrustStoreError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data.model_dump_json(indent=2) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise TrustStoreError(f"cannot write {self.path}: {exc.strerror or exc}") from None
