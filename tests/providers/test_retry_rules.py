"""Retry decisions follow the SDK clients' rules: on the same headers and statuses, our
`retry_timeout` and `should_retry` answer what the SDK's own `_calculate_retry_timeout` and
`_should_retry` answer, per provider — and a provider acts on them (what the server sees)."""

from __future__ import annotations

import asyncio
import email.utils
import random
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from fakeserver import FakeLLMServer

from recursive_cli.core.messages import Message
from recursive_cli.core.provider import ProviderError, RetryNotice
from recursive_cli.providers import retry
from recursive_cli.providers.anthropic_provider import AnthropicProvider
from recursive_cli.providers.openai_provider import OpenAIProvider

# The openai and anthropic SDKs cost ≈ 1.5 s of CPU to import: under pytest-xdist, every module
# that imports them in this process runs on one worker (`xdist_group`), so only that one pays.
pytestmark = pytest.mark.xdist_group("openai-anthropic-sdks")

NOW = 1_780_000_000.0
RULES = {"openai": retry.OPENAI_RULES, "anthropic": retry.ANTHROPIC_RULES}


def at(offset: float) -> str:
    """An HTTP date `offset` seconds from NOW."""
    return email.utils.formatdate(NOW + offset, usegmt=True)


# (headers, what the OpenAI client waits, what the Anthropic client waits) after no retries yet,
# jitter off: 0.5 is the backoff. Our own cases, in the spirit of both SDKs' test_parse_retry_after_header.
WAITS: list[tuple[dict[str, str], float, float]] = [
    ({"retry-after": "3"}, 3, 3),
    ({"retry-after": "0.25"}, 0.25, 0.25),
    ({"retry-after": " 7 "}, 7, 7),
    ({"retry-after": "0"}, 0.5, 0.5),
    ({"retry-after": "-5"}, 0.5, 0.5),
    ({"retry-after": "119.5"}, 119.5, 119.5),
    ({"retry-after": "120"}, 120, 120),
    ({"retry-after": "120.5"}, 0.5, 120.5),
    ({"retry-after": "3600"}, 0.5, 3600),
    ({"retry-after": "1e400"}, 0.5, 4_294_967.0),
    ({"retry-after": "inf"}, 0.5, 4_294_967.0),
    ({"retry-after": "nan"}, 0.5, 0.5),
    ({"retry-after": ""}, 0.5, 0.5),
    ({"retry-after": "soon"}, 0.5, 0.5),
    ({"retry-after-ms": "1500"}, 1.5, 1.5),
    ({"retry-after-ms": "0"}, 0.5, 0.5),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25, 0.25),
    ({"retry-after-ms": "soon", "retry-after": "4"}, 4, 4),
    ({"retry-after-ms": "1e400"}, 0.5, 4_294_967.0),
    ({"retry-after-ms": "200000"}, 0.5, 200),
    ({"retry-after": at(30)}, 30, 30),
    ({"retry-after": at(-30)}, 0.5, 0.5),
    ({"retry-after": at(120)}, 120, 120),
    ({"retry-after": at(121)}, 0.5, 121),
    ({"retry-after": "Zun, 29 Sep 2023 16:26:27 GMT"}, 0.5, 0.5),
    ({"retry-after": "Fri, 29 Sep 100000 16:26:57 GMT"}, 0.5, 0.5),
    ({}, 0.5, 0.5),
]
BACKOFF = [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 8.0), (1100, 8.0)]


