"""What the SDK-backed providers share: one request cycle over the SDK's low-level `post()`.

A subclass names its SDK's client and error classes and says how to build a request body,
how to read a whole response and how to assemble a stream; the retry loop, the error mapping
(one classified line per failure) and the API-key redaction live here once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

import httpx2

from ..core import utf8
from ..core.diagnostics import log_cause
from ..core.messages import Message
from .base import Completion, ProviderError, ProviderHooks, ToolSpec
from .retry import call_with_retries, one_line


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

    def __init__(self, model: str, stream: bool, client: Any, api_key: str | None) -> None:
        self.model = model
        self.stream = stream
        self._client = client
        self._api_key = api_key
        self._url = str(client.base_url).rstrip("/")
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
            data = await self._client.post(self.path, cast_to=object, content=body)
            return self.parse_whole(data, hooks)
        except ProviderError as err:
            log_cause(err.reason, err, self._api_key)
            raise self._redacted(err) from None
        except (self.errors.base, httpx2.HTTPError, json.JSONDecodeError, UnicodeDecodeError) as err:
            error = self._redacted(self._provider_error(err))  # SDK messages may echo the key
            log_cause(error.reason, err, self._api_key)  # the cause, shown with -v
            raise error from None

    async def _streamed(self, body: bytes, hooks: ProviderHooks) -> Completion:
        stream = await self._client.post(self.path, cast_to=object, content=body, stream=True,
                                         stream_cls=self.stream_cls[object])
        state = self.new_stream()
        try:
            async for item in stream:
                state.add(item, hooks)
        finally:
            await stream.close()
        return state.completion()

    def _provider_error(self, err: Exception) -> ProviderError:
        if isinstance(err, self.errors.status):
            return self.status_error(err)
        if isinstance(err, self.errors.timeout):
            return ProviderError(f"request to {self._url} timed out", retryable=True)
        if isinstance(err, (self.errors.connection, httpx2.HTTPError)):
            cause = err.__cause__ if isinstance(err, self.errors.connection) and err.__cause__ else err
            detail = one_line(str(cause)) or type(cause).__name__
            return ProviderError(f"connection to {self._url} failed: {detail}", retryable=True)
        if isinstance(err, json.JSONDecodeError):
            return malformed(self._url, f"invalid JSON ({err.msg})")
        if isinstance(err, UnicodeDecodeError):
            return malformed(self._url, f"bytes that are not UTF-8 ({one_line(str(err))})")
        return self.other_error(err)

    def other_error(self, err: Exception) -> ProviderError:
        return ProviderError(f"{self.name} client error: {one_line(str(err))}")

    def _redacted(self, err: ProviderError) -> ProviderError:
        if not self._api_key or self._api_key not in err.reason:
            return err
        return type(err)(err.reason.replace(self._api_key, "***"), status=err.status,
                         retryable=err.retryable, retry_after=err.retry_after)


def dumps(value: Any) -> bytes:
    """Compact JSON bytes, non-ASCII kept as it is (a lone surrogate becomes U+FFFD)."""
    return utf8.encode(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def as_dict(value: object) -> dict[str, Any]:
    """`value` when the server sent an object there, else an empty dict."""
    return value if isinstance(value, dict) else {}


def malformed(url: str, detail: str) -> ProviderError:
    """A response we cannot read; retried, since a second try usually reads fine."""
    return ProviderError(f"malformed response from {url}: {detail}", retryable=True)
