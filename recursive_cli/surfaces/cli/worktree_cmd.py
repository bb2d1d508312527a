"""`recursive worktree list` and `recursive worktree rm NAME [--force]`: the git worktrees that
`-w/--worktree` and fleet's `"worktree": true` made (features/worktrees), with their sessions.

The typer definitions are here too (registered by `register`); git is run only when a command does.
"""

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ...core.errors import CliError, WorktreeError

EPILOG_LIST = """[b]Examples[/b]

  recursive worktree list

  recursive worktree list --json | jq -r '.[] | select(.dirty == 0) | .name'
"""
EPILOG_RM = """[b]Examples[/b]

  recursive worktree rm parser-fix

  recursive worktree rm parser-fix --force
"""
_WORKSPACE_HELP = "A folder of the repository (default: the current one)."

worktree_app = typer.Typer(help="The git worktrees that -w/--worktree made, and their sessions.",
                           no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the `worktree` command group to `app`."""
    app.add_typer(worktree_app, name="worktree")


@worktree_app.command("list", epilog=EPILOG_LIST)
def worktree_list(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", help=_WORKSPACE_HELP)] = None,
) -> None:
    """List this repository's worktrees made by recursive: name, branch, uncommitted files, session."""
    raise typer.Exit(list_command(json_output, workspace or Path.cwd()))


@worktree_app.command("rm", epilog=EPILOG_RM)
def worktree_rm(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The worktree's name (see `recursive worktree list`).")],
    force: Annotated[bool, typer.Option("--force", help="Delete it even with uncommitted changes or commits no other branch has.")] = False,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", help=_WORKSPACE_HELP)] = None,
) -> None:
    """Remove a worktree and its branch; one with uncommitted changes, or with commits HEAD lacks, only with --force (exit 1 otherwise)."""
    raise typer.Exit(rm_command(name, force, workspace or Path.cwd()))


def list_command(as_json: bool, start: Path) -> int:
    """Print the worktrees; exit 0 (2 outside a git repository)."""
    from ...features.worktrees import list_worktrees

    try:
        entries = list_worktrees(start.expanduser())
    except WorktreeError as exc:
        raise CliError(str(exc).replace("--worktree needs", "worktrees need"), exc.code) from None
    sessions = _sessions_by_worktree([entry.path for entry in entries])
    rows: list[dict[str, Any]] = [
        {"name": e.name, "branch": e.branch, "path": str(e.path), "dirty": e.dirty,
         "session": sessions.get(e.path, (None, None))[0], "status": sessions.get(e.path, (None, None))[1]}
        for e in entries]
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
        return 0
    if not rows:
        sys.stderr.write("no worktrees made by recursive here (make one with `recursive run -w NAME PROMPT`)\n")
    for row in rows:
        state = f"{row['dirty']} uncommitted" if row["dirty"] else "clean"
        session = f"{row['session']} ({row['status']})" if row["session"] else "no session"
        sys.stdout.write(f"{row['name']}\t{row['branch']}\t{state}\t{session}\t{row['path']}\n")
    return 0


def rm_command(name: str, force: bool, start: Path) -> int:
    """Remove the worktree and its branch; exit 1 with one line when it may not be."""
    from ...features.worktrees import remove_worktree

    try:
        entry = remove_worktree(start.expanduser(), name, force)
    except WorktreeError as exc:
        raise CliError(str(exc), exc.code) from None
    sys.stderr.write(f"removed worktree {entry.name} ({entry.path}) and branch {entry.branch}\n")
    return 0


def _sessions_by_worktree(paths: list[Path]) -> dict[Path, tuple[str, str]]:
    """The latest session (id, status) working in each worktree."""
    if not paths:
        return {}
    from ...core.settings import recursive_home
    from ...features.sessions.store import SessionStore

    found: dict[Path, tuple[str, str]] = {}
    for meta in SessionStore(recursive_home(os.environ)).list():
        workspace = Path(meta.workspace)
        for path in paths:
            if workspace == path or workspace.is_relative_to(path):
                found[path] = (meta.id, meta.status)  # (oldest first: the latest wins)
    return found
