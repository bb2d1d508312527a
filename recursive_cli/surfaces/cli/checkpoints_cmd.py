"""`recursive checkpoints list|diff|restore`: a session's workspace snapshots (SPEC §8)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ...core.errors import CliError
from ...core.settings import recursive_home
from ...features.checkpoints import CheckpointError
from ...features.checkpoints.checkpointer import GitCheckpointer, TurnCheckpoints
from ...features.checkpoints.restore import RestorePlan
from ...features.sessions.reader import LoadedSession, load_session
from ...features.sessions.records import SessionError, TurnStartRecord
from ...features.sessions.store import SessionStore

PROMPT_WIDTH = 60


@dataclasses.dataclass(frozen=True)
class TurnRow:
    """One line of `checkpoints list`."""

    turn: int
    time: str
    files_changed: int  # by the session itself (its tool calls and jobs), not by others meanwhile
    prompt: str
    status: str  # "", "rewound" or "unfinished"


def _open(ref: str) -> tuple[SessionStore, str]:
    store = SessionStore(recursive_home(os.environ))
    return store, store.resolve(ref)


def _checkpointer(session: LoadedSession) -> GitCheckpointer:
    home = recursive_home(os.environ)
    workspace = Path(session.meta.workspace)
    if not workspace.is_dir():
        raise CheckpointError(f"the workspace of session {session.meta.id} no longer exists: {workspace}")
    return GitCheckpointer(home, workspace, session.meta.id)


def list_command(ref: str, as_json: bool) -> int:
    """The session's turns with their checkpoints; a table on a TTY, tab-separated piped."""
    try:
        store, session_id = _open(ref)
        session = load_session(store.folder(session_id))
        cp = _checkpointer(session)
        rows = _rows(cp, session)
    except (SessionError, CheckpointError) as exc:
        raise CliError(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps([dataclasses.asdict(row) for row in rows], indent=2) + "\n")
        return 0
    if not rows:
        sys.stderr.write(f"session {session_id} has no checkpoints (run with --no-checkpoints, "
                         "or without git?)\n")
        return 0
    table = [(str(r.turn), r.time, str(r.files_changed), _short(r.prompt), r.status) for r in rows]
    if sys.stdout.isatty():
        _table(table)
    else:
        sys.stdout.writelines("\t".join(row) + "\n" for row in table)
    return 0


def _rows(cp: GitCheckpointer, session: LoadedSession) -> list[TurnRow]:
    """Every turn with a checkpoint, joined with its `turn_start` record (prompt, time)."""
    starts = {r.turn: r for r in session.records if isinstance(r, TurnStartRecord)}
    history = cp.history()
    rows = []
    for t in cp.turns():
        start = starts.get(t.turn)
        rows.append(TurnRow(t.turn, _when(start, t), len(history.own({t.turn})),
                            start.prompt if start else "",
                            "rewound" if t.rewound else ("" if t.after else "unfinished")))
    return rows


def _when(start: TurnStartRecord | None, turn: TurnCheckpoints) -> str:
    """UTC time the turn started, `YYYY-MM-DD HH:MM:SS`."""
    if start is not None:
        return start.time[:19].replace("T", " ")
    if turn.time is None:
        return ""
    moment = datetime.datetime.fromtimestamp(turn.time, datetime.timezone.utc)
    return f"{moment:%Y-%m-%d %H:%M:%S}"


def _short(prompt: str) -> str:
    line = next((part.strip() for part in prompt.splitlines() if part.strip()), "")
    return line if len(line) <= PROMPT_WIDTH else line[: PROMPT_WIDTH - 1] + "…"


