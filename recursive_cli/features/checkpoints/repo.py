"""Where a workspace's shadow repository lives, how it is created, and the names of its refs.

    $RECURSIVE_HOME/checkpoints/<workspace-hash>/
        repo/        a bare git repository: the snapshots' objects and refs
        index        the index snapshots are staged through, kept between turns so an
                     unchanged tree costs a stat per file and no hashing
        index.mutex  held (flock) while a process uses the index
        restores.jsonl  what restores wrote, for other sessions' windows (journal.py)
        workspace    the workspace's path, for people and for `sessions gc`

Refs of a session:

    refs/recursive/<session>/head                  its latest snapshot (a restore moves it); its
                                                   history is the session's chain of snapshots,
                                                   those around tool calls included (attribution.py)
    refs/recursive/<session>/turns/<N>/before      the workspace before turn N …
    refs/recursive/<session>/turns/<N>/after       … and after it
    refs/recursive/<session>/rewound/<N>/…         the same, for turns a restore undid
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from .git import ShadowGit

CHECKPOINTS_DIR = "checkpoints"
RESTORES_JOURNAL = "restores.jsonl"  # next to the index
REF_ROOT = "refs/recursive"
# Written into the shadow repository's config once, when it is created.
SHADOW_CONFIG = {
    "core.bare": "true", "core.autocrlf": "false", "core.safecrlf": "false",
    "core.symlinks": "true", "core.excludesFile": os.devnull, "core.logAllRefUpdates": "false",
    "gc.auto": "0", "commit.gpgSign": "false",
}


def workspace_key(workspace: Path) -> str:
    """A short stable name for a workspace: a hash of its resolved path."""
    return hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]


def shadow_folder(home: Path, workspace: Path) -> Path:
    return home / CHECKPOINTS_DIR / workspace_key(workspace)


def shadow_git(executable: str, home: Path, workspace: Path) -> ShadowGit:
    """The shadow repository of `workspace` (not created: see `ensure_repo`)."""
    folder = shadow_folder(home, workspace)
    return ShadowGit(executable, folder / "repo", workspace.resolve(), folder / "index")


def ensure_repo(git: ShadowGit, home: Path) -> None:
    """Create the shadow repository if it does not exist yet, and keep its excludes current.

    It is built in a temporary folder and renamed into place, so two processes starting on
    the same workspace at once cannot leave a half-made repository.
    """
    folder = git.git_dir.parent
    if not (git.git_dir / "HEAD").is_file():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _create(git, folder)
        (folder / "workspace").write_text(str(git.work_tree) + "\n", encoding="utf-8")
    _write_excludes(git, home)


def _create(git: ShadowGit, folder: Path) -> None:
    temp = Path(tempfile.mkdtemp(dir=folder, prefix=".repo-"))
    try:
        staging = ShadowGit(git.executable, temp, git.work_tree, folder / "index")
        staging.run("init", "--quiet", "--bare", "--template=", str(temp), bare=True)
        for key, value in SHADOW_CONFIG.items():
            staging.run("config", key, value, bare=True)
        with contextlib.suppress(OSError):  # another process won the race: use its repository
            os.rename(temp, git.git_dir)
    finally:
        if temp.exists():
            shutil.rmtree(temp, ignore_errors=True)


def _write_excludes(git: ShadowGit, home: Path) -> None:
    """Keep `$RECURSIVE_HOME` (sessions, these very checkpoints) out of snapshots when it is
    inside the workspace; `.git` folders git skips by itself."""
    lines = ["# written by recursive: never snapshotted"]
    with contextlib.suppress(ValueError, OSError):
        inside = home.resolve().relative_to(git.work_tree)
        if inside.parts:
            lines.append(ignore_pattern(inside.as_posix(), directory=True))
    text = "\n".join(lines) + "\n"
    path = git.git_dir / "info" / "exclude"
    with contextlib.suppress(OSError):
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")


def ignore_pattern(path: str, directory: bool = False) -> str:
    """A gitignore line matching exactly `path` (relative to the work tree), and nothing else."""
    escaped = "".join("\\" + char if char in "\\*?[]!#" else char for char in path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped + ("/" if directory else "")


def session_refs(session_id: str) -> str:
    """The ref folder of one session."""
    return f"{REF_ROOT}/{session_id}/"


def head_ref(session_id: str) -> str:
    return f"{REF_ROOT}/{session_id}/head"


def turn_ref(session_id: str, turn: int, phase: str, rewound: bool = False) -> str:
    kind = "rewound" if rewound else "turns"
    return f"{REF_ROOT}/{session_id}/{kind}/{turn}/{phase}"
