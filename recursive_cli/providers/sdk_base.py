"""What the SDK-backed providers share: one request cycle over the SDK's low-level `post()`.

A subclass names its SDK's client and error classes and says how to build a request body,
how to read a whole response and how to assemble a stream; the retry loop, the error mapping
(one classified line per failure) and the API-key redaction live here once.

Without an API key (a local server: SPEC §11 makes the key optional with a base URL) no
credential header is sent at all: each request omits them, so the SDK neither invents one
nor reads one from the environment. Until the server has answered once, connection failures
that mean "wrong address" fail fast: a name that does not resolve at once, a local server
refusing the connection after a brief retry (`BriefRetryError`); a server that answered
before and went away gets the full backoff.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

import httpx2

from ..core import utf8
from ..core.diagnostics import log_cause, redact
from ..core.messages import Message
from ..core.settings import key_variables
from .base import Completion, ProviderError, ProviderHooks, ToolSpec
from .local import is_local_host
from .retry import BriefRetryError, call_with_retries, one_line

# getaddrinfo's "this name does not exist" (not the temporary EAI_AGAIN, which is retried).
_NO_SUCH_NAME = frozenset(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name))
# The headers an SDK would carry a credential in; omitted on every request without a key.
AUTH_HEADERS = ("Authorization", "X-Api-Key")
# With one of these set, a plain-http request may still go through a TLS proxy.
_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


class StreamAssembler(Protocol):
    """Folds the items of one streamed response into a Completion."""

    def add(self, item: object, hooks: ProviderHooks) -> None: ...

    def completion(self) -> Completion: ...


class SdkErrors:
    """The SDK's error classes a provider maps to ProviderError."""

    def __init__(self, base: type[Exception], status: type[Exception], timeout: type[Exception],
                 connection: type[Exception]) -> None:
        self.base, self.status, self.timeout, self.connection = base, status, timeout, connection


class SdkProvider:
    """Base of the providers that send our own request body through an official SDK's client."""

    name: ClassVar[str]
    path: ClassVar[str]
    errors: ClassVar[SdkErrors]
    stream_cls: ClassVar[Any]
    omit: ClassVar[Any]  # the SDK's `Omit` marker: a header given as `omit()` is not sent

    def __init__(self, model: str, stream: bool, client: Any, api_key: str | None) -> None:
        """`api_key` None or empty: a keyless server, sent no credential at all."""
        self.model = model
        self.stream = stream
        self._client = client
        self._api_key = api_key or None
        self._url = str(client.base_url).rstrip("/")
        self._options: dict[str, Any] = {} if api_key else {
            "headers": {header: self.omit() for header in AUTH_HEADERS}}
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
        await self._client.close()

    # -- what a subclass provides ----------------------------------------------------------------

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> bytes:
        raise NotImplementedError

    def new_stream(self) -> StreamAssembler:
        raise NotImplementedError

    def parse_whole(self, data: object, hooks: ProviderHooks) -> Completion:
        raise NotImplementedError

    def status_error(self, err: Any) -> ProviderError:
        """A ProviderError for the SDK's HTTP status error."""
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
            data = await self._client.post(self.path, cast_to=object, content=body, options=self._options)
            self._reached = True
            return self.parse_whole(data, hooks)
        except ProviderError as err:
            log_cause(err.reason, err, self._api_key)
            raise self._redacted(err) from None
        except (self.errors.base, httpx2.HTTPError, httpx2.InvalidURL, json.JSONDecodeError,
                UnicodeDecodeError) as err:
            error = self._redacted(self._provider_error(err))  # SDK messages may echo the key
            log_cause(error.reason, err, self._api_key)  # the cause, shown with -v
            raise error from None

    async def _streamed(self, body: bytes, hooks: ProviderHooks) -> Completion:
        stream = await self._client.post(self.path, cast_to=object, content=body, stream=True,
                                         stream_cls=self.stream_cls[object], options=self._options)
        self._reached = True
        state = self.new_stream()
        try:
            async for item in stream:
                state.add(item, hooks)
        finally:
            await stream.close()
        return state.completion()

    def _provider_error(self, err: Exception) -> ProviderError:
        if isinstance(err, self.errors.status):
            self._reached = True
            return self._status_error(err)
        if isinstance(err, self.errors.timeout):
            return ProviderError(f"request to {self._url} timed out", retryable=True)
        if isinstance(err, (self.errors.connection, httpx2.HTTPError, httpx2.InvalidURL)):
            return self._connection_error(err)
        if isinstance(err, json.JSONDecodeError):
            return malformed(self._url, f"invalid JSON ({err.msg})")
        if isinstance(err, UnicodeDecodeError):
            return malformed(self._url, f"bytes that are not UTF-8 ({one_line(str(err))})")
        return self.other_error(err)

    def _status_error(self, err: Exception) -> ProviderError:
        error = self.status_error(err)
        if error.status == 401 and self._api_key is None:
            ours, theirs = key_variables(self.name)
            return ProviderError(f"HTTP 401 from {self._url}: the server wants an API key (none was sent); "
                                 f"set {ours} (or {theirs})", status=401)
        return error

    def _connection_error(self, err: Exception) -> ProviderError:
        """One line for a request that reached no server; fast failures for a wrong address."""
        cause = err.__cause__ if isinstance(err, self.errors.connection) and err.__cause__ else err
        detail = one_line(str(cause)) or type(cause).__name__
        if isinstance(cause, (httpx2.UnsupportedProtocol, httpx2.InvalidURL)):
            return ProviderError(f"invalid base URL {self._url}: {detail}")
        parts = urlsplit(self._url)
        if not self._reached and _in_chain(cause, lambda e: isinstance(e, socket.gaierror)
                                           and e.errno in _NO_SUCH_NAME):
            return ProviderError(f"cannot resolve {parts.hostname}, the host of the base URL {self._url}: "
                                 f"{detail}; check its spelling")
        if not self._reached and _in_chain(cause, lambda e: isinstance(e, ConnectionRefusedError)) \
                and is_local_host(parts.hostname):
            return BriefRetryError(f"connection to {self._url} refused: is the server running at "
                                   f"{parts.scheme}://{parts.netloc}?")
        return ProviderError(f"connection to {self._url} failed: {detail}", retryable=True)

    def other_error(self, err: Exception) -> ProviderError:
        return ProviderError(f"{self.name} client error: {one_line(str(err))}")

    def _redacted(self, err: ProviderError) -> ProviderError:
        reason = redact(err.reason, self._api_key)
        if reason == err.reason:
            return err
        redacted = type(err)(reason, status=err.status, retry_after=err.retry_after)
        redacted.retryable = err.retryable
        return redacted


def plain_http_client(client_class: Callable[..., httpx2.AsyncClient], base_url: str | None,
                      timeout: float) -> httpx2.AsyncClient | None:
    """For a plain-http base URL (a local server) and no proxy: the SDK's default HTTP client
    (`client_class`, its limits and redirects) with a TLS context that loads no CA certificates,
    since no request will use TLS; loading the system's certificates costs 20–25 ms of start-up.
    A redirect to https would fail to verify, never connect unverified. None otherwise: the SDK
    builds its client as usual."""
    if not base_url or urlsplit(base_url).scheme.lower() != "http" or any(map(os.environ.get, _PROXY_VARIABLES)):
        return None
    return client_class(base_url=base_url, timeout=timeout, verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))


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