def _table(rows: Sequence[tuple[str, ...]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("turn", "started (UTC)", "files", "prompt", "", box=None)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def diff_command(ref: str, turn: int | None) -> int:
    """What the session itself changed in TURN (or in every turn still in effect) as a diff."""
    try:
        store, session_id = _open(ref)
        cp = _checkpointer(load_session(store.folder(session_id)))
        turns, note = _diff_turns(cp, turn)
        changes = cp.history().own(turns)
        text = cp.own_diff(changes, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ)
    except (SessionError, CheckpointError) as exc:
        raise CliError(str(exc)) from None
    if note:
        sys.stderr.write(note + "\n")
    if not text:
        sys.stderr.write("no files changed\n")
    sys.stdout.write(text)
    return 0


def _diff_turns(cp: GitCheckpointer, turn: int | None) -> tuple[set[int], str]:
    """The turns to show (one, or every turn not undone) and a note for stderr."""
    turns = cp.turns()
    if turn is None:
        live = {t.turn for t in turns if not t.rewound}
        if not live:
            raise CheckpointError(f"session {cp.session_id} has no checkpoints")
        return live, ""
    entry = next((t for t in turns if t.turn == turn), None)
    if entry is None:
        known = ", ".join(str(t.turn) for t in turns) or "none"
        raise CheckpointError(f"session {cp.session_id} has no checkpoint for turn {turn} "
                              f"(turns with one: {known})")
    note = f"note: turn {turn} was undone by a restore" if entry.rewound else ""
    if entry.after is None:
        note = f"note: turn {turn} has no after-turn checkpoint: compared with the workspace now"
    return {turn}, note


def restore_command(ref: str, turn: int, dry_run: bool, force: bool) -> int:
    """Restore the workspace to before TURN and rewind the conversation, or print the plan."""
    from ...features.sessions.lock import acquire_lock

    try:
        store, session_id = _open(ref)
        folder = store.folder(session_id)
        with acquire_lock(folder, session_id) as lock:  # no run may use the session meanwhile
            if lock.warning:
                sys.stderr.write(f"warning: {lock.warning}\n")
            session = load_session(folder)
            return run_restore(_checkpointer(session), session, turn, dry_run, force)
    except (SessionError, CheckpointError) as exc:
        raise CliError(str(exc)) from None


def run_restore(cp: GitCheckpointer, session: LoadedSession, turn: int, dry_run: bool,
                force: bool) -> int:
    """Plan, print the plan, then (unless refused or a dry run) restore and record the rewind."""
    from ...features.checkpoints.restore import apply_restore, plan_restore, record_rewind

    plan = plan_restore(cp, turn)
    _print_plan(cp.session_id, plan)
    if plan.conflicts and not force:
        raise CliError(_refusal(plan))
    if dry_run:
        sys.stderr.write("dry run: nothing was changed\n")
        return 0
    result = apply_restore(cp, plan)
    record_rewind(session.transcript_path, plan, result)
    for path in result.blocked:
        sys.stderr.write(f"warning: left {path} alone: a symlink, file or folder stands in its way\n")
    done = len(plan.actions) - len(result.blocked)
    sys.stdout.write(f"restored {_files(done)}; the conversation is back to before turn {plan.turn} "
                     f"(`recursive resume {cp.session_id}` continues from there)\n")
    return 0


def _print_plan(session_id: str, plan: RestorePlan) -> None:
    undone = ("turn " if len(plan.undone) == 1 else "turns ") + ", ".join(map(str, plan.undone))
    what = f"undoes {undone}" if plan.undone else "no turn since is still in effect"
    if plan.already_undone:
        what += f"; turn {plan.turn} itself was undone by an earlier restore"
    lines = [f"restore {session_id} to before turn {plan.turn} ({what})"]
    lines += [f"  {action.kind:<9} {action.path}" for action in plan.actions]
    if not plan.actions:
        lines.append("  no file to change: the workspace already matches")
    if plan.skipped:
        lines.append("left alone (never snapshotted):")
        lines += [f"  {skip.describe()}" for skip in plan.skipped]
    changed = [path for path in plan.conflicts if path not in plan.unsure]
    if changed:
        lines.append("conflicts (changed by someone else since the session wrote them):")
        lines += [f"  {path}" for path in changed]
    if plan.unsure:
        lines.append("conflicts (changed while a command ran that may not have been their only writer):")
        lines += [f"  {path}  (during {call})" for path, call in sorted(plan.unsure.items())]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def _refusal(plan: RestorePlan) -> str:
    """Why a restore with conflicts is refused, and how to restore anyway."""
    changed = len(plan.conflicts) - len(plan.unsure)
    reasons = []
    if changed:
        reasons.append(f"{_files(changed)} changed by someone else since the session wrote them")
    if plan.unsure:
        reasons.append(f"{_files(len(plan.unsure))} that another process may have written while the "
                       "session's command ran")
    return f"{' and '.join(reasons)} would be overwritten (listed above as conflicts); --force restores anyway"


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")
