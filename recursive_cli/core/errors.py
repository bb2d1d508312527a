"""Every exception recursive raises on purpose, in one place; each message is one line for the user.

This is the bottom layer: it imports nothing from the package, so any module may import it.
The modules that raise these errors re-export them under their old names. The whole tree
(`*`: added by its module's owner in the issue-28 branches, spelled as planned; the
coordinator checks the names as they merge):

    RecursiveError                  base of every failure recursive reports itself
     ├── ConfigError                a setting is missing or wrong (names the file, variable or flag)
     │    ├── SandboxUnavailableError  the OS sandbox the run needs cannot start here: exit 2
     │    ├── BadValueError         a bad value named on the command line: exit 2
     │    │    ├── McpConfigError   an MCP configuration that cannot be read (`from_flag`: exit 2, else 1)
     │    │    └── AgentsError      `--agents` (or the SDK's `agents`) that is not a JSON object: exit 2
     │    ├── HookConfigError       a settings file's hooks cannot be used (`from_flag`: exit 2)
     │    └── TrustStoreError       `trust.json` cannot be read or written
     ├── ScriptError                the scripted provider's script file is missing or malformed
     ├── ProviderError              a model request failed (`status`, `retryable`, `retry_after`)
     │    ├── ContextLengthError    the conversation is too long for the model's context window
     │    ├── DeadlineError         --max-duration came before the answer, or left no time to retry
     │    └── BriefRetryError       a local server refusing: retried briefly (providers/retry.py)
     ├── SessionError               a session cannot be created, read, written or found
     │    ├── SessionWriteError     a session file or folder cannot be written
     │    ├── SessionExistsError    a new session was asked for where a transcript already is
     │    ├── SessionReadError      a transcript or meta.json is missing or unreadable
     │    │    ├── SessionSchemaError   written by a newer version of recursive
     │    │    └── SessionStateError    a feature's saved state (goal, loop) is damaged
     │    ├── SessionInUseError     another live process owns the session
     │    ├── SessionNotFoundError  no session matches the id or prefix
     │    ├── AmbiguousSessionError an id prefix matches more than one session
     │    ├── ResumePointError      `--resume-session-at` names no message, or its guard refuses
     │    └── BundleError           a file is not a session bundle this version can read
     ├── CheckpointError            a checkpoint operation failed
     │    ├── GitMissingError       no `git` executable on PATH
     │    ├── GitCommandError       a git command failed (its stderr is in the message)
     │    ├── UnknownTurnError      the session has no checkpoint for that turn
     │    ├── CheckpointsOff        the workspace is too big (or not a project): no snapshots this session
     │    └── WatchUnavailable      the workspace cannot be watched here (snapshots walk it instead)
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
     ├── StreamTooLongError         an event-stream line or event over LINE_CAP (also a ValueError)
     ├── McpError                   talking to an MCP server failed
     │    ├── McpProtocolError      a server's answer is not what the protocol says it is
     │    ├── RpcError              the server answered a request with an error (`code`, `data`)
     │    ├── ConnectionClosed      the connection to the server is gone: no answer will come
     │    │    └── CutOff           we ended it: the server broke a limit
     │    └── McpCallError          a tool call, prompt or read got no result (`closed`)
     ├── CliError                   a command cannot go on: `error:` line, exit `code` (front ends' top)
     │    └── UsageError            a command line that cannot be run (headless flags): exit 2
     │         └── OutputOptionError  a bad --output-last-message/--output-schema (also a ValueError)
     ├── FlagValueError             a flag's value our own check refused: exit 2 (also a ValueError)
     ├── ControlError               the headless client refused a control request, or went away
     ├── StreamLineError            a stream-json stdin line that is not the protocol (also a ValueError)
     ├── TaskFileError              a fleet tasks file that cannot be used (also a ValueError)
     ├── ImageError                 a file given as an image is missing, not an image or too big (also a ValueError)
     ├── WorkspaceError             a fleet task's workspace cannot be had on this worker
     ├── WorktreeError              a git worktree cannot be made or removed (`code`: the exit code)
     └── RayMissingError            `fleet` on a cluster without Ray installed

    Interrupted                     control flow: the interrupt token fired
    HaltTurn                        control flow: an after-call step ends the turn (`result`)
    PromptBlocked                   control flow: a prompt filter refused the prompt

The three control-flow signals stand apart from `RecursiveError` on purpose: none is a
failure recursive reports. `Interrupted` is how a cancellation travels up from whatever the
run was awaiting, and it ends in the `interrupted` finish reason (exit 130/143); `HaltTurn`
(a PostToolUse hook's `continue: false`) ends the turn after the call that ran, which the
kernel catches around that call; `PromptBlocked` (a UserPromptSubmit hook's refusal) ends the
turn before the prompt joins the conversation, which the runtime catches. A handler catching
`RecursiveError` to report a failure must never swallow one of them.

A class that used to be a `ValueError` (StreamTooLongError, OutputOptionError, StreamLineError,
TaskFileError, FlagValueError, ImageError) stays one too, so every `except ValueError` that caught it still
does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


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
    """A request failed; `reason` is one line a user can act on. `unavailable`: the server
    could not answer now (a status worth retrying, a timeout, no connection), so the same run
    may well work later (exit 75); by default whether it is `retryable`, but an answer that
    is not the API's (malformed) is retried and still no outage."""

    def __init__(self, reason: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None, unavailable: bool | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.unavailable = retryable if unavailable is None else unavailable


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


class ResumePointError(SessionError):
    """A truncating resume (`--resume-session-at`) cannot be made: no message has that uuid, or
    `--resume-drops-turn` finds more would be dropped than the declared turn (Claude's words)."""


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


class CheckpointsOff(CheckpointError):
    """The workspace is too big to snapshot within the limits (or is not a project folder):
    the session goes on without checkpoints; the message says why and what to change."""


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


# -- values --


class McpConfigError(BadValueError):
    """An MCP configuration that cannot be read: names the file (or flag) and the key.
    `from_flag`: named on the command line (`--mcp-config`: exit 2), not a file found on disk
    or an environment variable (exit 1), as docs/exit-codes.md says."""

    def __init__(self, message: str, from_flag: bool = True) -> None:
        super().__init__(message)
        self.from_flag = from_flag


class AgentsError(BadValueError):
    """Subagent definitions given on the command line (`--agents`, the SDK's `agents`) that are
    not a JSON object of definitions (features/subagents): exit 2."""


# -- git --


class BundleError(SessionError):
    """The file is not a session bundle this version can read (missing, corrupt, newer)."""


class HookConfigError(ConfigError):
    """A settings file whose hooks cannot be used: `FILE: hooks.Stop[0].hooks: expected a list`.
    `from_flag`: named by `--settings` (exit 2), not a settings file found on disk (exit 1)."""

    def __init__(self, message: str, from_flag: bool = True) -> None:
        super().__init__(message)
        self.from_flag = from_flag


class McpError(RecursiveError):
    """Talking to an MCP server failed; the message says how, in one line."""


class McpProtocolError(McpError):
    """A server's answer that is not what the protocol says it is."""


class RpcError(McpError):
    """An error the server answered a request with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message or f"error {code}")
        self.code = code
        self.data = data


class ConnectionClosed(McpError):
    """The connection to the server is gone: no answer will come."""


class CutOff(ConnectionClosed):
    """We ended the connection: the server broke a limit (it would not read our answers)."""


class McpCallError(McpError):
    """A call that got no result: `closed` when the connection to the server is gone."""

    def __init__(self, message: str, closed: bool = False) -> None:
        super().__init__(message)
        self.closed = closed


class HaltTurn(Exception):
    """Control flow, not a failure: an after-call step ends the turn at once (a PostToolUse
    hook's `continue: false`); the message is why, `result` what the model gets for the call
    that ran (a `core.tool.ToolResult`, which this bottom layer cannot name). The kernel
    catches it around that call."""

    def __init__(self, reason: str, result: object | None = None) -> None:
        super().__init__(reason)
        self.result = result


class PromptBlocked(Exception):
    """Control flow, not a failure: a prompt filter refused the prompt; the message is why
    (the turn ends, the prompt unsent). The runtime catches it."""


class TrustStoreError(ConfigError):
    """`trust.json` cannot be read or written: names the file and why."""


class WatchUnavailable(CheckpointError):
    """This workspace cannot be watched here (not Linux, a remote filesystem, too many folders):
    snapshots walk it instead, never an error the user sees."""


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


class ImageError(RecursiveError, ValueError):
    """A file given as an image (`-i`, `@file.png`) that cannot be one: missing, not a PNG, JPEG,
    GIF or WebP, or too big; the message says which, in one line."""


class WorkspaceError(RecursiveError):
    """A fleet task's workspace cannot be had on this worker."""


class RayMissingError(RecursiveError):
    """Ray is not installed (a fleet on a cluster needs it); the message says how to get it."""


class WorktreeError(RecursiveError):
    """A git worktree for `-w` cannot be made, or one cannot be removed; `code` is the exit code
    (2: the command line cannot work here, e.g. not a git repository; 1: otherwise)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code
