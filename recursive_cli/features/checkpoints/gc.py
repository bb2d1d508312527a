"""Free the checkpoints of sessions that no longer exist (run by `recursive sessions gc`).

The refs of every removed session are deleted (with the spare files earlier versions made
their ref locks from, under `recursive/lock-spares/` of the repository) and git's own gc drops the objects nothing
else needs (objects younger than an hour are kept: a run may be snapshotting right now). A
shadow repository left with no refs, whose workspace no session uses, is deleted whole.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from . import CheckpointError
from .git import ShadowGit, find_git
from .pending import pending_path
from .repo import CHECKPOINTS_DIR, REF_ROOT, session_refs

PRUNE_GRACE = "1.hour.ago"
OLD_SPARES = Path("recursive") / "lock-spares"  # in the git dir, as earlier versions left them


def prune_checkpoints(home: Path, exists: Callable[[str], bool], used: set[str]) -> list[str]:
    """Delete the checkpoints under `home` of sessions that no longer exist (`exists(id)` is
    False); the repository of a workspace no session in `used` has is removed whole. Returns
    the pruned session ids. Never raises."""
    root = home / CHECKPOINTS_DIR
    git = find_git()
    if git is None or not root.is_dir():
        return []
    pruned: list[str] = []
    for folder in sorted(root.iterdir()):
        if (folder / "repo" / "HEAD").is_file():
            try:
                pruned += _prune_repo(_shadow(git, folder), exists, used)
            except (CheckpointError, OSError):
                continue  # one broken repository must not stop the others
    return pruned


def _shadow(git: str, folder: Path) -> ShadowGit:
    try:
        workspace = Path((folder / "workspace").read_text(encoding="utf-8").strip())
    except OSError:
        workspace = Path("/")
    return ShadowGit(git, folder / "repo", workspace, folder / "index")


def _prune_repo(shadow: ShadowGit, exists: Callable[[str], bool], used: set[str]) -> list[str]:
    refs = shadow.run("for-each-ref", "--format=%(refname)", REF_ROOT, bare=True).decode().split()
    sessions = {ref.split("/")[2] for ref in refs if ref.count("/") >= 3}
    gone = sorted(sid for sid in sessions if not exists(sid))
    doomed = [ref for ref in refs if any(ref.startswith(session_refs(sid)) for sid in gone)]
    if doomed:
        shadow.run("update-ref", "--stdin", bare=True,
                   input="".join(f"delete {ref}\n" for ref in doomed).encode())
    for sid in gone:  # the empty files its head moves were locked with, once; its noted open
        shutil.rmtree(shadow.git_dir / OLD_SPARES / REF_ROOT / sid, ignore_errors=True)
        pending_path(shadow, sid).unlink(missing_ok=True)
    if len(doomed) == len(refs) and str(shadow.work_tree) not in used:
        shutil.rmtree(shadow.git_dir.parent, ignore_errors=True)
    elif doomed:
        shadow.run("gc", "--quiet", f"--prune={PRUNE_GRACE}", bare=True)
    return gone
