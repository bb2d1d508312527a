"""Retry policy for provider requests: which failures are retried, how long to wait, and the loop.

The SDKs' own retries are switched off (`max_retries=0`) so that every retry goes through
`call_with_retries` and is announced to the hooks (the `api_retry` event) before we sleep.
`http_error` turns an HTTP failure into the one-line, classified ProviderError both HTTP
providers raise. A `BriefRetryError` (a local server refusing the connection: most likely not
running) gets a couple of quick retries instead of the full backoff, so that a configuration
mistake fails within seconds.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import timezone
from typing import TypeVar

from .base import ContextLengthError, ProviderError, ProviderHooks, RetryNotice

T = TypeVar("T")

BASE_DELAY_ENV = "RECURSIVE_RETRY_BASE_DELAY"
# Seconds one HTTP request may take (connect, each read, write); a stalled server is then retried.
REQUEST_TIMEOUT_ENV = "RECURSIVE_REQUEST_TIMEOUT"
DEFAULT_REQUEST_TIMEOUT = 600.0

# 408/409: the server timed out or hit a lock; 429: rate limited; 5xx gateways; 529: overloaded.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})

_STATUS_CAUSES = {
    400: "bad request", 401: "invalid API key", 403: "permission denied",
    404: "not found (check the model name and base URL)", 408: "request timeout",
    409: "conflict", 413: "request too large", 422: "unprocessable request",
    429: "rate limited", 500: "server error", 502: "bad gateway", 503: "service unavailable",
    504: "gateway timeout", 529: "overloaded",
}
_MAX_MESSAGE_CHARS = 300
# How servers say a request is over the context window: OpenAI (code context_length_exceeded,
# "maximum context length"), Anthropic ("prompt is too long"), vLLM, llama.cpp ("context size").
_CONTEXT_OVERFLOW = re.compile(r"context[ _](length|window|size)|prompt is too long|too many tokens",
                               re.IGNORECASE)
_CONTEXT_OVERFLOW_STATUSES = frozenset({400, 413, 422})
# A brief retry: this many attempts more, from a quarter of the base delay, each wait at most
# this long (with the default base delay: about 0.25 s, then 0.5 s).
BRIEF_RETRIES = 2
BRIEF_MAX_DELAY = 0.5


class BriefRetryError(ProviderError):
    """A failure worth only a brief retry: a local server that refuses the connection may be
    starting up, but is far more likely not running at all."""

    def __init__(self, reason: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(reason, status=status, retryable=True, retry_after=retry_after)


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    hooks: ProviderHooks,
    *,
    max_retries: int = 5,
    base_delay: float = 1.0,
    max_delay: float = 60.0,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """Await `fn()`, retrying retryable ProviderErrors up to `max_retries` times.

    Each retry is announced with `hooks.on_retry` before sleeping. Non-retryable errors,
    and the last error once retries are used up, propagate unchanged. A BriefRetryError is
    retried at most BRIEF_RETRIES times, from a quarter of the base delay, each wait capped
    at BRIEF_MAX_DELAY.
    """
    base_delay = _base_delay_from_env(base_delay)
    attempt = 0
    while True:
        try:
            return await fn()
        except ProviderError as err:
            brief = isinstance(err, BriefRetryError)
            limit = min(max_retries, BRIEF_RETRIES) if brief else max_retries
            if not err.retryable or attempt >= limit:
                raise
            attempt += 1
            delay = (backoff_delay(attempt, base_delay / 4, min(max_delay, BRIEF_MAX_DELAY), err.retry_after)
                     if brief else backoff_delay(attempt, base_delay, max_delay, err.retry_after))
            hooks.on_retry(RetryNotice(attempt=attempt, max_retries=limit,
                                       delay_seconds=delay, status=err.status, reason=err.reason))
            await sleep(delay)


def backoff_delay(attempt: int, base_delay: float, max_delay: float,
                  retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `attempt` (1-based).

    A server's `retry_after` wins (capped at `max_delay`); otherwise the delay doubles per
    attempt from `base_delay`, capped at `max_delay`, with up to 25% random jitter taken off
    so that many clients do not retry in lockstep.
    """
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, max_delay)
    exponential = min(base_delay * 2.0 ** (attempt - 1), max_delay)
    return exponential * (1 - 0.25 * random.random())


def request_timeout(default: float = DEFAULT_REQUEST_TIMEOUT) -> float:
    """The request timeout in seconds: RECURSIVE_REQUEST_TIMEOUT when it is a positive number."""
    raw = os.environ.get(REQUEST_TIMEOUT_ENV)
    value = _float(raw) if raw else None
    return value if value is not None and value > 0 else default


def _base_delay_from_env(default: float) -> float:
    raw = os.environ.get(BASE_DELAY_ENV)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default  # a test knob; a typo should not break a real run
    return value if value >= 0 else default


def http_error(status: int, url: str, server_message: str | None,
               headers: Mapping[str, str] | None = None, code: str | None = None) -> ProviderError:
    """A ProviderError for an HTTP error answer, e.g. `HTTP 401 from https://…/v1: invalid API key (…)`.

    `code` is the error code some APIs send beside the message (OpenAI's `error.code`).
    """
    headers = headers or {}
    message = one_line(server_message or "")
    if status in _CONTEXT_OVERFLOW_STATUSES and _CONTEXT_OVERFLOW.search(f"{code or ''} {message}"):
        return ContextLengthError(f"HTTP {status} from {url}: the conversation is too long for the "
                                  f"model's context window ({message or code})", status=status)
    reason = f"HTTP {status} from {url}: {_STATUS_CAUSES.get(status, 'error')}"
    if message:
        reason += f" ({message})"
    should_retry = (headers.get("x-should-retry") or "").lower()
    retryable = should_retry == "true" or (status in RETRYABLE_STATUSES and should_retry != "false")
    return ProviderError(reason, status=status, retryable=retryable,
                         retry_after=retry_after_seconds(headers))


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    millis = _float(headers.get("retry-after-ms"))
    if millis is not None:
        return max(millis / 1000, 0.0)
    raw = headers.get("retry-after")
    if not raw:
        return None
    seconds = _float(raw)
    if seconds is not None:
        return max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(when.timestamp() - time.time(), 0.0)


def one_line(text: str, limit: int = _MAX_MESSAGE_CHARS) -> str:
    """`text` with whitespace runs collapsed to single spaces, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _float(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value == value and value != float("inf") else None  # reject nan / inf
