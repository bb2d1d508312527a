"""The folders whose own configuration you trust: `$RECURSIVE_HOME/trust.json` (issue 29).

`recursive trust DIR` records the folder (its real path) with a sha256 of each of its own
config files (`WORKSPACE_FILES`: the hook settings files, `.mcp.json`, `.recursive/config.toml`).
A later change to any of them, or one added, makes the folder untrusted again until it is
trusted anew; one removed takes nothing new in. The file is replaced atomically, under a lock,
and readable by you alone (0600).

What a workspace's own configuration would do — its hooks, its MCP servers, the config keys
that loosen yours — is gathered by `workspace_offer`: `recursive trust` shows it before
recording, and a run that leaves it out names each part on stderr (`run_notes`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from ..core.errors import ConfigError
from ..core.settings import LoadedSettings
from ..core.slotted import Slotted
from ..core.workspace_trust import WORKSPACE_FILES, HeldKey, TrustVerdict

if TYPE_CHECKING:
    from .hooks.config import HookCommand
    from .mcp.config import ServerEntry

TRUST_FILE = "trust.json"
ALL_PARTS = frozenset({"hooks", "mcp", "config"})  # what a workspace's configuration is made of


class TrustStoreError(ConfigError):
    """`trust.json` cannot be read or written: names the file and why."""


class TrustRecord(BaseModel):
    """One trusted folder: when, and the sha256 of each of its config files then."""

    trusted_at: str
    files: dict[str, str] = {}  # relative path → sha256


class TrustFile(BaseModel):
    """The whole of `trust.json`."""

    version: int = 1
    folders: dict[str, TrustRecord] = {}  # real path → record


def fingerprint(workspace: Path) -> dict[str, str]:
    """The sha256 of each of the workspace's own config files that exists, by relative path."""
    found: dict[str, str] = {}
    for name in WORKSPACE_FILES:
        path = workspace / name
        if path.is_file():
            try:
                found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
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
        now = fingerprint(workspace)
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
        record = TrustRecord(trusted_at=stamp, files=fingerprint(workspace.resolve()))
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


def check_trust(workspace: Path, home: Path) -> TrustVerdict:
    """The recorded trust of `workspace` (`load_settings`'s `TrustCheck`)."""
    return TrustStore(home).check(workspace)


def verdict_for(loaded: LoadedSettings, workspace: Path) -> TrustVerdict:
    """Whether `workspace`'s own hooks and servers count for a run with these settings: the
    verdict made while they were loaded when it is that folder (a resumed session's may be
    another), else the same rules: never with `--bare`, always with `--trust-workspace`."""
    workspace = workspace.resolve()
    if loaded.trust is not None and loaded.trust.workspace == workspace:
        return loaded.trust
    settings = loaded.settings
    if settings.bare:
        return TrustVerdict(workspace, False, "--bare", quiet=True)
    if settings.trust_workspace:
        source = loaded.sources.get("trust_workspace", "flag")
        return TrustVerdict(workspace, True, "--trust-workspace" if source == "flag" else source)
    return check_trust(workspace, loaded.home)


class WorkspaceOffer(Slotted):
    """What a workspace's own configuration would do: the hooks it would run, the MCP servers
    it would start, the config keys that loosen yours, and the files that cannot be used."""

    __slots__ = ("workspace", "hooks", "servers", "keys", "problems")
    workspace: Path
    hooks: list[HookCommand]
    servers: list[ServerEntry]
    keys: list[HeldKey]
    problems: list[str]

    def __init__(self, workspace: Path, hooks: list[HookCommand], servers: list[ServerEntry],
                 keys: list[HeldKey], problems: list[str]) -> None:
        self.workspace = workspace
        self.hooks = hooks
        self.servers = servers
        self.keys = keys
        self.problems = problems

    def __bool__(self) -> bool:
        return bool(self.hooks or self.servers or self.keys or self.problems)

    def lines(self, parts: frozenset[str] = ALL_PARTS) -> list[str]:
        """One line per hook, server, key and unusable file (of `parts` only), as `trust` shows them."""
        lines = [_hook_line(hook, self.workspace) for hook in self.hooks] if "hooks" in parts else []
        lines += [_server_line(entry) for entry in self.servers] if "mcp" in parts else []
        lines += [f"config {key.key} = {key.value} ({_short(key.where, self.workspace)})"
                  for key in self.keys] if "config" in parts else []
        return lines + [_short(problem, self.workspace) for problem in self.problems]


def workspace_offer(workspace: Path, env: Mapping[str, str], keys: list[HeldKey],
                    parts: frozenset[str] = ALL_PARTS) -> WorkspaceOffer:
    """What `workspace`'s own files would do (`keys`: its loosening config keys, as
    `load_settings` held them); its hook and MCP files read only for `parts`, never run."""
    workspace = workspace.resolve()
    hooks: list[HookCommand] = []
    servers: list[ServerEntry] = []
    problems: list[str] = []
    if "hooks" in parts:
        from .hooks.config import workspace_hooks

        hooks, problems = workspace_hooks(workspace)
    if "mcp" in parts and (workspace / ".mcp.json").is_file():
        from .mcp.config import McpConfigError, project_servers

        try:
            servers = list(project_servers(workspace, env).servers.values())
        except McpConfigError as exc:
            problems.append(str(exc))
    return WorkspaceOffer(workspace, hooks, servers, keys, problems)


def run_notes(loaded: LoadedSettings, parts: frozenset[str] = ALL_PARTS) -> list[str]:
    """A stderr line for each part of an untrusted workspace's configuration (of `parts`) a
    run leaves out, saying what, why and how to trust it; none when nothing is left out."""
    verdict = verdict_for(loaded, loaded.settings.workspace.expanduser())
    if not verdict.skips:
        return []
    same = loaded.trust is not None and loaded.trust.workspace == verdict.workspace
    keys = loaded.held if same and "config" in parts else []
    offer = workspace_offer(verdict.workspace, loaded.env, keys, parts)
    how = f"`recursive trust {folder_hint(verdict.workspace)}` trusts it, `--trust-workspace` for one run"
    return [f"note: skipped the workspace's {line}: {verdict.reason}; {how}" for line in offer.lines(parts)]


def folder_hint(workspace: Path) -> str:
    """How to name `workspace` on a command line: `.` for the current folder."""
    import shlex

    return "." if workspace == Path.cwd().resolve() else shlex.quote(str(workspace))


def _hook_line(hook: HookCommand, workspace: Path) -> str:
    return f"hook {hook.event} [{hook.matcher or '*'}] {hook.command!r} ({_short(hook.source, workspace)})"


def _server_line(entry: ServerEntry) -> str:
    import shlex

    from .mcp.config import as_written

    view = as_written(entry)
    if view["transport"] == "stdio":
        what = shlex.join([str(view.get("command", "")), *map(str, view.get("args", []))])
    else:
        what = f"{view['transport']} {view.get('url', '')}"
    return f"MCP server {entry.name} {what!r} (.mcp.json)"


def _short(text: str, workspace: Path) -> str:
    """`text` with the workspace's path taken off the files it names."""
    return text.replace(str(workspace) + os.sep, "")
