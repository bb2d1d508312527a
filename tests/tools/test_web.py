"""web_fetch against a real HTTP server on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from recursive_cli.core.tool import ToolContext
from recursive_cli.tools.web import html_to_text, is_blocked

PAGE = b"""<!doctype html><html><head><title>Demo page</title>
<style>body { color: red }</style><script>alert("no")</script></head>
<body><h1>Welcome</h1><p>First   paragraph
with <a href="/docs">a link</a>.</p><p>Second paragraph.</p>
<ul><li>one</li><li>two</li></ul><pre>  indented
    code</pre></body></html>"""


class Handler(BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, str, bytes, dict[str, str]]] = {
        "/page": (200, "text/html; charset=utf-8", PAGE, {}),
        "/hop": (302, "text/plain", b"", {"Location": "/page"}),
        "/loop": (302, "text/plain", b"", {"Location": "/loop"}),
        "/bin": (200, "application/octet-stream", b"\x00\x01\x02", {}),
        "/big": (200, "text/plain", b"x" * 100_000, {}),
        "/missing": (404, "text/plain", b"not here", {}),
    }

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        status, kind, body, headers = self.routes.get(self.path, self.routes["/missing"])
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def private_ok(ctx: ToolContext) -> ToolContext:
    ctx.allow_private_network = True
    return ctx


def test_fetch_html_as_text(call, private_ok, server: str) -> None:
    result = call("web_fetch", url=f"{server}/hop")
    assert not result.is_error, result.content
    assert f"URL: {server}/page" in result.content
    assert "Status: 200" in result.content
    text = result.content
    assert "# Welcome" in text
    assert f"First paragraph with a link ({server}/docs)." in text
    assert "Second paragraph." in text and "- one\n- two" in text
    assert "  indented\n    code" in text
    assert "alert" not in text and "color: red" not in text


def test_loopback_is_refused_without_permission(call, server: str) -> None:
    result = call("web_fetch", url=f"{server}/page")
    assert result.is_error and "refusing to fetch" in result.content
    port = server.rsplit(":", 1)[1]
    assert call("web_fetch", url=f"http://localhost:{port}/page").is_error


def test_redirect_limit(call, private_ok, server: str) -> None:
    result = call("web_fetch", url=f"{server}/loop")
    assert result.is_error and "too many redirects" in result.content


def test_byte_cap_binary_and_status(call, private_ok, server: str) -> None:
    result = call("web_fetch", url=f"{server}/big", max_bytes=1000)
    assert "x" * 1000 in result.content and "x" * 1001 not in result.content
    assert "body cut at max_bytes=1000" in result.content
    binary = call("web_fetch", url=f"{server}/bin")
    assert binary.is_error and "binary" in binary.content
    missing = call("web_fetch", url=f"{server}/missing")
    assert missing.is_error and "Status: 404" in missing.content and "not here" in missing.content


def test_only_http_schemes(call, private_ok) -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/x", "gopher://x"):
        result = call("web_fetch", url=url)
        assert result.is_error and "only http and https" in result.content


@pytest.mark.parametrize(("address", "blocked"), [
    ("127.0.0.1", True), ("10.1.2.3", True), ("192.168.0.1", True), ("172.16.0.1", True),
    ("169.254.169.254", True), ("0.0.0.0", True), ("224.0.0.1", True), ("100.64.0.1", True),
    ("::1", True), ("fe80::1%eth0", True), ("fc00::1", True), ("::ffff:127.0.0.1", True),
    ("93.184.216.34", False), ("2606:2800:220:1:248:1893:25c8:1946", False),
])
def test_is_blocked(address: str, blocked: bool) -> None:
    assert is_blocked(address) is blocked


def test_html_to_text_handles_entities_and_nesting() -> None:
    text = html_to_text("<div><p>a &amp; b</p><script><!-- x --></script><p>c</p></div>",
                        "https://e.org/")
    assert text == "a & b\n\nc"


def test_bad_urls_are_error_results(call) -> None:
    for url in ("http://example.com:99999999/", "http:///nohost", "not a url"):
        assert call("web_fetch", url=url).is_error
