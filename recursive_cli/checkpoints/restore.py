"""Put the workspace back as it was before turn N of a session (SPEC §8).

Only paths that turns N and later changed are touched: each goes back to its content in the
"before turn N" snapshot — modified files restored, created files removed, deleted files
recreated. Every other file is left alone. A touched path that changed since the session's
last snapshot (someone else edited it) is a conflict: restoring would lose that edit, so it
is refused unless forced. The workspace as it was just before the restore is committed too,
so a forced restore loses nothing either.

When the session's last turn has no "after" snapshot (the run was killed mid-turn), what
changed since that turn's start is taken as the turn's own doing, not as a conflict.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import UnknownTurnError
from .checkpointer import Capture, GitCheckpointer, TurnCheckpoints, turn_span
from .repo import turn_ref
from .scan import Skipped

ActionKind = Literal["restore", "recreate", "remove"]
_KIND_BY_STATUS: dict[str, ActionKind] = {"A": "remove", "D": "recreate", "M": "restore", "T": "restore"}


@dataclass(frozen=True)
class RestoreAction:
    """What happens to one path: restored to its old content, recreated, or removed."""

    kind: ActionKind
    path: str


@dataclass
class RestorePlan:
    """Everything a restore would do, computed without changing the workspace."""

    turn: int
    target: str  # the "before turn N" snapshot
    undone: list[int]  # the turns the restore takes back
    actions: list[RestoreAction]
    conflicts: list[str]  # touched paths changed since the session's last snapshot
    skipped: list[Skipped]  # never snapshotted, so left alone whatever they hold
    current: Capture = field(repr=False)


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did: the snapshot it ended on and the paths it could not write."""

    commit: str
    blocked: list[str]


def plan_restore(cp: GitCheckpointer, turn: int) -> RestorePlan:
    """The plan for restoring the workspace to before `turn`; UnknownTurnError if it has no checkpoint."""
    live = [t for t in cp.turns() if not t.rewound]
    start = next((t for t in live if t.turn == turn), None)
    if start is None or start.before is None:
        raise UnknownTurnError(_unknown_turn(cp.session_id, turn, live))
    current = cp.capture()
    undone = [t for t in live if t.turn >= turn]
    touched = _touched(cp, live, undone, current.tree)
    differs = {change.path: change.status for change in cp.changes(start.before, current.tree)}
    actions = [RestoreAction(_KIND_BY_STATUS.get(differs[path], "restore"), path)
               for path in sorted(touched & differs.keys())]
    conflicts = _conflicts(cp, live, current, actions)
    return RestorePlan(turn, start.before, [t.turn for t in undone], actions, conflicts,
                       current.scan.skipped, current)


def _unknown_turn(session_id: str, turn: int, live: list[TurnCheckpoints]) -> str:
    known = ", ".join(str(t.turn) for t in live if t.before) or "none"
    return f"session {session_id} has no checkpoint before turn {turn} (turns with one: {known})"


def _touched(cp: GitCheckpointer, live: list[TurnCheckpoints], undone: list[TurnCheckpoints],
             now: str) -> set[str]:
    """Every path one of the `undone` turns changed, from its first snapshot to its last."""
    touched: set[str] = set()
    for turn in undone:
        span = turn_span(live, turn.turn)
        if span is not None and span[0] != (span[1] or now):
            touched.update(change.path for change in cp.changes(span[0], span[1] or now))
    return touched


def _conflicts(cp: GitCheckpointer, live: list[TurnCheckpoints], current: Capture,
               actions: list[RestoreAction]) -> list[str]:
    """Paths the restore would overwrite that changed since the session's last snapshot, and
    paths it would recreate over a file no snapshot holds."""
    head = cp.head()
    killed_mid_turn = bool(live) and live[-1].after is None
    since = set()
    if head is not None and not killed_mid_turn and head[1] != current.tree:
        since = {change.path for change in cp.changes(head[1], current.tree)}
    conflicts = [a.path for a in actions if a.path in since]
    conflicts += [a.path for a in actions if a.kind == "recreate" and a.path not in since
                  and _exists(cp.workspace / a.path)]
    return sorted(conflicts)


def apply_restore(cp: GitCheckpointer, plan: RestorePlan) -> RestoreResult:
    """Carry the plan out: removals first, then writes; commit the result as the session's head
    and move the undone turns' refs under `rewound/`."""
    cp.commit(plan.current.tree, f"{cp.session_id}: workspace before restoring to turn {plan.turn}")
    blocked = [a.path for a in plan.actions if a.kind == "remove" and not _remove(cp.workspace, a.path)]
    writes = [a.path for a in plan.actions if a.kind != "remove"]
    blocked += [path for path in writes if _blocked(cp.workspace, path)]
    _checkout(cp, plan.target, [path for path in writes if path not in blocked])
    after = cp.capture()
    commit = cp.commit(after.tree, f"{cp.session_id}: restored to before turn {plan.turn}")
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


def _checkout(cp: GitCheckpointer, commit: str, paths: list[str]) -> None:
    """Write `paths` as they are in `commit`, through a throwaway index (the kept one stays)."""
    if not paths:
        return
    index = cp.git.index.with_name(f"restore-{os.getpid()}.index")
    try:
        cp.git.run("read-tree", commit, index=index)
        cp.git.run("checkout-index", "-f", "-z", "--stdin", index=index,
                   input=b"".join(os.fsencode(path) + b"\0" for path in paths))
    finally:
        with contextlib.suppress(FileNotFoundError):
            index.unlink()


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

    record = ExtraRecord.model_validate({
        "type": "rewind", "turn": plan.turn, "undone": plan.undone, "commit": result.commit,
        "files_changed": len(plan.actions) - len(result.blocked), "time": now_iso()})
    torn = ends_torn(transcript)
    with transcript.open("ab") as handle:
        handle.write((b"\n" if torn else b"") + dump_record(record))  # a torn line must not swallow it
        handle.flush()
        os.fsync(handle.fileno())

