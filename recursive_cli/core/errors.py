"""Every exception recursive raises on purpose, in one place; each message is one line for the user.

This is the bottom layer: it imports nothing from the package, so any module may import it.
The modules that raise these errors re-export them under their old names.

    RecursiveError                  base of every failure recursive reports itself
     ├── ConfigError                a setting is missing or wrong (names the file, variable or flag)
     │    ├── SandboxUnavailableError  the OS sandbox the run needs cannot start here: exit 2
     │    └── BadValueError         a bad value named on the command line: exit 2
     ├── ScriptError                the scripted provider's script file is missing or malformed
     ├── ProviderError              a model request failed (`status`, `retryable`, `retry_after`)
     │    └── ContextLengthError    the conversation is too long for the model's context window
     ├── SessionError               a session cannot be created, read, written or found
     │    ├── SessionWriteError     a session file or folder cannot be written
     │    ├── SessionExistsError    a new session was asked for where a transcript already is
     │    ├── SessionReadError      a transcript or meta.json is missing or unreadable
     │    │    ├── SessionSchemaError   written by a newer version of recursive
     │    │    └── SessionStateError    a feature's saved state (goal, loop) is damaged
     │    ├── SessionInUseError     another live process owns the session
     │    ├── SessionNotFoundError  no session matches the id or prefix
     │    └── AmbiguousSessionError an id prefix matches more than one session
     ├── CheckpointError            a checkpoint operation failed
     │    ├── GitMissingError       no `git` executable on PATH
     │    ├── GitCommandError       a git command failed (its stderr is in the message)
     │    └── UnknownTurnError      the session has no checkpoint for that turn
     └── ToolError                  a tool could not do what was asked (goes back to the model)
          └── PatchError            a patch cannot be parsed or applied (`applied`: what was kept)

    Interrupted                     control flow, not a failure: the interrupt token fired

`Interrupted` stands apart on purpose: it is how a cancellation travels up from whatever the
run was awaiting, and it ends in the `interrupted` finish reason (exit 130/143), so a handler
catching `RecursiveError` to report a failure must never swallow it.
"""

from __future__ import annotations

from typing import Protocol


class RecursiveError(Exception):
    """Base of every failure recursive reports itself; the message is one line for the user."""


class ConfigError(RecursiveError):
    """A setting is missing or wrong; the message names the file or variable and the key."""


class BadValueError(ConfigError):
    """A bad value named on the command line (a `--api-base` without a scheme): a usage
    error, exit 2; the same value in a config file or a variable is a ConfigError, exit 1 (SPEC §13)."""


class SandboxUnavailableError(ConfigError):
    """The command sandbox the run asks for cannot start here (no bubblewrap, no user
    namespaces, not Linux): the run refuses to start, exit 2, saying how to fix it."""


class ScriptError(RecursiveError):
    """The script file is missing or not in the expected format."""


class ProviderError(RecursiveError):
    """A request failed; `reason` is one line a user can act on."""

    def __init__(self, reason: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class ContextLengthError(ProviderError):
    """The conversation is too long for the model's context window."""


class SessionError(RecursiveError):
    """Base of every error the sessions package raises; its message is one line for the user."""


class SessionWriteError(SessionError):
    """A session file or folder cannot be written (read-only home, disk full, ...)."""


class SessionExistsError(SessionError):
    """A new session was asked for in a folder that already holds a transcript."""


class SessionReadError(SessionError):
    """A session's transcript or meta.json is missing or cannot be read."""


class SessionSchemaError(SessionReadError):
    """The session was written by a newer version of recursive."""


class SessionStateError(SessionReadError):
    """A feature's state saved in meta.json (the goal, the loop) is missing or damaged."""

    def __init__(self, feature: str, problem: str) -> None:
        super().__init__(f"the session's {feature} state in meta.json is damaged ({problem})")
        self.feature = feature


class SessionInUseError(SessionError):
    """Another live process owns the session."""


class SessionNotFoundError(SessionError):
    """No session matches the given id or prefix."""


class AmbiguousSessionError(SessionError):
    """An id prefix matches more than one session."""


class CheckpointError(RecursiveError):
    """A checkpoint operation failed; the message is one line for the user."""


class GitMissingError(CheckpointError):
    """`git` is not installed (or not on PATH)."""


class GitCommandError(CheckpointError):
    """A git command exited with an error."""


class UnknownTurnError(CheckpointError):
    """The session has no checkpoint for the requested turn."""


class ToolError(RecursiveError):
    """A tool could not do what was asked; the message goes back to the model as an error result."""


class AppliedChanges(Protocol):
    """What a partly applied patch had already changed (a `tools.patch_format.PatchResult`)."""

    def summary(self) -> str:
        """The changed files, one per line."""
        ...


class PatchError(ToolError):
    """A patch that cannot be parsed or applied; the message says why, in one line.

    ``applied`` lists the operations that had already been carried out (and were kept)
    when a later one failed, or is ``None`` when nothing was changed.
    """

    def __init__(self, message: str, applied: AppliedChanges | None = None) -> None:
        super().__init__(message)
        self.applied = applied


class Interrupted(Exception):
    """Raised by `InterruptToken.race` when the token fires first (control flow, not a failure)."""


# -- launch --


class CliError(RecursiveError):
    """A command cannot go on: `error: <message>` on stderr and the process exits `code`
    (2 for a usage error, 1 otherwise; SPEC §13). Raised anywhere under a front end, reported
    once at its top (surfaces/cli/usage.py, surfaces/headless/main.py)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class UsageError(CliError):
    """A command line that cannot be run: a headless flag or its value (exit 2)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message, code)


class FlagValueError(RecursiveError, ValueError):
    """A value of a flag our own check refused (launch/options.py); the message says what is
    accepted ("expected …"), and the command line's error names the flag (exit 2)."""


class OutputOptionError(UsageError, ValueError):
    """A bad `--output-last-message` or `--output-schema` (exit 2); the message names the flag."""


class ControlError(RecursiveError):
    """The headless client answered a control request with an error, or went away before it answered."""


class StreamLineError(RecursiveError, ValueError):
    """A stream-json stdin line that is not one of the headless protocol's messages."""


class TaskFileError(RecursiveError, ValueError):
    """A fleet's tasks file that cannot be used; the message is the whole `error:` line's text."""


class WorkspaceError(RecursiveError):
    """A fleet task's workspace cannot be had on this worker."""


class RayMissingError(RecursiveError):
    """Ray is not installed (a fleet on a cluster needs it); the message says how to get it."""
