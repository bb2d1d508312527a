"""The `web_fetch` tool: GET an http(s) URL and return it as readable text.

Redirects are followed by hand so that every hop is checked: only http and https, and —
unless the run allows private networks — no host that resolves to a loopback, private,
link-local, reserved or multicast address. The request goes through the package's one HTTP
transport (net/http1.py: the environment's proxies, TLS verified as for the model APIs,
gzip inflated a step at a time), imported on first use, not at startup.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urljoin, urlsplit

from msgspec import Meta

from ..core.tool import BaseTool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    from ..net.http1 import Response

DEFAULT_MAX_BYTES = 1_000_000
MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 30.0
HEADERS = {"User-Agent": "recursive-cli (web_fetch)",
           "Accept": "text/html, text/*;q=0.9, */*;q=0.5"}
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript",
              "+json", "+xml")


@dataclass(slots=True, kw_only=True)
class FetchArgs:
    url: Annotated[str, Meta(description="Full http:// or https:// URL.")]
    max_bytes: Annotated[int, Meta(ge=1, le=20_000_000, description="Most bytes of the body to download.")] = DEFAULT_MAX_BYTES


@dataclass(frozen=True)
class Page:
    """A fetched response body, cut at the byte cap."""

    url: str
    status: int
    content_type: str
    encoding: str | None
    body: bytes
    truncated: bool


class WebFetchTool(BaseTool[FetchArgs]):
    name = "web_fetch"
    description = (
        "Download a web page or file over http(s) and return it as text: HTML is turned into "
        "readable text (scripts and styles dropped, link targets kept in parentheses), other "
        "text types are returned as is, binary content is refused. Use it to read "
        "documentation, issues or API responses the task needs."
    )
    kind = "read"
    Args = FetchArgs
    subject_field = "url"

    async def run(self, args: FetchArgs, ctx: ToolContext) -> ToolResult:
        page = await fetch(args.url, args.max_bytes, ctx.allow_private_network)
        text = page_text(page)
        budget = max(ctx.output_limit - 500, 1000)
        notes = []
        if page.truncated:
            notes.append(f"[body cut at max_bytes={args.max_bytes}]")
        if len(text) > budget:
            text = text[:budget]
            notes.append(f"[text cut at {budget} characters]")
        header = f"URL: {page.url}\nStatus: {page.status}\nContent-Type: {page.content_type or '?'}"
        content = "\n\n".join([header, text.strip() or "(empty body)", *notes])
        return ToolResult(content, is_error=page.status >= 400,
                          summary=f"HTTP {page.status}, {len(page.body)} bytes")


async def fetch(url: str, max_bytes: int, allow_private: bool) -> Page:
    """GET `url`, following up to MAX_REDIRECTS redirects, checking every hop."""
    from ..core.errors import TransportError
    from ..net.http1 import REDIRECTS, Client

    client = Client(HEADERS, TIMEOUT_SECONDS)
    try:
        for _ in range(MAX_REDIRECTS + 1):
            await check_url(url, allow_private)
            response = await client.request("GET", url, follow=False)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECTS and location:
                    url = urljoin(url, location)
                    continue
                body, truncated = await read_capped(response, max_bytes)
                return Page(response.url, response.status_code, response.headers.get("content-type", ""),
                            response.charset, body, truncated)
            finally:
                await response.aclose()
    except TransportError as exc:
        raise ToolError(f"fetching {url} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        await client.aclose()
    raise ToolError(f"too many redirects (more than {MAX_REDIRECTS}); last one pointed to {url}")


async def read_capped(response: Response, max_bytes: int) -> tuple[bytes, bool]:
    """The response body up to `max_bytes`, and whether more was left unread."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:
            return bytes(body[:max_bytes]), True
    return bytes(body), False