@pytest.fixture
def fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed clock and no jitter, for us and for both SDKs."""
    import anthropic._base_client
    import openai._base_client

    monkeypatch.setattr("time.time", lambda: NOW)
    monkeypatch.setattr(random, "random", lambda: 0.0)
    monkeypatch.setattr(openai._base_client, "random", lambda: 0.0)
    monkeypatch.setattr(anthropic._base_client, "random", lambda: 0.0)


_CLIENTS: dict[str, Any] = {}


@pytest.fixture(autouse=True, scope="module")
def _close_clients() -> Iterator[None]:
    yield
    while _CLIENTS:
        _CLIENTS.popitem()[1].close()


def sdk_client(kind: str) -> Any:
    """The SDK's client (one per kind for the module: the rules asked of it read nothing but
    its settings, and building one costs ≈ 25 ms of loading CA certificates)."""
    if kind not in _CLIENTS:
        if kind == "openai":
            from openai import OpenAI

            _CLIENTS[kind] = OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=retry.MAX_RETRIES)
        else:
            from anthropic import Anthropic

            _CLIENTS[kind] = Anthropic(api_key="k", base_url="http://127.0.0.1:9", max_retries=retry.MAX_RETRIES)
    return _CLIENTS[kind]


def sdk_timeout(kind: str, retries_taken: int, headers: dict[str, str]) -> float | None:
    """The SDK's wait; None where the SDK raises instead (the Anthropic client on a date past
    year 9999: its request would fail; ours backs off)."""
    models = __import__(f"{kind}._models", fromlist=["FinalRequestOptions"])
    options = models.FinalRequestOptions(method="post", url="/x", max_retries=retry.MAX_RETRIES)
    try:
        return float(sdk_client(kind)._calculate_retry_timeout(retry.MAX_RETRIES - retries_taken, options,
                                                               httpx2.Headers(headers)))
    except (ValueError, OverflowError):
        return None


@pytest.mark.usefixtures("fixed")
@pytest.mark.parametrize(("headers", "openai_wait", "anthropic_wait"), WAITS)
def test_the_wait_a_server_asks_for(headers: dict[str, str], openai_wait: float, anthropic_wait: float) -> None:
    for kind, expected in (("openai", openai_wait), ("anthropic", anthropic_wait)):
        ours = retry.retry_timeout(0, httpx2.Headers(headers), RULES[kind])
        assert ours == pytest.approx(expected), kind
        sdk = sdk_timeout(kind, 0, headers)
        assert ours == (sdk if sdk is not None else retry.INITIAL_RETRY_DELAY), kind


@pytest.mark.usefixtures("fixed")
@pytest.mark.parametrize(("retries_taken", "expected"), BACKOFF)
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_backoff_doubles_from_half_a_second_to_eight(kind: str, retries_taken: int, expected: float) -> None:
    assert retry.retry_timeout(retries_taken, None, RULES[kind]) == expected == sdk_timeout(kind, retries_taken, {})


def test_the_jitter_takes_off_up_to_a_quarter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(random, "random", lambda: 0.999999)
    assert retry.retry_timeout(2, None, retry.OPENAI_RULES) == pytest.approx(1.5, abs=1e-5)


SHOULD_RETRY = [(status, flag, wait)
                for status in (400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 529, 599)
                for flag in (None, "true", "false", "True")
                for wait in (None, "30", "121", "inf", "1e400")]


@pytest.mark.usefixtures("fixed")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_which_answers_are_retried(kind: str) -> None:
    client = sdk_client(kind)
    for status, flag, wait in SHOULD_RETRY:
        headers = {name: value for name, value in (("x-should-retry", flag), ("retry-after", wait)) if value}
        expected = client._should_retry(httpx2.Response(status, headers=headers))
        assert retry.should_retry(status, httpx2.Headers(headers), RULES[kind]) == expected, (status, headers)
    assert retry.should_retry(501, {}, RULES[kind]) and not retry.should_retry(413, {}, RULES[kind])


# -- what a provider does with them, as the server sees it ---------------------------------------------


class Notices:
    def __init__(self) -> None:
        self.retries: list[RetryNotice] = []

    def on_text(self, delta: str) -> None:
        pass

    def on_retry(self, notice: RetryNotice) -> None:
        self.retries.append(notice)


def ask(kind: str, server: FakeLLMServer, hooks: Notices) -> str:
    async def main() -> str:
        provider: Any = (OpenAIProvider("gpt-4o", "k", server.openai_base_url) if kind == "openai"
                         else AnthropicProvider("claude-x", "k", server.anthropic_base_url))
        try:
            return str((await provider.complete([Message.user("hi")], [], hooks)).message.content)
        finally:
            await provider.aclose()
    return asyncio.run(main())


def error(status: int, **headers: str) -> dict[str, Any]:
    return {"error": {"status": status, "message": "nope", "headers": headers}}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize(("reply", "retried"), [
    (error(503, **{"x-should-retry": "false"}), False),
    (error(400, **{"x-should-retry": "true"}), True),
    (error(501), True),
    (error(409), True),
    (error(422), False),
])
def test_the_server_decides_with_its_status_and_x_should_retry(kind: str, reply: dict[str, Any],
                                                              retried: bool) -> None:
    hooks = Notices()
    with FakeLLMServer([reply, {"text": "second"}]) as server:
        if retried:
            assert ask(kind, server, hooks) == "second"
        else:
            with pytest.raises(ProviderError):
                ask(kind, server, hooks)
        assert len(server.requests) == (2 if retried else 1)
    assert len(hooks.retries) == (1 if retried else 0)


def test_openai_does_not_wait_longer_than_two_minutes() -> None:
    hooks = Notices()
    with FakeLLMServer([error(429, **{"retry-after": "300"}), {"text": "never"}]) as server:
        with pytest.raises(ProviderError, match="HTTP 429"):
            ask("openai", server, hooks)
        assert len(server.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_servers_wait_is_the_wait_announced(kind: str) -> None:
    hooks = Notices()
    with FakeLLMServer([error(429, **{"retry-after-ms": "30", "retry-after": "9"}), {"text": "ok"}]) as server:
        assert ask(kind, server, hooks) == "ok"
    assert [(n.attempt, n.max_retries, n.delay_seconds) for n in hooks.retries] == [(1, 5, 0.03)]
