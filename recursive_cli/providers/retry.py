"""Retry policy for provider requests: which failures are retried, how long to wait, and the loop.

The rules are the official SDK clients' (their `_should_retry`, `_parse_retry_after_header`
and `_calculate_retry_timeout`; tests/providers compares them on the same inputs), each
provider with its SDK's `RetryRules`:

- an HTTP answer is retried when it says `x-should-retry: true`, never when it says
  `x-should-retry: false`, and otherwise for 408, 409, 429 and every status from 500 up; the
  OpenAI client also refuses to retry when the server asks for a wait of more than 120 s;
- the wait is the server's own, `retry-after-ms` before `retry-after` (seconds, or an HTTP
  date), when it is more than 0 (and for OpenAI at most 120 s; Anthropic caps it at
  4,294,967 s, the longest sleep a platform allows);
- otherwise 0.5 s doubling per retry, at most 8 s, less up to 25 % of random jitter;
- dropped connections and timeouts are retried with the same backoff.

Beyond the SDKs: a request is retried up to 5 times (their default is 2), every retry is
announced to the hooks (the `api_retry` event) before we sleep, a stream that breaks off or
says `error` before its end is retried too (nothing of it was acted on), and a
`BriefRetryError` (a local server refusing the connection: most likely not running) gets a
couple of quick retries instead of the full backoff, so that a configuration mistake fails
within seconds. No retry, nor the wait before it, outlives the run's deadline (its
--max-duration), and nothing of a failed attempt stays in memory. `http_error` turns an HTTP failure into the one-line, classified
ProviderError both HTTP providers raise.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import NamedTuple, TypeVar

from ..core.errors import BriefRetryError
from ..core.provider import ContextLengthError, DeadlineError, ProviderError, ProviderHooks, RetryNotice

T = TypeVar("T")

BASE_DELAY_ENV = "RECURSIVE_RETRY_BASE_DELAY"
# Seconds one HTTP request may take (connect, each read, write); a stalled server is then retried.
REQUEST_TIMEOUT_ENV = "RECURSIVE_REQUEST_TIMEOUT"
DEFAULT_REQUEST_TIMEOUT = 600.0

MAX_RETRIES = 5
# The SDKs' backoff: 0.5 s, doubling per retry, at most 8 s.
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
# 408: the server timed out; 409: it hit a lock; 429: rate limited; and every 5xx.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
_INFINITY_WORDS = frozenset({"inf", "+inf", "infinity", "+infinity"})

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
# How servers say the model takes no such parameter, or not that value: OpenAI ("Unsupported
# parameter: 'temperature' is not supported with this model.", code unsupported_parameter or
# unsupported_value), Azure ("Unrecognized request argument supplied"), vLLM and LiteLLM
# ("Extra inputs are not permitted", "does not support parameters"), Anthropic ("… is not
# supported on this model"). Asking again cannot help: one clear error, never a retry.
_REJECTED_PARAMETER = re.compile(
    r"unsupported[ _](parameter|value)|unrecognized request argument|extra inputs are not permitted"
    r"|unknown (parameter|field)|not supported (with|on|for|by) this model|does not support parameters?",
    re.IGNORECASE)
_QUOTED = re.compile(r"'([A-Za-z_][\w.\[\]]*)'|`([A-Za-z_][\w.]*)`|\"([A-Za-z_][\w.]*)\"")
# A brief retry: this many attempts more, from a quarter of the base delay, each wait at most
# this long (with the default base delay: about 0.25 s, then 0.5 s).
BRIEF_RETRIES = 2
BRIEF_MAX_DELAY = 0.5


class RetryRules(NamedTuple):
    """How one SDK client reads the wait a failed answer asks for.

    `longest_wait`: the longest `retry-after` honoured. Beyond it, with `refuse_longer`, the
    answer is not retried at all (OpenAI, 120 s); without, the wait is cut to it (Anthropic).
    `overflow`: what a number too large for a float reads as (OpenAI: just over its longest
    wait, so that it is refused; Anthropic: infinity, cut to its longest).
    """

    longest_wait: float
    refuse_longer: bool
    overflow: float


OPENAI_RULES = RetryRules(longest_wait=120.0, refuse_longer=True, overflow=121.0)
ANTHROPIC_RULES = RetryRules(longest_wait=4_294_967.0, refuse_longer=False, overflow=math.inf)


def parse_retry_after(headers: Mapping[str, str], rules: RetryRules) -> float | None:
    """Seconds the server asked us to wait, as the SDK reads them: `retry-after-ms`, then
    `retry-after` as a number, then `retry-after` as an HTTP date (in the past: negative);
    None when neither says anything readable. NaN and infinity are passed on as they are."""
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in _INFINITY_WORDS:
            return rules.overflow  # a number too large, not the word: an excessive wait
        return delay / divisor
    raw = headers.get("retry-after")
    if raw is None:
        return None
    import email.utils  # (an HTTP date: rare, and 2 ms of start-up for every run otherwise)

    try:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        when = email.utils.mktime_tz(parsed)
    except (TypeError, ValueError, OverflowError, OSError):
        return None
    return float(when - time.time())


def should_retry(status: int, headers: Mapping[str, str], rules: RetryRules) -> bool:
    """Whether an answer with `status` (400 or more) is worth sending again."""
    if rules.refuse_longer:
        wait = parse_retry_after(headers, rules)
        if wait is not None and math.isfinite(wait) and wait > rules.longest_wait:
            return False
    flag = headers.get("x-should-retry")
    if flag == "true":
        return True
    if flag == "false":
        return False
    return status in RETRYABLE_STATUSES or status >= 500


def server_wait(headers: Mapping[str, str], rules: RetryRules) -> float | None:
    """The wait the server asked for, if it is one the SDK honours; None: back off instead."""
    wait = parse_retry_after(headers, rules)
    if wait is None or not wait > 0:  # (NaN is not more than 0)
        return None
    if rules.refuse_longer:
        return wait if math.isfinite(wait) and wait <= rules.longest_wait else None
    return min(wait, rules.longest_wait)


def retry_timeout(retries_taken: int, headers: Mapping[str, str] | None, rules: RetryRules,
                  initial_delay: float = INITIAL_RETRY_DELAY, max_delay: float = MAX_RETRY_DELAY) -> float:
    """Seconds to wait before the retry after `retries_taken` earlier ones: the SDK's
    `_calculate_retry_timeout`."""
    wait = server_wait(headers, rules) if headers is not None else None
    if wait is not None:
        return wait
    return backoff_delay(retries_taken + 1, initial_delay, max_delay)


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    hooks: ProviderHooks,
    *,
    deadline: float | None = None,
    max_retries: int = MAX_RETRIES,
    base_delay: float = INITIAL_RETRY_DELAY,
    max_delay: float = MAX_RETRY_DELAY,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """Await `fn()`, retrying retryable ProviderErrors up to `max_retries` times.

    Each retry is announced with `hooks.on_retry` before sleeping. The wait is the error's
    `retry_after` (a server's wait the rules honour: `server_wait`), else the backoff from
    `base_delay` (RECURSIVE_RETRY_BASE_DELAY overrides it, for tests). Non-retryable
    errors, and the last error once retries are used up, propagate. A BriefRetryError is
    retried at most BRIEF_RETRIES times, from a quarter of the base delay, each wait capped
    at BRIEF_MAX_DELAY. With a `deadline` (a `time.monotonic()`), a retry whose wait would
    end at or after it is not made: DeadlineError, naming the last failure.

    Nothing of a failed attempt outlives it: its error is kept without its traceback or
    the exceptions it was raised from (`forget_frames`), and the wait happens outside the
    `except` that caught it, so the attempt's frames and buffers are freed at once.
    """
    base_delay = _base_delay_from_env(base_delay)
    attempt = 0
    while True:
        try:
            return await fn()
        except ProviderError as err:
            failure = forget_frames(err)
        brief = isinstance(failure, BriefRetryError)
        limit = min(max_retries, BRIEF_RETRIES) if brief else max_retries
        if not failure.retryable or attempt >= limit:
            raise failure
        attempt += 1
        delay = (backoff_delay(attempt, base_delay / 4, min(max_delay, BRIEF_MAX_DELAY), failure.retry_after)
                 if brief else backoff_delay(attempt, base_delay, max_delay, failure.retry_after))
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise DeadlineError(f"no time left to retry {failure.reason}")
        hooks.on_retry(RetryNotice(attempt=attempt, max_retries=limit,
                                   delay_seconds=delay, status=failure.status, reason=failure.reason))
        del failure  # (not held through the wait)
        await sleep(delay)


E = TypeVar("E", bound=BaseException)


def forget_frames(err: E) -> E:
    """`err` without its traceback and without the exceptions it was raised from.

    A failed request's traceback holds its frames, and they its buffers (a stream read so
    far, a body); a frame that also holds the exception is a cycle that only the cyclic
    collector would free, at some later time. Dropped here, they are freed at once.
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        following = current.__cause__ or current.__context__
        current.__traceback__ = None
        current.__cause__ = current.__context__ = None
        current = following
    return err


