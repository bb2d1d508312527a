"""What the two HTTP providers share: one request cycle over our own client (`http_client.py`).

A subclass names its headers and retry rules and says how to build a request body, how to
read a whole response, how to read a stream's events and how to word an HTTP error; the
retry loop, the error mapping (one classified line per failure) and the API-key redaction
live here once.

Without an API key (a local server: SPEC §11 makes the key optional with a base URL) no
credential header is sent at all. Until the server has answered once, connection failures
that mean "wrong address" fail fast: a name that does not resolve at once, a local server
refusing the connection after a brief retry (`BriefRetryError`); a server that answered
before and went away gets the full backoff.

Time: a whole answer must have come within the request timeout, a stream may be silent
(keep-alives aside) for no longer than it, and every attempt, retry and wait before one
ends by the deadline the hooks carry (`deadline_of`: the run's --max-duration); meeting it
is a DeadlineError. An answer of any other shape than the API's (a `null`, a list, a
count that is text, a field of the wrong type) is a malformed response: the parsers read
every field through `as_dict`, `as_list`, `as_text`, `as_count` and `as_key`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import sys
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar
from urllib.parse import urlsplit

from ..core import utf8
from ..core.diagnostics import log_cause, redact
from ..core.errors import (
    BriefRetryError,
    ConfigError,
    CutShort,
    HttpProtocolError,
    HttpStatusError,
    InvalidURL,
    RedirectRefused,
    RequestTimeout,
    TooLarge,
    TransportError,
)
from ..core.messages import Message
from ..core.provider import Completion, DeadlineError, ProviderError, ProviderHooks, ToolSpec, deadline_of
from ..core.settings import key_variables
from ..net.headers import refused_header
from ..net.http_client import USER_AGENT, ApiClient, EventStream
from ..net.sse import Event
from .local import is_local_host
from .retry import RetryRules, call_with_retries, one_line

# getaddrinfo's "this name does not exist" (not the temporary EAI_AGAIN, which is retried).
_NO_SUCH_NAME = frozenset(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name))
# What every request says, as the SDK clients say it.
BASE_HEADERS = {"Accept": "application/json", "Content-Type": "application/json", "User-Agent": USER_AGENT}
T = TypeVar("T")


class StreamAssembler(Protocol):
    """Folds the events of one streamed response into a Completion."""

    def add(self, event: Event, hooks: ProviderHooks) -> bool:
        """Fold one event in; False once the stream has said all it will (later events are not read)."""
        ...

    def completion(self) -> Completion: ...


class HttpProvider:
    """Base of the providers that send our own request body through our own client."""

    name: ClassVar[str]
    path: ClassVar[str]
    default_base_url: ClassVar[str]
    rules: ClassVar[RetryRules]

    def __init__(self, model: str, stream: bool, api_key: str | None, base_url: str | None,
                 headers: Mapping[str, str], timeout: float) -> None:
        """`api_key` None or empty: a keyless server, sent no credential at all."""
        self.model = model
        self.stream = stream
        self._api_key = api_key or None
        sent = merged_headers(BASE_HEADERS, headers)
        self._check_headers(sent)
        self._client = ApiClient(base_url or self.default_base_url, sent, timeout)
        self._timeout = timeout
        self._endpoint = self._client.url(self.path)
        self._url = self._client.base_url.rstrip("/")
        self._reached = False  # the server has answered once: its address is right
        self._tool_specs: tuple[ToolSpec, ...] = ()
        self._tools_json = b"[]"

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                       hooks: ProviderHooks) -> Completion:
        """Ask the model for its next message, retrying transient failures, all of it by the
        deadline the hooks carry (the run's --max-duration), if any."""
        body = self.request_body(messages, tools)
        deadline = deadline_of(hooks)
        return await call_with_retries(lambda: self._attempt(body, hooks, deadline), hooks, deadline=deadline)

    @property
    def base_url(self) -> str:
        """The base URL requests go under, without its trailing slash."""
        return self._url

    async def fetch(self, path: str, within: float) -> object:
        """GET `path` under the base URL, parsed, in `within` seconds at most; a one-line
        ProviderError when it cannot be had (no retries: whoever asks can say what to do)."""
        try:
            return await asyncio.wait_for(self._client.get_json(self._client.url(path)), within)
        except asyncio.TimeoutError:
            error = ProviderError(f"request to {self._url} timed out")
        except (HttpStatusError, TransportError, ValueError) as err:
            error = self._redacted(self._provider_error(err))
            log_cause(error.reason, err, self._api_key)
        raise error

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

    def _check_headers(self, headers: Mapping[str, str]) -> None:
        """ConfigError, before anything is sent, for a header that would break the request's
        framing: an API key (or a configured header) holding CR, LF or NUL."""
        for name, value in headers.items():
            why = refused_header(name, value)
            if why is None:
                continue
            if self._api_key and self._api_key in value:
                ours, theirs = key_variables(self.name)
                raise ConfigError(f"the API key ({ours} or {theirs}) holds a line break or NUL: it cannot "
                                  "be sent as a header; set it again without one")
            raise ConfigError(f"the header {name[:60]!r} cannot be sent: {why}")

    # -- what a subclass provides ----------------------------------------------------------------

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> bytes:
        raise NotImplementedError

    def new_stream(self) -> StreamAssembler:
        raise NotImplementedError

    def parse_whole(self, data: object, hooks: ProviderHooks) -> Completion:
        raise NotImplementedError

    def status_error(self, err: HttpStatusError) -> ProviderError:
        """A ProviderError for an answer with status 400 or more."""
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------------

    def encoded_tools(self, tools: Sequence[ToolSpec], wire: Callable[[ToolSpec], dict[str, Any]]) -> bytes:
        """The tools as JSON, encoded again only when the tool set changes."""
        specs = tuple(tools)
        if specs != self._tool_specs:  # tuple equality checks identity first: cheap when unchanged
            self._tools_json = dumps([wire(spec) for spec in specs])
            self._tool_specs = specs
        return self._tools_json

    async def _attempt(self, body: bytes, hooks: ProviderHooks, deadline: float | None = None) -> Completion:
        """One request. A whole answer must have come within the timeout (a stream: no silence
        longer than it, keep-alives aside); any answer by the deadline.

        The error is raised after the `except` that made it, so that it does not carry the
        exception it was made from (nor that one's frames and buffers) into the retries.
        """
        total = None if self.stream else time.monotonic() + self._timeout
        until = deadline if total is None or (deadline is not None and deadline <= total) else total
        try:
            return await _by(self._once(body, hooks), until)
        except _TimeUp:
            error = (DeadlineError(f"no answer from {self._url} in the time left") if until == deadline
                     else ProviderError(f"request to {self._url} timed out", retryable=True))
        except ProviderError as err:
            log_cause(err.reason, err, self._api_key)
            error = self._redacted(err)
        except (HttpStatusError, TransportError, ValueError) as err:  # (ValueError: JSON, UTF-8)
            error = self._redacted(self._provider_error(err))  # a server's message may echo the key
            log_cause(error.reason, err, self._api_key)  # the cause, shown with -v
        raise error

    async def _once(self, body: bytes, hooks: ProviderHooks) -> Completion:
        if self.stream:
            return await self._streamed(body, hooks)
        data = await self._client.post_json(self._endpoint, body)
        self._reached = True
        return self.parse_whole(data, hooks)

    async def _streamed(self, body: bytes, hooks: ProviderHooks) -> Completion:
        async with self._client.post_events(self._endpoint, body, idle=self._timeout) as events:
            self._reached = True
            state = self.new_stream()
            await _fold(events, state, hooks)
        return state.completion()

    def _provider_error(self, err: Exception) -> ProviderError:
        if isinstance(err, HttpStatusError):
            self._reached = True
            return self._status_error(err)
        if isinstance(err, RequestTimeout):
            return ProviderError(f"request to {self._url} timed out", retryable=True)
        if isinstance(err, TooLarge):  # (not retried: the same server would send the same again)
            return ProviderError(f"malformed response from {self._url}: {err}", unavailable=False)
        if isinstance(err, RedirectRefused):
            return ProviderError(one_line(str(err)))
        if isinstance(err, HttpProtocolError) and not isinstance(err, CutShort):
            return malformed(self._url, one_line(str(err)))
        if isinstance(err, json.JSONDecodeError):
            return malformed(self._url, f"invalid JSON ({err.msg})")
        if isinstance(err, UnicodeDecodeError):
            return malformed(self._url, f"bytes that are not UTF-8 ({one_line(str(err))})")
        if isinstance(err, ValueError):
            return malformed(self._url, one_line(str(err)))
        return self._connection_error(err)

    def _status_error(self, err: HttpStatusError) -> ProviderError:
        error = self.status_error(err)
        if error.status == 401 and self._api_key is None:
            ours, theirs = key_variables(self.name)
            return ProviderError(f"HTTP 401 from {self._url}: the server wants an API key (none was sent); "
                                 f"set {ours} (or {theirs})", status=401)
        return error

    def _connection_error(self, err: Exception) -> ProviderError:
        """One line for a request that reached no server; fast failures for a wrong address."""
        detail = one_line(str(err)) or type(err).__name__
        if isinstance(err, InvalidURL):
            return ProviderError(f"invalid base URL {self._url}: {detail}")
        parts = urlsplit(self._url)
        unresolved = _in_chain(err, lambda e: isinstance(e, socket.gaierror) and e.errno in _NO_SUCH_NAME)
        if not self._reached and isinstance(unresolved, OSError):
            # the resolver's own reason once ("Name or service not known"), not the chain's repeats of it
            reason = unresolved.strerror or "no such host"
            return ProviderError(f"cannot resolve {parts.hostname}, the host of the base URL {self._url} "
                                 f"({reason}); check its spelling")
        if not self._reached and _in_chain(err, lambda e: isinstance(e, ConnectionRefusedError)) is not None \
                and is_local_host(parts.hostname):
            return BriefRetryError(f"connection to {self._url} refused: is the server running at "
                                   f"{parts.scheme}://{parts.netloc}?")
        return ProviderError(f"connection to {self._url} failed: {detail}", retryable=True)

    def _redacted(self, err: ProviderError) -> ProviderError:
        reason = redact(err.reason, self._api_key)
        if reason == err.reason:
            return err
        redacted = type(err)(reason, status=err.status, retry_after=err.retry_after)
        redacted.retryable, redacted.unavailable = err.retryable, err.unavailable
        return redacted


def merged_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """The headers of `layers`, a later layer's winning over an earlier one's of any case."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        merged.update((name.lower(), (name, value)) for name, value in layer.items())
    return dict(merged.values())


async def _fold(events: EventStream, state: StreamAssembler, hooks: ProviderHooks) -> None:
    """Fold the stream's events into `state` until it has heard all it needs, then drain the rest."""
    async for event in events:
        if not state.add(event, hooks):
            await events.drain()
            return


class _TimeUp(Exception):
    """The time given to one attempt ran out."""


async def _by(work: Coroutine[Any, Any, T], until: float | None) -> T:
    """`work`'s result, or _TimeUp once `time.monotonic()` reaches `until` (None: no limit);
    the work is cancelled then, and its connection closed."""
    if until is None:
        return await work
    loop = asyncio.get_running_loop()
    when = loop.time() + (until - time.monotonic())
    if sys.version_info < (3, 11):  # pragma: no cover (no asyncio.timeout_at: a task)
        try:
            return await asyncio.wait_for(work, max(when - loop.time(), 0.0))
        except asyncio.TimeoutError:
            raise _TimeUp() from None
    scope = asyncio.timeout_at(when)
    try:
        async with scope:
            return await work
    except TimeoutError:
        if scope.expired():
            raise _TimeUp() from None
        raise


def _in_chain(err: BaseException, test: Callable[[BaseException], bool]) -> BaseException | None:
    """The first of `err` and the exceptions it was raised from (cause or context) that passes `test`."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if test(current):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def dumps(value: Any) -> bytes:
    """Compact JSON bytes, non-ASCII kept as it is (a lone surrogate becomes U+FFFD)."""
    return utf8.encode(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def as_dict(value: object) -> dict[str, Any]:
    """`value` when the server sent an object there, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """`value` when the server sent an array there, else an empty list."""
    return value if isinstance(value, list) else []


def as_text(value: object) -> str:
    """`value` when the server sent a string there, else "" (`null` is no text)."""
    return value if isinstance(value, str) else ""


def served_by(completion: Completion, response: dict[str, Any]) -> Completion:
    """`completion` with the `model` and `id` the response says it has (telemetry's
    `gen_ai.response.model` and `.id`), when it says so."""
    model, response_id = as_text(response.get("model")), as_text(response.get("id"))
    if not model and not response_id:
        return completion
    return dataclasses.replace(completion, model=model[:200], response_id=response_id[:200])


def as_count(value: object) -> int:
    """A token count: a number the server sent there, else 0 (never negative, never a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return 0  # (NaN is not more than 0)
    return int(value) if value < 1e18 else 10**18


def as_key(value: object, default: int) -> int:
    """An `index` field: the integer the server sent there, else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def malformed(url: str, detail: str) -> ProviderError:
    """A response we cannot read; retried, since a second try usually reads fine."""
    return ProviderError(f"malformed response from {url}: {detail}", retryable=True, unavailable=False)
