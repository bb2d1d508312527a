"""Redirects from a model server through the real CLI (issue 36): a redirect never takes the
request from https to plain http, and never carries a credential to another origin (scheme,
host, port) — not the API key, not `x-api-key`, not a header the user configured (it may be a
token), not a cookie — with or without a proxy.

Two loopback servers on different ports are two origins: the test reads what the second one
received. The https server has a certificate from a throwaway CA (`trustme`), trusted through
SSL_CERT_FILE as the SDKs' clients trust one.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme
from clitools import invoke
from providers.hostile import HostileServer, Peer, Request, answer, in_turn, model_args, redirect, response

KEY = "sk-test-redirect-0123456789"
SECRETS = ("sk-test-redirect", "sk-custom-secret", "team-secret", "session-secret", "org-secret")
ENV = {"RECURSIVE_API_KEY": KEY, "OPENAI_ORG_ID": "org-secret",
       "ANTHROPIC_CUSTOM_HEADERS": "x-api-key: sk-custom-secret\nX-Team-Token: team-secret\nCookie: s=session-secret"}
OK = {"openai": b'{"choices":[{"index":0,"message":{"content":"fine"},"finish_reason":"stop"}]}',
      "anthropic": b'{"content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn"}'}
PATH = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


def fine(provider: str) -> bytes:
    return response("200 OK", OK[provider], "Content-Type: application/json")


def carried(request: Request) -> str:
    """Everything a request said, headers and body, as one text to look for secrets in."""
    return "\n".join(f"{name}: {value}" for name, value in request.headers.items()) + request.body.decode()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_credentials_stay_with_their_origin(provider: str) -> None:
    with HostileServer(answer("200 OK", OK[provider], "Content-Type: application/json")) as elsewhere:
        hops = in_turn(response("307 Temporary Redirect", b"", f"Location: {PATH[provider]}?again=1",
                                "Set-Cookie: s=session-secret"),
                       response("308 Permanent Redirect", b"", f"Location: {elsewhere.url}{PATH[provider]}"))
        with HostileServer(hops) as server:
            result = invoke("run", "hi", *model_args(provider, server.url, stream=False), env=ENV)
            first, again = server.requests
        (away,) = elsewhere.requests
    assert result.returncode == 0 and result.stdout == "fine\n", result.stderr
    assert f"Bearer {KEY}" in carried(first) and f"Bearer {KEY}" in carried(again)  # the same origin: all of it
    assert away.method == "POST" and away.body == first.body  # 307/308: the same request, elsewhere
    assert not [secret for secret in SECRETS if secret in carried(away)], carried(away)
    assert set(away.headers) <= {"host", "accept", "accept-encoding", "connection", "content-type", "content-length",
                                 "user-agent", "anthropic-version"}
    assert away.headers["user-agent"] == "recursive-cli"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    """A server context with a certificate for localhost, and the CA bundle that trusts it."""
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(context)
    bundle = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return context, bundle


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_https_is_never_redirected_to_http(provider: str, tls: tuple[ssl.SSLContext, Path]) -> None:
    context, bundle = tls
    with HostileServer(answer("200 OK", OK[provider], "Content-Type: application/json")) as plain:
        target = f"{plain.url}{PATH[provider]}"
        with HostileServer(redirect("307 Temporary Redirect", target), tls=context) as server:
            result = invoke("run", "hi", *model_args(provider, server.url, stream=False), "-o", "json",
                            env={**ENV, "SSL_CERT_FILE": str(bundle)})
            asked = len(server.requests)
        assert plain.requests == []
    assert result.returncode == 1, result.stderr
    assert f"error: refused the redirect from {server.url}{PATH[provider]} to {target}: it would send the request " \
           "unencrypted (https to http)" in result.stderr
    assert asked == 1  # not retried: it would say the same again


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_https_to_https_elsewhere_is_followed_without_credentials(provider: str,
                                                                  tls: tuple[ssl.SSLContext, Path]) -> None:
    context, bundle = tls
    with HostileServer(answer("200 OK", OK[provider], "Content-Type: application/json"), tls=context) as elsewhere:
        with HostileServer(redirect("307 Temporary Redirect", f"{elsewhere.url}{PATH[provider]}"),
                           tls=context) as server:
            result = invoke("run", "hi", *model_args(provider, server.url, stream=False),
                            env={**ENV, "SSL_CERT_FILE": str(bundle)})
        (away,) = elsewhere.requests
    assert result.returncode == 0 and result.stdout == "fine\n", result.stderr
    assert not [secret for secret in SECRETS if secret in carried(away)], carried(away)


def test_behind_a_proxy_credentials_stay_with_their_origin() -> None:
    """With HTTP_PROXY set the requests go through the proxy (in absolute form), and the
    redirects are still ours: `x-api-key` and the configured headers stay with their origin. The proxy here is the recording kind: it answers for both
    origins itself, as a proxy in between could."""
    first_origin, other_origin = "http://127.0.0.1:1", "http://127.0.0.1:2"  # (only the proxy is real)

    def proxy(request: Request, peer: Peer) -> None:
        if request.target.startswith(first_origin):
            peer.send(response("307 Temporary Redirect", b"", f"Location: {other_origin}/v1/messages",
                          "Set-Cookie: s=session-secret"))
        else:
            peer.send(fine("anthropic"))

    with HostileServer(proxy) as server:
        result = invoke("run", "hi", *model_args("anthropic", first_origin, stream=False),
                        env={**ENV, "HTTP_PROXY": server.url, "http_proxy": None, "NO_PROXY": None, "no_proxy": None})
        first, away = server.requests
    assert result.returncode == 0 and result.stdout == "fine\n", result.stderr
    assert first.target == f"{first_origin}/v1/messages" and away.target == f"{other_origin}/v1/messages"
    assert "sk-custom-secret" in carried(first) and f"Bearer {KEY}" in carried(first)
    assert not [secret for secret in SECRETS if secret in carried(away)], carried(away)
