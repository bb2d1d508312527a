"""Git worktrees for `-w/--worktree` and fleet's `"worktree": true`: a session of its own
checkout, on a branch of its own, so parallel sessions in one repository never touch each
other's files.

The layout follows Claude Code's `--worktree` (`.claude/worktrees/<name>/` at the repository
root): ours is `<repo>/.recursive/worktrees/<name>/`, on a new branch `recursive/<name>` made
from the main checkout's HEAD (Claude branches `worktree-<name>` from origin's default branch;
HEAD is what `git worktree add` does and carries local commits). The folder is added to the
repository's `info/exclude`, so the main checkout's `git status` stays clean without a
`.gitignore` edit. `remove_worktree` never deletes uncommitted changes, nor commits no other
branch has, without `force`.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ...core.errors import WorktreeError
from ...core.state import StatePart

WORKTREES_DIR = Path(".recursive") / "worktrees"
BRANCH_PREFIX = "recursive/"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
EXIT_USAGE = 2


@dataclass(slots=True, kw_only=True)
class WorktreeState(StatePart):
    """The session's part of the state: the worktree it works in (meta.json `state.worktree`)."""

    key: ClassVar[str] = "worktree"
    name: str
    path: str  # the worktree's root
    branch: str
    repo: str  # the main checkout's root


@dataclass(slots=True, frozen=True)
class WorktreeEntry:
    """One worktree made by recursive, as `worktree list` shows it."""

    name: str
    path: Path
    branch: str
    dirty: int  # files with uncommitted changes (untracked included)


def check_name(name: str) -> str | None:
    """Why `name` cannot name a worktree (and its branch), or None."""
    if not _NAME.match(name) or ".." in name or name.endswith(".lock"):
        return f"invalid worktree name {name!r}: use letters, digits, '.', '_' and '-'"
    return None


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=False, timeout=120)
    except FileNotFoundError:
        raise WorktreeError("--worktree needs git, and there is no `git` on PATH", EXIT_USAGE) from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(f"git {args[0]} took more than 120 s in {cwd}") from None


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"git exited {proc.returncode}"


def main_checkout(start: Path) -> Path:
    """The root of the main checkout of the repository `start` is in (also from inside one of
    its worktrees); WorktreeError (exit 2) when it is in none."""
    proc = _git(start, "rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel")
    if proc.returncode != 0:
        raise WorktreeError(f"--worktree needs a git repository, and {start} is not in one", EXIT_USAGE)
    common, *top = proc.stdout.splitlines()
    common_dir = Path(common)
    return common_dir.parent if common_dir.name == ".git" else Path(top[0] if top else start)


def create_worktree(start: Path, name: str) -> tuple[WorktreeState, Path]:
    """A new worktree `name` of the repository `start` is in, on a new branch from HEAD; its
    state, and the folder in it that stands for `start` (a subfolder stays that subfolder)."""
    if problem := check_name(name):
        raise WorktreeError(problem, EXIT_USAGE)
    start = start.resolve()
    repo = main_checkout(start)
    top = Path(_git(start, "rev-parse", "--show-toplevel").stdout.strip() or repo)
    path, branch = repo / WORKTREES_DIR / name, BRANCH_PREFIX + name
    if path.exists():
        raise WorktreeError(f"worktree {name} already exists ({path}): resume its session, pick another "
                            f"name, or remove it with `recursive worktree rm {name}`", EXIT_USAGE)
    if _git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").returncode != 0:
        raise WorktreeError(f"--worktree needs a commit to branch from, and {repo} has none yet", EXIT_USAGE)
    if _git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0:
        raise WorktreeError(f"branch {branch} already exists: pick another worktree name", EXIT_USAGE)
    _exclude(repo)
    proc = _git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), "HEAD")
    if proc.returncode != 0:
        raise WorktreeError(f"cannot make worktree {name}: {_last_line(proc)}")
    inside = path / start.relative_to(top) if start.is_relative_to(top) else path
    state = WorktreeState(name=name, path=str(path), branch=branch, repo=str(repo))
    return state, inside if inside.is_dir() else path


