"""Free the checkpoints of sessions that no longer exist (run by `recursive sessions gc`).

The refs of every removed session are deleted and git's own gc drops the objects nothing
else needs (objects younger than an hour are kept: a run may be snapshotting right now). A
shadow repository left with no refs, whose workspace no session uses, is deleted whole.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from . import CheckpointError
from .git import ShadowGit, find_git
from .repo import CHECKPOINTS_DIR, REF_ROOT, session_refs

if TYPE_CHECKING:
    from ..sessions.store import SessionStore

PRUNE_GRACE = "1.hour.ago"


def prune_checkpoints(store: SessionStore) -> list[str]:
    """Delete the checkpoints of sessions missing from `store`; returns their ids. Never raises."""
    root = store.home / CHECKPOINTS_DIR
    git = find_git()
    if git is None or not root.is_dir():
        return []
    pruned: list[str] = []
    used = {meta.workspace for meta in store.list()}
    for folder in sorted(root.iterdir()):
        if (folder / "repo" / "HEAD").is_file():
            try:
                pruned += _prune_repo(_shadow(git, folder), store, used)
            except (CheckpointError, OSError):
                continue  # one broken repository must not stop the others
    return pruned


def _shadow(git: str, folder: Path) -> ShadowGit:
    try:
        workspace = Path((folder / "workspace").read_text(encoding="utf-8").strip())
    except OSError:
        workspace = Path("/")
    return ShadowGit(git, folder / "repo", workspace, folder / "index")


def _prune_repo(shadow: ShadowGit, store: SessionStore, used: set[str]) -> list[str]:
    refs = shadow.run("for-each-ref", "--format=%(refname)", REF_ROOT, bare=True).decode().split()
    sessions = {ref.split("/")[2] for ref in refs if ref.count("/") >= 3}
    gone = sorted(sid for sid in sessions if not store.exists(sid))
    doomed = [ref for ref in refs if any(ref.startswith(session_refs(sid)) for sid in gone)]
    if doomed:
        shadow.run("update-ref", "--stdin", bare=True,
                   input="".join(f"delete {ref}\n" for ref in doomed).encode())
    if len(doomed) == len(refs) and str(shadow.work_tree) not in used:
        shutil.rmtree(shadow.git_dir.parent, ignore_errors=True)
    elif doomed:
        shadow.run("gc", "--quiet", f"--prune={PRUNE_GRACE}", bare=True)
    return gone
