"""Put the workspace back as it was before turn N of a session (SPEC §8).

Only what the session itself did in turns N and later is undone: the paths its tool calls
and background jobs changed (attribution.py). Each goes back to how it was before the
session first changed it — modified files restored, created files removed, deleted files
recreated, symlinks recreated as links. What anyone else changed, during the turns or
between them, is left alone. A path whose content is no longer what the session left
(someone changed it since) is a conflict: restoring would lose that edit, so it is refused
unless forced. So is a path that changed while a shell command, a job or another tool that
may write anything ran (`unsure`, attribution.py): another process may have written it
then, and we cannot tell whose its content is. The workspace as it was just before the
restore is committed too, so a forced restore loses nothing either.

The files are written holding the index mutex, after what is about to be written has been
added to the restores' journal (journal.py): a session running in the same workspace
meanwhile does not take the restore's writes for its own.

Any turn with a checkpoint can be named, a turn an earlier restore undid too: the restore
then undoes the turns that ran after it and are still in effect, so the workspace and the
conversation both go back to before turn N.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import UnknownTurnError
from .attribution import Entry, OwnChange, scratch_index
from .checkpointer import Capture, GitCheckpointer, TurnCheckpoints
from .journal import record_writes
from .repo import turn_ref
from .scan import Skipped

ActionKind = Literal["restore", "recreate", "remove"]


@dataclass(frozen=True)
class RestoreAction:
    """What happens to one path: restored to `entry`, recreated as `entry`, or removed."""

    kind: ActionKind
    path: str
    entry: Entry | None = None


@dataclass
class RestorePlan:
    """Everything a restore would do, computed without changing the workspace."""

    turn: int
    undone: list[int]  # the turns the restore takes back
    actions: list[RestoreAction]
    conflicts: list[str]  # paths changed only when forced: someone else changed them, or may have
    skipped: list[Skipped]  # never snapshotted, so left alone whatever they hold
    current: Capture = field(repr=False)
    already_undone: bool = False  # turn N itself was undone by an earlier restore
    # those of the conflicts that still hold what the session left, but changed while a call
    # ran that may not have been their only writer: path → that call ("run_shell in turn 2")
    unsure: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did: the snapshot it ended on and the paths it could not write."""

    commit: str
    blocked: list[str]


def plan_restore(cp: GitCheckpointer, turn: int) -> RestorePlan:
    """The plan for restoring the workspace to before `turn`; UnknownTurnError if it has no checkpoint."""
    turns = cp.turns()  # every turn `checkpoints list` shows can be named
    start = next((t for t in turns if t.turn == turn), None)
    if start is None:
        raise UnknownTurnError(_unknown_turn(cp.session_id, turn, turns))
    undone = [t for t in turns if not t.rewound and t.turn >= turn]
    current = cp.capture()
    own = _own_changes(cp, undone, current.tree)
    now = cp.entries(current.tree) if own else {}
    actions = [action for change in own.values()
               if (action := _action(change, now.get(change.path))) is not None]
    changed = {a.path for a in actions if _conflict(cp.workspace, own[a.path], now.get(a.path))}
    unsure = {a.path: own[a.path].unsure for a in actions if own[a.path].unsure and a.path not in changed}
    return RestorePlan(turn, [t.turn for t in undone], actions, sorted({*changed, *unsure}),
                       current.scan.skipped, current, already_undone=start.rewound, unsure=unsure)


def _unknown_turn(session_id: str, turn: int, turns: list[TurnCheckpoints]) -> str:
    known = ", ".join(str(t.turn) for t in turns) or "none"
    return f"session {session_id} has no checkpoint before turn {turn} (turns with one: {known})"


def _own_changes(cp: GitCheckpointer, undone: list[TurnCheckpoints], now: str) -> dict[str, OwnChange]:
    """What the session itself changed in the `undone` turns."""
    if not undone:
        return {}
    since = undone[0].before if all(t.before for t in undone) else None
    return cp.history(since=since, now=now).own({t.turn for t in undone})


def _action(change: OwnChange, now: Entry | None) -> RestoreAction | None:
    """What puts `change.path` back as it was before the session changed it; None when it is."""
    if now == change.before:
        return None
    if change.before is None:
        return RestoreAction("remove", change.path)
    return RestoreAction("recreate" if now is None else "restore", change.path, change.before)


