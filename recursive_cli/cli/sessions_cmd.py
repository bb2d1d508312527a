"""`recursive sessions list|show|export|rm|gc`: inspect and manage saved sessions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..sessions.meta import SessionMeta
from ..sessions.records import SessionError
from ..sessions.store import SessionStore
from ..settings import parse_duration, recursive_home
from .errors import EXIT_USAGE, fail


def _store() -> SessionStore:
    import os

    return SessionStore(recursive_home(os.environ))


def list_command(as_json: bool, all_workspaces: bool, workspace: Path | None) -> int:
    """This workspace's sessions (or all), newest last; a table on a TTY, tab-separated piped."""
    here = None if all_workspaces else (workspace or Path.cwd()).expanduser().resolve()
    metas = _store().list(here)
    if as_json:
        sys.stdout.write(json.dumps([_summary(m) for m in metas], indent=2) + "\n")
        return 0
    if not metas:
        where = "any workspace" if all_workspaces else str(here)
        sys.stderr.write(f"no sessions for {where}\n")
        return 0
    rows = [(m.id, m.status, m.updated[:19].replace("T", " "), str(m.turns), m.model, m.title)
            for m in metas]
    if sys.stdout.isatty():
        _table(rows)
    else:
        sys.stdout.writelines("\t".join(row) + "\n" for row in rows)
    return 0


def _summary(meta: SessionMeta) -> dict[str, object]:
    return {"id": meta.id, "status": meta.status, "mode": meta.mode, "workspace": meta.workspace,
            "model": meta.model, "provider": meta.provider, "created": meta.created,
            "updated": meta.updated, "turns": meta.turns, "messages": meta.messages,
            "cost_usd": meta.cost_usd, "title": meta.title}


def _table(rows: list[tuple[str, ...]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "status", "updated (UTC)", "turns", "model", "title", box=None)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def show_command(ref: str) -> int:
    """The conversation, readable."""
    from ..sessions.export import render_conversation

    return _with_session(ref, render_conversation)


def export_command(ref: str, fmt: str) -> int:
    """The session as jsonl, json or md on stdout."""
    from ..sessions.export import EXPORT_FORMATS, export_session

    if fmt not in EXPORT_FORMATS:
        return fail(f"unknown format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}", EXIT_USAGE)
    return _with_session(ref, lambda loaded: export_session(loaded, fmt))


def _with_session(ref: str, render) -> int:  # type: ignore[no-untyped-def]
    from ..sessions.reader import load_session

    store = _store()
    try:
        loaded = load_session(store.folder(store.resolve(ref)))
    except SessionError as exc:
        return fail(str(exc))
    for warning in loaded.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    text = render(loaded)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def rm_command(refs: list[str]) -> int:
    """Delete the named sessions (exact ids or unique prefixes)."""
    store = _store()
    code = 0
    for ref in refs:
        try:
            session_id = store.resolve(ref)
            store.remove(session_id)
            sys.stderr.write(f"removed {session_id}\n")
        except SessionError as exc:
            code = fail(str(exc))
    return code


def gc_command(older_than: str, dry_run: bool) -> int:
    """Delete sessions not updated for DURATION (`--dry-run` lists them only)."""
    try:
        seconds = parse_duration(older_than)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    removed = _store().gc(seconds, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for meta in removed:
        sys.stdout.write(f"{verb} {meta.id}\t{meta.updated[:19]}\t{meta.title}\n")
    sys.stderr.write(f"{verb} {len(removed)} session(s) not updated for {older_than}\n")
    return 0
