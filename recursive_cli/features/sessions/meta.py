"""`meta.json`: a session's settings, status and totals, rewritten atomically after every turn."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from ...core.messages import Usage
from ...core.values import as_json, dumps, parse
from .records import SCHEMA_VERSION, SessionReadError, SessionSchemaError, now_iso

META_FILE = "meta.json"
TITLE_LIMIT = 80

SessionStatus = Literal["running", "completed", "interrupted", "failed"]
SessionMode = Literal["run", "loop", "goal"]


@dataclass(slots=True, kw_only=True)
class SessionBudgets:
    """The limits the session was started with (None: no limit)."""

    max_cost: float | None = None
    max_steps: int | None = None
    max_duration: float | None = None


@dataclass(slots=True, kw_only=True)
class ImportRecord:
    """Where an imported session came from, and what `sessions import` kept out of it
    (features/sessions/quarantine.py): `resume` takes those settings from the importer."""

    source: str = ""  # the bundle file, as given
    at: str = ""
    dropped: list[str] = field(default_factory=list)  # one line per setting taken out


@dataclass(slots=True, kw_only=True)
class SessionMeta:
    """Everything about a session except its conversation."""

    schema_version: int = SCHEMA_VERSION
    id: str
    workspace: str
    mode: SessionMode = "run"
    model: str = ""
    provider: str = ""
    api_base: str | None = None
    script: str | None = None
    status: SessionStatus = "running"
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    turns: int = 0
    messages: int = 0
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    budgets: SessionBudgets = field(default_factory=SessionBudgets)
    permission_mode: str = "auto"
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    sandbox: str | None = None  # --sandbox as given (None: by the permission mode)
    sandbox_network: bool = False
    sandbox_allow_ports: list[int] = field(default_factory=list)
    effort: str | None = None  # --effort and --thinking-budget, kept so a resumed turn thinks alike
    thinking_budget: int | None = None
    title: str = ""
    finish_reason: str | None = None
    exit_code: int | None = None  # the last command's on this session (None while one runs)
    state: dict[str, Any] = field(default_factory=dict)
    imported: ImportRecord | None = None  # set by `sessions import`


class FirstPrompt:
    """The run's part of the session state: the prompt of a run that has not started turn 1
    yet, so that a run killed before it still owes (and on resume runs) that prompt: the
    text alone, as `state.first_prompt`."""

    key: ClassVar[str] = "first_prompt"


def make_title(prompt: str) -> str:
    """The first non-blank line of a prompt, cut to 80 characters."""
    line = next((part.strip() for part in prompt.splitlines() if part.strip()), "")
    return line if len(line) <= TITLE_LIMIT else line[: TITLE_LIMIT - 1] + "…"


def write_meta(folder: Path, meta: SessionMeta, durable: bool = True) -> None:
    """Replace `folder/meta.json` atomically: a reader sees the old file or the new one, never
    half; without `durable`, a power cut may still bring the old one back (see write_atomic)."""
    try:
        data = dumps(meta, indent=2).encode()
    except ValueError:  # a lone surrogate (a path or prompt that was not UTF-8): JSON-escape it
        data = json.dumps(as_json(meta), indent=2).encode()
    write_atomic(folder / META_FILE, data + b"\n", durable)


def read_meta(folder: Path) -> SessionMeta:
    """The session's meta.json; SessionReadError when missing or invalid, SessionSchemaError when newer."""
    path = folder / META_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionReadError(f"session {folder.name} has no {META_FILE} ({path})") from None
    except OSError as exc:
        raise SessionReadError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        raw = json.loads(data)
        _check_schema(raw, folder.name)
        return parse(SessionMeta, raw)
    except ValueError as exc:
        errors = getattr(exc, "errors", None)  # pydantic's ValidationError says what is wrong
        reason = errors()[0]["msg"] if callable(errors) else str(exc)
        raise SessionReadError(f"{path} is not valid session metadata: {reason}") from None


def _check_schema(raw: Any, fallback_id: str) -> None:
    """Refuse metadata from a newer schema before validating fields this version may not know."""
    if not isinstance(raw, dict):
        return
    version = raw.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise SessionSchemaError(newer_schema_message(str(raw.get("id") or fallback_id), version))


def newer_schema_message(session_id: str, version: int) -> str:
    return (f"session {session_id} was written by a newer version of recursive "
            f"(schema {version}); upgrade to resume it")


def write_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Write `data` to a temp file beside `path`, fsync it, then rename it over `path`; with
    `durable`, fsync the folder too, so that the rename outlives a power cut (without it, the
    file is whole either way: the old one or the new one)."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if durable:
        fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in `folder` durable (best effort: not every OS allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
