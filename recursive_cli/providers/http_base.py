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
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

from ..core import utf8
from ..core.diagnostics import log_cause, redact
from ..core.messages import Message
from ..core.settings import key_variables
from .base import Completion, ProviderError, ProviderHooks, ToolSpec
from .http1 import InvalidURL, RequestTimeout, TransportError
from .http_client import USER_AGENT, ApiClient, EventStream, HttpStatusError
from .local import is_local_host
from .retry import BriefRetryError, RetryRules, call_with_retries, one_line
from .sse import Event

# getaddrinfo's "this name does not exist" (not the temporary EAI_AGAIN, which is retried).
_NO_SUCH_NAME = frozenset(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name))
# What every request says, as the SDK clients say it.
BASE_HEADERS = {"Accept": "application/json", "Content-Type": "application/json", "User-Agent": USER_AGENT}


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
        self._client = ApiClient(base_url or self.default_base_url, merged_headers(BASE_HEADERS, headers), timeout)
        self._endpoint = self._client.url(self.path)
        self._url = self._client.base_url.rstrip("/")
        self._reached = False  # the server has answered once: its address is right
        self._tool_specs: tuple[ToolSpec, ...] = ()
        self._tools_json = b"[]"

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                       hooks: ProviderHooks) -> Completion:
        """Ask the model for its next message, retrying transient failures."""
        body = self.request_body(messages, tools)
        return await call_with_retries(lambda: self._attempt(body, hooks), hooks)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

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

    async def _attempt(self, body: bytes, hooks: ProviderHooks) -> Completion:
        try:
            if self.stream:
                return await self._streamed(body, hooks)
            data = await self._client.post_json(self._endpoint, body)
            self._reached = True
            return self.parse_whole(data, hooks)
        except ProviderError as err:
            log_cause(err.reason, err, self._api_key)
            raise self._redacted(err) from None
        except (HttpStatusError, TransportError, json.JSONDecodeError, UnicodeDecodeError) as err:
            error = self._redacted(self._provider_error(err))  # a server's message may echo the key
            log_cause(error.reason, err, self._api_key)  # the cause, shown with -v
            raise error from None

    async def _streamed(self, body: bytes, hooks: ProviderHooks) -> Completion:
        async with self._client.post_events(self._endpoint, body) as events:
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
        if isinstance(err, json.JSONDecodeError):
            return malformed(self._url, f"invalid JSON ({err.msg})")
        if isinstance(err, UnicodeDecodeError):
            return malformed(self._url, f"bytes that are not UTF-8 ({one_line(str(err))})")
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
        if not self._reached and _in_chain(err, lambda e: isinstance(e, socket.gaierror)
                                           and e.errno in _NO_SUCH_NAME):
            return ProviderError(f"cannot resolve {parts.hostname}, the host of the base URL {self._url}: "
                                 f"{detail}; check its spelling")
        if not self._reached and _in_chain(err, lambda e: isinstance(e, ConnectionRefusedError)) \
                and is_local_host(parts.hostname):
            return BriefRetryError(f"connection to {self._url} refused: is the server running at "
                                   f"{parts.scheme}://{parts.netloc}?")
        return ProviderError(f"connection to {self._url} failed: {detail}", retryable=True)

    def _redacted(self, err: ProviderError) -> ProviderError:
        reason = redact(err.reason, self._api_key)
        if reason == err.reason:
            return err
        redacted = type(err)(reason, status=err.status, retry_after=err.retry_after)
        redacted.retryable = err.retryable
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


def _in_chain(err: BaseException, test: Callable[[BaseException], bool]) -> bool:
    """Whether `err` or an exception it was raised from (its cause or context) passes `test`."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if test(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def dumps(value: Any) -> bytes:
    """Compact JSON bytes, non-ASCII kept as it is (a lone surrogate becomes U+FFFD)."""
    return utf8.encode(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def as_dict(value: object) -> dict[str, Any]:
    """`value` when the server sent an object there, else an empty dict."""
    return value if isinstance(value, dict) else {}


def malformed(url: str, detail: str) -> ProviderError:
    """A response we cannot read; retried, since a second try usually reads fine."""
    return ProviderError(f"malformed response from {url}: {detail}", retryable=True)
