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
     ├── ToolError                  a tool could not do what was asked (goes back to the model)
     │    └── PatchError            a patch cannot be parsed or applied (`applied`: what was kept)
     ├── TransportError             no (whole) HTTP answer (net/http1.py): chained to its cause
     │    ├── ConnectError          no connection (a name not found, a refusal, TLS, a proxy's no)
     │    ├── RequestTimeout        connecting, sending or an answer took longer than the timeout
     │    ├── HttpProtocolError     the answer is not HTTP/1.1 as we can read it
     │    │    ├── CutShort         the connection ended before the whole answer had come
     │    │    └── TooLarge         a body, line or event over caps.LINE_CAP
     │    ├── InvalidURL            a URL (or proxy URL) we cannot send to
     │    ├── HeaderRefused         a header name or value holding CR, LF or NUL: nothing is sent
     │    └── RedirectRefused       https to http, or to a scheme we cannot send to
     ├── HttpStatusError            an answer with status 400 or more (`status`, `headers`, `body`)
     ├── McpHttpError               an MCP server over HTTP answered one message with an error status
     ├── McpSessionGone             a 404 for the session's id: the server dropped it (started again)
     └── StreamTooLongError         an event-stream line or event over LINE_CAP (also a ValueError)

    ProviderError also holds DeadlineError (the run's --max-duration came first: not retried)
    and BriefRetryError (a local server refusing: retried briefly).

    Interrupted                     control flow, not a failure: the interrupt token fired

`Interrupted` stands apart on purpose: it is how a cancellation travels up from whatever the
run was awaiting, and it ends in the `interrupted` finish reason (exit 130/143), so a handler
catching `RecursiveError` to report a failure must never swallow it.
"""

from __future__ import annotations

from collections.abc import Mapping
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


# -- http --

class DeadlineError(ProviderError):
    """The run's deadline came before the model's answer, or left no time for a retry: not
    retried, and not the provider's failure — the run ends as its --max-duration says."""

    def __init__(self, reason: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(reason, status=status, retryable=False, retry_after=retry_after)


class BriefRetryError(ProviderError):
    """A failure worth only a brief retry: a local server that refuses the connection may be
    starting up, but is far more likely not running at all."""

    def __init__(self, reason: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(reason, status=status, retryable=True, retry_after=retry_after)


class TransportError(RecursiveError):
    """No (whole) answer: the connection failed, broke, or the server spoke something else."""


class ConnectError(TransportError):
    """No connection to the server (the cause says why: a name not found, a refusal, TLS, a proxy)."""


class RequestTimeout(TransportError):
    """Connecting, sending or waiting for the answer took longer than the timeout."""


class HttpProtocolError(TransportError):
    """The server's answer is not HTTP/1.1 as we can read it, or it ended too soon."""


class CutShort(HttpProtocolError):
    """The connection ended before the whole answer had come."""


class TooLarge(HttpProtocolError):
    """A body read whole, a line or an event over LINE_CAP: the peer is cut off there."""


class InvalidURL(TransportError):
    """A URL we cannot send to (no host, or a scheme other than http and https), or a proxy
    URL we cannot use."""


class HeaderRefused(TransportError):
    """A header whose name or value holds CR, LF or NUL (or a name that is no token): it would
    break the request's framing, so nothing is sent."""


class RedirectRefused(TransportError):
    """A redirect we do not follow: from https to plain http, or to a scheme we cannot send to."""


class HttpStatusError(RecursiveError):
    """An answer with status 400 or more; `body` is its JSON (or its text, stripped), `text` the text."""

    def __init__(self, status: int, headers: Mapping[str, str], body: object, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}" if text else f"HTTP {status}")
        self.status = status
        self.headers = headers
        self.body = body
        self.text = text


class McpHttpError(RecursiveError):
    """An MCP server over HTTP answered one message with an error status (that call alone fails)."""


class McpSessionGone(RecursiveError):
    """A 404 for a message that carried the session's id: the server no longer knows it."""


class StreamTooLongError(RecursiveError, ValueError):
    """A line or an event of an event stream is longer than LINE_CAP."""


class Interrupted(Exception):
    """Raised by `InterruptToken.race` when the token fires first (control flow, not a failure)."""
