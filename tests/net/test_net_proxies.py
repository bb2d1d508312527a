"""Proxies in the one transport (recursive_cli/net/http1.py, proxy.py), against a real proxy
on loopback (loopback_proxy.py): plain http forwarded in absolute form, https through a
CONNECT tunnel to a loopback TLS server whose certificate comes from a throwaway CA
(`trustme`), the proxy's credentials from its URL, NO_PROXY, and the variables read as curl
and httpx read them."""

from __future__ import annotations

import asyncio
import base64
import ssl
from pathlib import Path
from typing import Any

import pytest
import trustme
from loopback_proxy import LoopbackProxy
from providers.test_http1 import RawServer, answer, fixed

from recursive_cli.core.errors import ConnectError, InvalidURL
from recursive_cli.net import http1
from recursive_cli.net.proxy import Proxies, parse_proxy
from recursive_cli.tools.web import fetch

VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
             "no_proxy", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_origin(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A TLS server for `localhost` on loopback, its CA trusted through SSL_CERT_FILE."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(context)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with RawServer(fixed(answer(b'{"over": "tls"}', "Content-Type: application/json")), tls=context) as server:
        yield server


def get(url: str, headers: dict[str, str] | None = None, times: int = 1) -> list[tuple[int, bytes]]:
    async def main() -> list[tuple[int, bytes]]:
        client = http1.Client(headers or {}, 5.0)
        try:
            out = []
            for _ in range(times):
                response = await client.request("POST", url, b"{}")
                out.append((response.status_code, await response.aread()))
                await response.aclose()
            return out
        finally:
            await client.aclose()
    return asyncio.run(main())


def test_plain_http_goes_to_the_proxy_in_absolute_form_with_its_credentials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with RawServer(fixed(answer(b"from the origin"))) as origin, LoopbackProxy("me", "s3cr:t") as proxy:
        monkeypatch.setenv("http_proxy", f"http://me:s3cr%3At@127.0.0.1:{proxy.port}")
        url = origin.url
        assert get(f"{url}/v1/x?q=1", {"Authorization": "Bearer k"}) == [(200, b"from the origin")]
        (head,) = proxy.heads
        (upstream,) = origin.requests
    assert proxy.lines() == [f"POST {url}/v1/x?q=1 HTTP/1.1"]
    assert f"Host: {url.removeprefix('http://')}".encode() in head
    assert b"Proxy-Authorization: Basic " + base64.b64encode(b"me:s3cr:t") in head
    # the origin gets the request, never the proxy's credentials
    assert upstream.startswith(b"POST /v1/x?q=1 HTTP/1.1") and b"Bearer k" in upstream
    assert b"Proxy-Authorization" not in upstream


def test_https_goes_through_a_connect_tunnel_with_tls_to_the_origin(
        tls_origin: RawServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackProxy("me", "pw") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"me:pw@127.0.0.1:{proxy.port}")  # (no scheme: http://)
        assert get(f"{tls_origin.url}/v1/x", {"Authorization": "Bearer k"}, times=2) == [(200, b'{"over": "tls"}')] * 2
        heads = proxy.heads
    port = tls_origin.url.rsplit(":", 1)[1]
    # one tunnel, kept for the second request; the proxy saw no request inside it (it is TLS)
    assert proxy.lines() == [f"CONNECT localhost:{port} HTTP/1.1"]
    assert b"Proxy-Authorization: Basic " + base64.b64encode(b"me:pw") in heads[0]
    assert b"Bearer k" not in heads[0]
    assert len(tls_origin.requests) == 2 and tls_origin.connections == 1
    assert all(b"Bearer k" in request and b"Proxy-Authorization" not in request for request in tls_origin.requests)


def test_a_tunnel_the_proxy_refuses_is_one_clear_connect_error(
        tls_origin: RawServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackProxy("me", "right") as proxy:
        port = proxy.port
        monkeypatch.setenv("HTTPS_PROXY", f"http://me:wrong@127.0.0.1:{port}")
        with pytest.raises(ConnectError) as refused:
            get(f"{tls_origin.url}/v1/x")
    assert str(refused.value) == (f"the proxy http://127.0.0.1:{port} refused the tunnel to "
                                  f"localhost:{tls_origin.url.rsplit(':', 1)[1]}: HTTP 407 Proxy Authentication Required")
    assert "wrong" not in str(refused.value) and tls_origin.requests == []


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "127.0.0.0/8", "*", "localhost, 127.0.0.1", "example.com,*"])
def test_no_proxy_sends_directly(no_proxy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with RawServer(fixed(answer(b"direct"))) as origin, LoopbackProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        result = get(origin.url)
        carried = proxy.heads
    assert result == [(200, b"direct")] and carried == [] and len(origin.requests) == 1


def test_a_no_proxy_for_other_hosts_leaves_the_proxy_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    with RawServer(fixed(answer(b"proxied"))) as origin, LoopbackProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "localhost,example.com,127.0.0.2")
        assert get(origin.url) == [(200, b"proxied")]
        assert len(proxy.heads) == 1


def test_web_fetch_goes_through_the_proxy_too(monkeypatch: pytest.MonkeyPatch) -> None:
    with RawServer(fixed(answer(b"<html><p>fetched</p></html>", "Content-Type: text/html"))) as origin, \
            LoopbackProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        url = f"{origin.url}/page"
        page = asyncio.run(fetch(url, 1000, allow_private=True))
        lines = proxy.lines()
    assert (page.status, page.body, page.url) == (200, b"<html><p>fetched</p></html>", url)
    assert lines == [f"GET {url} HTTP/1.1"]


def proxies(**env: str) -> Proxies:
    return Proxies.from_env(env)


def where(found: Proxies, url: str) -> str | None:
    origin = http1.Origin(url)
    proxy = found.for_origin(origin.scheme, origin.host, origin.port)
    return None if proxy is None else proxy.url


def test_the_variables_read_as_curl_and_httpx_read_them() -> None:
    assert where(proxies(HTTP_PROXY="http://up:1", http_proxy="http://low:2"), "http://a.example/") == "http://low:2"
    assert where(proxies(HTTP_PROXY="http://p:1"), "https://a.example/") is None  # http's proxy is http's alone
    assert where(proxies(ALL_PROXY="p:3"), "https://a.example/") == "http://p:3"
    assert where(proxies(ALL_PROXY="p:3", HTTPS_PROXY="q:4"), "https://a.example/") == "http://q:4"
    assert where(proxies(HTTP_PROXY="p:1", REQUEST_METHOD="GET"), "http://a.example/") is None  # httpoxy
    assert where(proxies(HTTPS_PROXY="https://p"), "https://a.example/") == "https://p:443"
    found = proxies(HTTPS_PROXY="p:1", NO_PROXY="example.com, .internal, 10.0.0.0/8, [::1], b.test:8443")
    assert [where(found, url) for url in ("https://example.com/", "https://api.example.com/", "https://badexample.com/",
                                          "https://x.internal/", "https://10.2.3.4/", "https://[::1]/",
                                          "https://b.test:8443/", "https://b.test/")] == [
        None, None, "http://p:1", None, None, None, None, "http://p:1"]


def test_a_proxy_we_cannot_use_is_refused_clearly() -> None:
    with pytest.raises(InvalidURL, match=r"unsupported proxy 'h:1080': only http:// and https:// proxies \(not socks5://\)"):
        parse_proxy("socks5://user:secret@h:1080")
    with pytest.raises(InvalidURL, match="no host in the proxy"):
        parse_proxy("http://:8080")