def _exclude(repo: Path) -> None:
    """`/.recursive/worktrees/` in the repository's info/exclude (once)."""
    proc = _git(repo, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
    exclude = Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None
    if exclude is None:
        return
    line = f"/{WORKTREES_DIR.as_posix()}/"
    try:
        text = exclude.read_text(encoding="utf-8") if exclude.is_file() else ""
        if line not in text.splitlines():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            exclude.write_text(text + ("" if not text or text.endswith("\n") else "\n") + line + "\n",
                               encoding="utf-8")
    except OSError:
        pass  # an unwritable exclude file only costs an untracked folder in `git status`


def list_worktrees(start: Path) -> list[WorktreeEntry]:
    """The worktrees recursive made in the repository `start` is in, by name."""
    repo = main_checkout(start)
    proc = _git(repo, "worktree", "list", "--porcelain")
    if proc.returncode != 0:
        raise WorktreeError(f"cannot list the worktrees of {repo}: {_last_line(proc)}")
    root = (repo / WORKTREES_DIR).resolve()
    entries: list[WorktreeEntry] = []
    for block in proc.stdout.split("\n\n"):
        fields = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        path = Path(fields.get("worktree", ""))
        if not fields.get("worktree") or path.parent.resolve() != root:
            continue
        branch = fields.get("branch", "").removeprefix("refs/heads/")
        entries.append(WorktreeEntry(path.name, path, branch, _dirty(path)))
    return sorted(entries, key=lambda entry: entry.name)


def _dirty(path: Path) -> int:
    proc = _git(path, "status", "--porcelain", "--untracked-files=all")
    if proc.returncode != 0:
        return 0 if not path.exists() else 1  # (a folder git cannot read counts as changed)
    return len([line for line in proc.stdout.splitlines() if line.strip()])


def remove_worktree(start: Path, name: str, force: bool = False) -> WorktreeEntry:
    """Remove worktree `name` and its branch; WorktreeError (exit 1) for one with uncommitted
    changes, or a branch with commits HEAD does not have, unless `force`."""
    repo = main_checkout(start)
    entry = next((e for e in list_worktrees(repo) if e.name == name), None)
    if entry is None:
        raise WorktreeError(f"no worktree {name} made by recursive in {repo} (see `recursive worktree list`)")
    if entry.dirty and not force:
        raise WorktreeError(f"worktree {name} has uncommitted changes ({entry.dirty} "
                            f"file{'s' if entry.dirty != 1 else ''}) in {entry.path}: commit or discard "
                            "them, or pass --force to delete them")
    unmerged = _unmerged(repo, entry.branch) if entry.branch else 0
    if unmerged and not force:
        raise WorktreeError(f"branch {entry.branch} has {unmerged} commit{'s' if unmerged != 1 else ''} "
                            "HEAD does not have: merge it, or pass --force to delete it")
    proc = _git(repo, "worktree", "remove", *(["--force"] if force else []), str(entry.path))
    if proc.returncode != 0:
        raise WorktreeError(f"cannot remove worktree {name}: {_last_line(proc)}")
    if entry.branch:
        proc = _git(repo, "branch", "-D", entry.branch)
        if proc.returncode != 0:
            raise WorktreeError(f"worktree {name} removed, but not its branch: {_last_line(proc)}")
    return entry


def discard_worktree(state: WorktreeState) -> None:
    """Remove a worktree just made for a command that then could not start (it is clean)."""
    try:
        remove_worktree(Path(state.repo), state.name)
    except WorktreeError:
        pass  # (left for `recursive worktree rm`)


def _unmerged(repo: Path, branch: str) -> int:
    proc = _git(repo, "rev-list", "--count", f"HEAD..refs/heads/{branch}")
    return int(proc.stdout.strip() or 0) if proc.returncode == 0 else 0