def _conflict(root: Path, change: OwnChange, now: Entry | None) -> bool:
    """Whether changing the path would lose someone else's edit: it no longer holds what the
    session left, or something no snapshot holds (too big, unreadable) stands there."""
    return now != change.after or (now is None and _exists(root / change.path))


def apply_restore(cp: GitCheckpointer, plan: RestorePlan) -> RestoreResult:
    """Carry the plan out: removals first, then writes; commit the result as the session's head
    and move the undone turns' refs under `rewound/`."""
    event = {"event": "restore", "turn": plan.turn}
    cp.commit(plan.current.tree, f"{cp.session_id}: workspace before restoring to turn {plan.turn}",
              event=event)
    with cp.git.index_locked():  # (journal.py: no other session's window opens or closes halfway)
        record_writes(cp.git, cp.session_id, plan.turn, {a.path: a.entry for a in plan.actions})
        blocked = [a.path for a in plan.actions if a.kind == "remove" and not _remove(cp.workspace, a.path)]
        writes = [a for a in plan.actions if a.kind != "remove"]
        blocked += [a.path for a in writes if _blocked(cp.workspace, a.path)]
        _checkout(cp, {a.path: a.entry for a in writes if a.entry is not None and a.path not in blocked})
    after = cp.capture()
    commit = cp.commit(after.tree, f"{cp.session_id}: restored to before turn {plan.turn}", event=event)
    _retire(cp, plan.undone)
    return RestoreResult(commit, blocked)


def _remove(root: Path, path: str) -> bool:
    """Delete a file or symlink the undone turns created, then the folders it leaves empty;
    False when something else stands there now."""
    full = root / path
    if _blocked(root, path):
        return False
    with contextlib.suppress(FileNotFoundError):
        full.unlink()
    parent = full.parent
    while parent != root:
        try:
            parent.rmdir()  # only succeeds when empty
        except OSError:
            break
        parent = parent.parent
    return True


def _blocked(root: Path, path: str) -> bool:
    """True when writing `path` would go through a non-folder (a file, or a symlink that may
    lead outside the workspace) or replace a real folder."""
    parts = Path(path).parts
    for depth in range(1, len(parts)):
        mode = _mode(root.joinpath(*parts[:depth]))
        if mode and not stat.S_ISDIR(mode):
            return True
    return stat.S_ISDIR(_mode(root / path))


def _mode(path: Path) -> int:
    """lstat's st_mode, or 0 when nothing is there."""
    try:
        return path.lstat().st_mode
    except OSError:
        return 0


def _exists(path: Path) -> bool:
    return _mode(path) != 0


def _checkout(cp: GitCheckpointer, entries: dict[str, Entry]) -> None:
    """Write each path as its entry says (symlinks as links), through a throwaway index."""
    if not entries:
        return
    with scratch_index(cp.git, entries) as index:
        cp.git.run("checkout-index", "-f", "-z", "--stdin", index=index,
                   input=b"".join(os.fsencode(path) + b"\0" for path in entries))


def _retire(cp: GitCheckpointer, turns: list[int]) -> None:
    """Move the undone turns' refs from `turns/` to `rewound/`, in one transaction."""
    by_turn = {t.turn: t for t in cp.turns()}
    updates: dict[str, str] = {}
    deletes: list[str] = []
    for number in turns:
        for phase in ("before", "after"):
            commit = getattr(by_turn[number], phase)
            if commit:
                updates[turn_ref(cp.session_id, number, phase, rewound=True)] = commit
                deletes.append(turn_ref(cp.session_id, number, phase))
    if updates:
        cp.update_refs(updates, tuple(deletes))


def record_rewind(transcript: Path, plan: RestorePlan, result: RestoreResult) -> None:
    """Append the `rewind` record that drops turns ≥ N from the conversation on the next load.

    Nothing is deleted: the rewound turns' lines stay in the transcript (and their snapshots
    under `rewound/`) until the session is removed.
    """
    from ..sessions.records import ExtraRecord, dump_record, now_iso
    from ..sessions.writer import ends_torn

    record = ExtraRecord(type="rewind", turn=plan.turn, undone=plan.undone, commit=result.commit,
                         files_changed=len(plan.actions) - len(result.blocked), time=now_iso())
    torn = ends_torn(transcript)
    with transcript.open("ab") as handle:
        handle.write((b"\n" if torn else b"") + dump_record(record))  # a torn line must not swallow it
        handle.flush()
        os.fsync(handle.fileno())