def backoff_delay(attempt: int, base_delay: float, max_delay: float,
                  retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `attempt` (1-based).

    A server's `retry_after` (already judged by `server_wait`) wins; otherwise the delay
    doubles per attempt from `base_delay`, capped at `max_delay`, with up to 25% random
    jitter taken off so that many clients do not retry in lockstep.
    """
    if retry_after is not None:
        return retry_after
    exponential = min(base_delay * 2.0 ** min(attempt - 1, 1000), max_delay)
    return max(exponential * (1 - 0.25 * random.random()), 0.0)


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
               headers: Mapping[str, str] | None = None, code: str | None = None,
               rules: RetryRules = OPENAI_RULES) -> ProviderError:
    """A ProviderError for an HTTP error answer, e.g. `HTTP 401 from https://…/v1: invalid API key (…)`.

    `code` is the error code some APIs send beside the message (OpenAI's `error.code`);
    `rules` say whether it is retried and after how long.
    """
    headers = headers or {}
    message = one_line(server_message or "")
    if status in _CONTEXT_OVERFLOW_STATUSES and _CONTEXT_OVERFLOW.search(f"{code or ''} {message}"):
        return ContextLengthError(f"HTTP {status} from {url}: the conversation is too long for the "
                                  f"model's context window ({message or code})", status=status)
    if status in (400, 422) and _REJECTED_PARAMETER.search(f"{code or ''} {message}"):
        quoted = _QUOTED.search(message)
        what = f"the parameter {next(g for g in quoted.groups() if g)!r}" if quoted else "a parameter"
        return ProviderError(f"HTTP {status} from {url}: bad request: the model does not take {what} recursive sent "
                             f"({message or code}); use another model, or leave out the option that sets it "
                             "(such as --effort or --thinking-budget)", status=status)
    reason = f"HTTP {status} from {url}: {_STATUS_CAUSES.get(status, 'error')}"
    if message:
        reason += f" ({message})"
    return ProviderError(reason, status=status, retryable=should_retry(status, headers, rules),
                         retry_after=server_wait(headers, rules))


def stream_error(url: str, message: str, code: str | None = None) -> ProviderError:
    """A ProviderError for an error the server sent inside a stream (after its 200): retried,
    as the SDKs retry nothing then but a second try usually reads fine, unless it says the
    conversation does not fit the model's context window."""
    message = one_line(message)
    if _CONTEXT_OVERFLOW.search(f"{code or ''} {message}"):
        return ContextLengthError(f"error from {url} during the stream: the conversation is too long "
                                  f"for the model's context window ({message or code})")
    return ProviderError(f"error from {url} during the stream: {message}", retryable=True)


def retry_after_seconds(headers: Mapping[str, str], rules: RetryRules = OPENAI_RULES) -> float | None:
    """Seconds the server asked us to wait (none: None), a date in the past as 0."""
    wait = parse_retry_after(headers, rules)
    return None if wait is None else max(wait, 0.0)


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
