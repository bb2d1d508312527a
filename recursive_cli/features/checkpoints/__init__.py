"""Checkpoints (SPEC §8): the workspace snapshotted before and after every turn, and undone on request.

Snapshots live in a shadow git repository per workspace under `$RECURSIVE_HOME/checkpoints/`,
driven through real `git` subprocesses with `GIT_DIR`, `GIT_WORK_TREE` and `GIT_INDEX_FILE`
pointing there, so the workspace's own `.git` is never read or written and folders that are
not git repositories work the same.

    git.py           running git against a shadow repository (environment, retries, errors)
    repo.py          where a workspace's shadow repository lives; creating it; the ref names
    limits.py        how big a workspace a run snapshots (files, seconds); folders that are no project
    scan.py          what changed since the last snapshot, and what is skipped (size cap, nested repos)
    checkpointer.py  GitCheckpointer: snapshots, the session's turns, diffs between snapshots
    pipes.py         the long-lived git processes that write refs and commits and resolve refs
    attribution.py   which changes are the session's own: the windows around its tool calls and jobs
    calls.py         which tool calls get a window, and the paths a file tool may claim
    journal.py       what restores wrote, so other sessions' windows do not take it for theirs
    restore.py       planning and applying "put the workspace back as it was before turn N"
    observer.py      the observer that snapshots around every turn, tool call and job of a runtime
    gc.py            dropping the refs of sessions that no longer exist

Errors:

    CheckpointError            a checkpoint operation failed; the message is one line for the user
     ├── GitMissingError       no `git` executable on PATH
     ├── GitCommandError       a git command failed (its stderr is in the message)
     ├── UnknownTurnError      the session has no checkpoint for that turn
     └── CheckpointsOff        the workspace is over the limits (limits.py): none this session
"""

from __future__ import annotations

# re-exported: the package's errors are defined in errors.py and importable from here
from ...core.errors import CheckpointError, CheckpointsOff, GitCommandError, GitMissingError, UnknownTurnError  # noqa: F401
