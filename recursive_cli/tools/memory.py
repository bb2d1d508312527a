"""`remember` and `recall`: a small key-value memory per workspace that outlives sessions.

Stored as JSON in `$RECURSIVE_HOME/memory/<sha256(workspace)[:16]>.json`, replaced
atomically on every write so a crash never leaves half a file; msgspec reads it back into
`MemoryRecord` (the file is an I/O edge) and writes it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated

import msgspec
from msgspec import Meta

from ..core.tool import BaseTool, ToolContext, ToolError, ToolResult


@dataclass(slots=True)
class MemoryEntry:
    """One remembered value and when it was last set (UTC, ISO 8601)."""

    value: str
    updated: str


@dataclass(slots=True)
class MemoryRecord:
    """The stored file: which workspace it belongs to, and its entries by key."""

    workspace: str
    entries: dict[str, MemoryEntry] = field(default_factory=dict)


def memory_path(home: Path, workspace: Path) -> Path:
    """Where the memory of `workspace` lives under `home`."""
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return home / "memory" / f"{digest}.json"


def load_memory(home: Path, workspace: Path) -> MemoryRecord:
    """The workspace's memory; empty when none was saved yet."""
    path = memory_path(home, workspace)
    try:
        return msgspec.json.decode(path.read_bytes(), type=MemoryRecord)
    except FileNotFoundError:
        return MemoryRecord(workspace=str(workspace))
    except (OSError, ValueError) as exc:
        raise ToolError(f"cannot read memory file {path}: {exc}") from exc


def save_memory(home: Path, record: MemoryRecord) -> None:
    """Write the memory file atomically (temporary file, fsync, rename)."""
    path = memory_path(home, Path(record.workspace))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(msgspec.json.format(msgspec.json.encode(record), indent=2))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@dataclass(slots=True, kw_only=True)
class RememberArgs:
    key: Annotated[str, Meta(min_length=1, description="Short name for the fact, e.g. `test command`.")]
    value: Annotated[str, Meta(description="The fact to keep.")]


class RememberTool(BaseTool[RememberArgs]):
    name = "remember"
    description = (
        "Save a fact about this workspace for future sessions (build and test commands, "
        "conventions, where things are, user preferences). Saving under an existing key "
        "replaces its value. Use recall to read facts back."
    )
    kind = "other"
    Args = RememberArgs
    subject_field = "key"

    async def run(self, args: RememberArgs, ctx: ToolContext) -> ToolResult:
        record = load_memory(ctx.home, ctx.workspace)
        replaced = args.key in record.entries
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        record.entries[args.key] = MemoryEntry(value=args.value, updated=now)
        save_memory(ctx.home, record)
        verb = "updated" if replaced else "remembered"
        return ToolResult(f"{verb} {args.key!r}", summary=verb)


@dataclass(slots=True, kw_only=True)
class RecallArgs:
    query: Annotated[str | None, Meta(description="Text to look for in keys and values; omit to list everything.")] = None


class RecallTool(BaseTool[RecallArgs]):
    name = "recall"
    description = (
        "Read facts saved with remember in earlier sessions of this workspace: all of them, "
        "or those whose key or value contains `query` (case-insensitive)."
    )
    kind = "read"
    Args = RecallArgs
    subject_field = "query"

    async def run(self, args: RecallArgs, ctx: ToolContext) -> ToolResult:
        entries = load_memory(ctx.home, ctx.workspace).entries
        found = {key: entry.value for key, entry in sorted(entries.items())
                 if matches(args.query, key, entry.value)}
        if not found:
            text = (f"no memories match {args.query!r}" if args.query
                    else "nothing has been remembered for this workspace yet")
            return ToolResult(text, summary="0 memories")
        text = "\n".join(f"{key}: {value}" for key, value in found.items())
        return ToolResult(text, summary=f"{len(found)} memories" if len(found) != 1 else "1 memory")


def matches(query: str | None, key: str, value: str) -> bool:
    """Case-insensitive substring test on key or value; no query matches everything."""
    if not query:
        return True
    needle = query.casefold()
    return needle in key.casefold() or needle in value.casefold()
