"""`-w/--worktree [NAME]`: a new session in a new git worktree of the workspace's repository
(features/worktrees); the command's options then name that worktree as the workspace."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import CliError, WorktreeError
from .errors import EXIT_USAGE
from .options import CommonOptions

if TYPE_CHECKING:
    from ..features.worktrees import WorktreeState


def enter_worktree(common: CommonOptions, name: str, continuing: bool = False
                   ) -> tuple[CommonOptions, WorktreeState]:
    """`common` with a new worktree (`name`, "" for the session id) as its workspace, and the
    session id chosen now; CliError (exit 2 for a folder in no repository) when it cannot be made."""
    if continuing:
        raise CliError("--worktree starts a new session in a new worktree; it cannot take --continue "
                       "(`recursive resume SESSION` goes back into a session's worktree)", EXIT_USAGE)
    from ..features.sessions.ids import new_session_id
    from ..features.worktrees import create_worktree

    session_id = common.session_id or new_session_id()
    try:
        state, inside = create_worktree((common.workspace or Path.cwd()).expanduser(), name or session_id)
    except WorktreeError as exc:
        raise CliError(str(exc), exc.code) from None
    return replace(common, workspace=inside, session_id=session_id), state


def discard(state: WorktreeState | None) -> None:
    """Remove a worktree made for a command that could not start (it holds nothing yet)."""
    if state is not None:
        from ..features.worktrees import discard_worktree

        discard_worktree(state)