async def check_url(url: str, allow_private: bool) -> None:
    """Refuse non-http(s) URLs and, unless allowed, hosts on private or special networks."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs can be fetched, not {url!r}")
    host = parts.hostname
    if not host:
        raise ToolError(f"{url!r} names no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise ToolError(f"{url!r} has an invalid port") from exc
    if allow_private:
        return
    for address in await resolve_host(host, port):
        if is_blocked(address):
            raise ToolError(f"refusing to fetch {url}: {host} resolves to {address}, a private, "
                            "loopback or otherwise non-public address")


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.run_in_executor(
            None, lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    except socket.gaierror as exc:
        raise ToolError(f"cannot resolve host {host}: {exc.strerror or exc}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def is_blocked(address: str) -> bool:
    """Whether an IP address is anything but a public unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved
            or ip.is_multicast or ip.is_unspecified or not ip.is_global)


def decode(body: bytes, encoding: str | None) -> str:
    """The body decoded with the declared charset, falling back to UTF-8."""
    try:
        return body.decode(encoding or "utf-8", "replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", "replace")


def page_text(page: Page) -> str:
    """The body as text: HTML converted, other text decoded, binary refused."""
    kind = page.content_type.split(";", 1)[0].strip().lower()
    text = decode(page.body, page.encoding)
    sniffed_html = text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    if "html" in kind or (not kind and sniffed_html):
        return html_to_text(text, page.url)
    if (kind and not any(marker in kind for marker in TEXT_TYPES)) or "\x00" in text[:8192]:
        raise ToolError(f"{page.url} returned binary content ({kind or 'unknown type'}, "
                        f"{len(page.body)} bytes); web_fetch only returns text")
    return text


SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object"})
BLOCK_TAGS = frozenset({"p", "div", "section", "article", "header", "footer", "nav", "aside",
                        "main", "ul", "ol", "table", "tr", "pre", "blockquote", "hr", "dl", "dt",
                        "dd", "form", "figure", "figcaption", "title", "details", "summary",
                        "h1", "h2", "h3", "h4", "h5", "h6"})


class TextExtractor(HTMLParser):
    """Collects the visible text of an HTML page, keeping paragraph breaks and link targets."""

    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.pieces: list[str] = []
        self.skipping = 0
        self.in_pre = 0
        self.links: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self.skipping += 1
        elif tag == "br":
            self.pieces.append("\n")
        elif tag == "li":
            self.pieces.append("\n- ")
        elif tag in BLOCK_TAGS:
            self.pieces.append("\n\n" + heading_mark(tag))
            if tag == "pre":
                self.in_pre += 1
        elif tag == "a":
            self.links.append(link_target(dict(attrs).get("href"), self.base_url))
        elif tag in ("td", "th"):
            self.pieces.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS:
            self.skipping = max(self.skipping - 1, 0)
        elif tag in BLOCK_TAGS:
            self.pieces.append("\n\n")
            if tag == "pre":
                self.in_pre = max(self.in_pre - 1, 0)
        elif tag == "a" and self.links:
            target = self.links.pop()
            if target:
                self.pieces.append(f" ({target})")

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if self.in_pre:
            self.pieces.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if not self.pieces or self.pieces[-1][-1:].isspace():
            text = text.lstrip()
        if text:
            self.pieces.append(text)

    def text(self) -> str:
        """The collected text with trailing spaces and blank-line runs removed."""
        text = re.sub(r"[ \t]+\n", "\n", "".join(self.pieces))
        return re.sub(r"\n{3,}", "\n\n", text).strip()


def heading_mark(tag: str) -> str:
    """`## ` for h2 and so on; nothing for other tags."""
    return "#" * int(tag[1]) + " " if re.fullmatch(r"h[1-6]", tag) else ""


def link_target(href: str | None, base_url: str) -> str | None:
    """An absolute http(s) link target worth showing, or None."""
    if not href or href.startswith(("#", "javascript:", "mailto:")):
        return None
    target = urljoin(base_url, href)
    return target if target.startswith(("http://", "https://")) else None


def html_to_text(html: str, base_url: str) -> str:
    """Readable text from HTML."""
    parser = TextExtractor(base_url)
    parser.feed(html)
    parser.close()
    return parser.text()
