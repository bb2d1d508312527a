"""`recursive sessions list|show|export|import|rm|gc`: inspect, move and manage saved sessions."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ...core.errors import CliError
from ...core.settings import parse_duration, recursive_home
from ...core.wording import counted
from ...features.sessions.meta import SessionMeta
from ...features.sessions.records import SessionError
from ...features.sessions.store import SessionEntry, SessionStore
from ...launch.errors import EXIT_INTERRUPTED, EXIT_USAGE, fail

MODEL_WIDTH = 24  # a longer model name is cut in the table (never an id)
MIN_TITLE = 12  # a title narrower than this says too little: a column gives way first


def _store() -> SessionStore:
    import os

    return SessionStore(recursive_home(os.environ))


def list_command(as_json: bool, all_workspaces: bool, workspace: Path | None) -> int:
    """This workspace's sessions (or all), newest last; a table on a TTY, tab-separated piped.

    Damaged sessions are listed too, with `damaged` as their status and the reason as title.
    """
    here = None if all_workspaces else (workspace or Path.cwd()).expanduser().resolve()
    entries = _store().entries(here)
    if as_json:
        sys.stdout.write(json.dumps([_summary(e) for e in entries], indent=2) + "\n")
        return 0
    if not entries:
        where = "any workspace" if all_workspaces else str(here)
        sys.stderr.write(f"no sessions for {where}\n")
        return 0
    rows = [_row(entry) for entry in entries]
    if sys.stdout.isatty():
        _table(rows)
    else:
        sys.stdout.writelines("\t".join(row) + "\n" for row in rows)
    return 0


def _row(entry: SessionEntry) -> tuple[str, ...]:
    meta = entry.meta
    updated = entry.updated[:19].replace("T", " ")
    if meta is None or entry.problem:
        return (entry.id, entry.status, updated, str(meta.turns) if meta else "?",
                meta.model if meta else "", entry.problem)
    return (entry.id, entry.status, updated, str(meta.turns), meta.model, meta.title)


def _summary(entry: SessionEntry) -> dict[str, object]:
    meta = entry.meta
    return {"id": entry.id, "status": entry.status, "mode": meta.mode if meta else None,
            "workspace": entry.workspace, "model": meta.model if meta else None,
            "provider": meta.provider if meta else None, "created": entry.created,
            "updated": entry.updated, "turns": meta.turns if meta else None,
            "messages": meta.messages if meta else None,
            "cost_usd": meta.cost_usd if meta else None, "title": meta.title if meta else "",
            "reason": entry.problem or None}


def _table(rows: list[tuple[str, ...]]) -> None:
    """The sessions as a table as wide as the terminal. Ids are what people copy, so they are
    never cut (nor the other short columns); the title is what gives way when space runs out,
    then whole columns, the least telling first (model, turns, time): never a cut id."""
    from rich.console import Console
    from rich.table import Column, Table

    console = Console()
    names = ["id", "status", "updated (UTC)", "turns", "model"]
    # Fixed widths: left to itself, rich shrinks the short columns to nothing before the title.
    widths = {name: max(len(name), *(len(row[i]) for row in rows)) for i, name in enumerate(names)}
    widths["model"] = min(widths["model"], MODEL_WIDTH)
    shown = list(names)
    for name in ("model", "turns", "updated (UTC)"):
        if console.width - sum(widths[n] + 2 for n in shown) - 2 >= MIN_TITLE:
            break
        shown.remove(name)
    room = max(console.width - sum(widths[n] + 2 for n in shown) - 2, 1)  # 2: each column's padding
    columns = [Column(name, no_wrap=True, width=widths[name], overflow="ellipsis") for name in shown]
    title = Column("title", no_wrap=True, overflow="ellipsis", max_width=room)
    table = Table(*columns, title, box=None)
    kept = [names.index(name) for name in shown]
    for row in rows:
        table.add_row(*(row[index] for index in kept), row[-1])
    console.print(table)


def show_command(ref: str) -> int:
    """The conversation, readable."""
    from ...features.sessions.export import render_conversation

    return _with_session(ref, render_conversation)


def export_command(ref: str, fmt: str | None, bundle: str | None = None,
                   output: Path | None = None) -> int:
    """The session as jsonl, json, md or atif on stdout (or in `output`); with `bundle`, the whole
    session (checkpoints included) as one file for `sessions import`."""
    from ...features.sessions.export import EXPORT_FORMATS, export_session

    if bundle is not None:
        if fmt is not None or output is not None:
            flag = "--format" if fmt is not None else "--output"
            raise CliError(f"--bundle and {flag} cannot be used together: a bundle holds the whole "
                        "session, --format writes one view of its transcript", EXIT_USAGE)
        return _export_bundle(ref, bundle)
    fmt = fmt or "jsonl"
    if fmt not in EXPORT_FORMATS:
        raise CliError(f"unknown format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}", EXIT_USAGE)
    if output is not None and output.is_dir():
        raise CliError(f"--output {output} is a folder: name the file to write", EXIT_USAGE)
    from ... import __version__

    return _with_session(ref, lambda loaded: export_session(loaded, fmt, __version__), output)


def _export_bundle(ref: str, dest: str) -> int:
    """Write the bundle to `dest` (`-`: stdout, unless that is a terminal); a note on stderr."""
    import tempfile

    from ...features.bundles.bundle import write_bundle

    to_stdout = dest == "-"
    if to_stdout and sys.stdout.isatty():
        raise CliError("a bundle is binary: redirect stdout to a file, or name one with --bundle FILE",
                    EXIT_USAGE)
    path = Path(dest)
    if not to_stdout and path.is_dir():
        raise CliError(f"--bundle {dest} is a folder: name the file to write", EXIT_USAGE)
    store = _store()
    try:
        session_id = store.resolve(ref)
        if not to_stdout:
            manifest = write_bundle(store.home, session_id, path, _warn)
            size = path.stat().st_size
        else:
            with tempfile.TemporaryDirectory(prefix="recursive-export-") as temp:
                path = Path(temp) / f"{session_id}.tar.gz"
                manifest = write_bundle(store.home, session_id, path, _warn)
                size = path.stat().st_size
                _copy_to_stdout(path)
    except SessionError as exc:
        raise CliError(str(exc)) from None
    checkpoints = counted(manifest.refs, "checkpoint ref") if manifest.refs else "no checkpoints"
    where = "stdout" if to_stdout else dest
    sys.stderr.write(f"exported session {session_id} to {where} ({_size(size)}; "
                     f"{counted(len(manifest.files), 'file')}, {checkpoints})\n")
    return 0


def _copy_to_stdout(path: Path) -> None:
    import shutil

    sys.stdout.flush()
    with path.open("rb") as handle:
        shutil.copyfileobj(handle, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def _warn(text: str) -> None:
    sys.stderr.write(f"warning: {text}\n")


def _note(text: str) -> None:
    sys.stderr.write(f"note: {text}\n")


def import_command(src: str, workspace: Path | None, force: bool) -> int:
    """Make the session in bundle SRC (`-`: stdin) resumable here; its id on stdout."""
    import shutil
    import tempfile

    from ...features.bundles.bundle_import import unpack_bundle

    if workspace is not None and not workspace.expanduser().is_dir():
        raise CliError(f"--workspace {workspace} is not a folder", EXIT_USAGE)
    if src != "-" and not Path(src).exists():
        raise CliError(f"{src} does not exist", EXIT_USAGE)
    store = _store()
    shown = src
    try:
        if src != "-":
            imported = unpack_bundle(store.home, Path(src), workspace, force, _note)
        else:
            with tempfile.TemporaryDirectory(prefix="recursive-import-") as temp:
                path = Path(temp) / "stdin.bundle"
                shown = str(path)
                with path.open("wb") as handle:
                    shutil.copyfileobj(sys.stdin.buffer, handle)
                imported = unpack_bundle(store.home, path, workspace, force, _note)
    except SessionError as exc:
        raise CliError(str(exc).replace(shown, "stdin") if src == "-" else str(exc)) from None
    checkpoints = f"{imported.refs} checkpoint refs" if imported.refs else "no checkpoints"
    action = "replaced" if imported.replaced else "imported"
    sys.stderr.write(f"{action} session {imported.session_id} (workspace {imported.workspace}; "
                     f"{checkpoints})\n")
    if workspace is None and imported.exported_from != str(imported.workspace):
        _note(f"the session is bound to the current folder {imported.workspace} (it was exported from "
              f"{imported.exported_from}; --workspace DIR chooses another)")
    for line in imported.dropped:  # (a bundle is someone else's data: say what was kept out)
        _note(f"kept out of the bundle: {line}")
    sys.stdout.write(imported.session_id + "\n")
    return 0


def _with_session(ref: str, render, output: Path | None = None) -> int:  # type: ignore[no-untyped-def]
    """Print `render(session)` (or write it to `output`, atomically); warnings on stderr."""
    from ...features.sessions.meta import write_atomic
    from ...features.sessions.reader import load_session

    store = _store()
    try:
        loaded = load_session(store.folder(store.resolve(ref)))
    except SessionError as exc:
        raise CliError(str(exc)) from None
    for warning in loaded.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    text = render(loaded)
    text = text if text.endswith("\n") else text + "\n"
    if output is None:
        sys.stdout.write(text)
        return 0
    try:
        write_atomic(output.expanduser(), text.encode("utf-8", errors="surrogateescape"))
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from None
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


def gc_command(older_than: str, dry_run: bool, yes: bool, all_workspaces: bool,
               workspace: Path | None) -> int:
    """Delete this workspace's (or every workspace's) sessions not updated for DURATION.

    `--dry-run` lists them on stdout. Otherwise a terminal is asked first; without one,
    `--yes` is required (exit 2 without it). Each removed id is printed on stderr.
    """
    try:
        seconds = parse_age(older_than)
    except ValueError as exc:
        raise CliError(f"--older-than: {exc}", EXIT_USAGE) from None
    store = _store()
    here = None if all_workspaces else (workspace or Path.cwd()).expanduser().resolve()
    where = "any workspace" if here is None else str(here)
    stale = store.stale(seconds, here)
    if dry_run:
        for meta in stale:
            sys.stdout.write(f"would remove {meta.id}\t{meta.updated[:19]}\t{meta.title}\n")
        sys.stderr.write(f"would remove {counted(len(stale), 'session')} of {where} "
                         f"not updated for {older_than}\n")
        return 0
    if stale and not yes:
        if not sys.stdin.isatty():
            verb, them = ("is", "it") if len(stale) == 1 else ("are", "them")
            raise CliError(f"{counted(len(stale), 'session')} of {where} {verb} not updated for {older_than}; pass "
                           f"--yes to delete {them} without asking, or --dry-run to list {them}", EXIT_USAGE)
        answer = _confirm(stale, where, older_than)
        if answer is not True:
            sys.stderr.write("nothing removed\n")
            return EXIT_INTERRUPTED if answer is None else 0
    removed = 0
    for meta in stale:
        try:
            store.remove(meta.id)
        except SessionError as exc:
            sys.stderr.write(f"warning: kept {meta.id}: {exc}\n")
            continue
        removed += 1
        sys.stderr.write(f"removed {meta.id}\n")
    _prune_checkpoints(store)
    sys.stderr.write(f"removed {counted(removed, 'session')} of {where} not updated for {older_than}\n")
    return 0


def _prune_checkpoints(store: SessionStore) -> None:
    """Drop the checkpoints of every session that no longer exists (of any workspace)."""
    from ...features.checkpoints.gc import prune_checkpoints

    prune_checkpoints(store.home, store.exists, {meta.workspace for meta in store.list()})


def parse_age(text: str) -> float:
    """Seconds in an age such as `30d`, `12h` or `90m`; a bare number is refused (ValueError):
    it once meant seconds where users meant days."""
    number = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", number):
        raise ValueError(f"{number!r} has no unit; write e.g. {number}d (days), {number}h, "
                         f"{number}m or {number}s")
    return parse_duration(text)


def _confirm(stale: list[SessionMeta], where: str, older_than: str) -> bool | None:
    """List what would go and ask on the terminal; anything but yes keeps them (None: Ctrl-C)."""
    import typer

    for meta in stale:
        sys.stderr.write(f"  {meta.id}\t{meta.updated[:19].replace('T', ' ')}\t{meta.title}\n")
    try:
        these = "these " if len(stale) > 1 else ""
        return typer.confirm(f"Delete {these}{counted(len(stale), 'session')} of {where}, not updated for "
                             f"{older_than}?", default=False, err=True)
    except typer.Abort as exc:  # click's for Ctrl-C and for the end of input alike
        return None if isinstance(exc.__context__, KeyboardInterrupt) else False
    except EOFError:
        return False
