"""Which proxy a request goes through, from the environment, as curl and httpx read it.

    HTTP_PROXY / http_proxy     for http:// URLs
    HTTPS_PROXY / https_proxy   for https:// URLs
    ALL_PROXY / all_proxy       for either, when the scheme's own variable is not set
    NO_PROXY / no_proxy         hosts that are reached directly: `*` (all), a name (itself and
                                every name under it: `example.com`, `.example.com`), an IP
                                address or a network (`10.0.0.0/8`), each with an optional `:port`

The lower-case name wins over the upper-case one (as curl and Python's `urllib` have it), and
HTTP_PROXY in upper case is not read when REQUEST_METHOD is set (a CGI script, where it is
the client's `Proxy:` header: "httpoxy"). A proxy URL without a scheme is `http://`; its user
and password go as `Proxy-Authorization: Basic …`. The transport (http1.py) sends plain http
to the proxy in absolute form, https through a CONNECT tunnel with TLS to the origin inside
it; an `https://` proxy is reached over TLS itself. SOCKS proxies are not supported (one clear
error, not a direct connection the user did not ask for).
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from ..core.errors import InvalidURL


class Proxy(NamedTuple):
    """One proxy: where it listens and the credentials it wants (a ready header value)."""

    scheme: str
    host: str
    port: int
    authorization: str | None
    shown: str  # its URL without the password, for messages

    @property
    def url(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{name}:{self.port}"


class _Bypass(NamedTuple):
    """One NO_PROXY entry."""

    host: str  # a name (lower case, no leading dot) or "" for a network
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    port: int | None

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and port != self.port:
            return False
        if self.network is not None:
            try:
                return ipaddress.ip_address(host) in self.network
            except ValueError:
                return False
        return host == self.host or host.endswith("." + self.host)


class Proxies(NamedTuple):
    """The proxies of an environment: one per scheme (or none), and the hosts that bypass them."""

    http: Proxy | None = None
    https: Proxy | None = None
    everything: bool = False  # NO_PROXY=*: no proxy at all
    bypass: tuple[_Bypass, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Proxies:
        """The proxies `env` names (InvalidURL for one that cannot be used)."""
        def first(*names: str) -> str:
            return next((env[name].strip() for name in names if env.get(name, "").strip()), "")

        http_names = ("http_proxy",) if env.get("REQUEST_METHOD") else ("http_proxy", "HTTP_PROXY")
        everything = first("all_proxy", "ALL_PROXY")
        http = first(*http_names) or everything
        https = first("https_proxy", "HTTPS_PROXY") or everything
        if not http and not https:
            return cls()
        no_proxy = first("no_proxy", "NO_PROXY")
        entries = [entry.strip() for entry in no_proxy.split(",") if entry.strip()]
        return cls(parse_proxy(http) if http else None, parse_proxy(https) if https else None,
                   "*" in entries, tuple(_bypass(entry) for entry in entries if entry != "*"))

    def for_origin(self, scheme: str, host: str, port: int) -> Proxy | None:
        """The proxy for a request to `scheme://host:port`, or None to go directly."""
        proxy = self.https if scheme == "https" else self.http
        if proxy is None or self.everything:
            return None
        name = host.lower().rstrip(".")
        if any(entry.matches(name, port) for entry in self.bypass):
            return None
        return proxy


def parse_proxy(url: str) -> Proxy:
    """A proxy URL as the variables hold it (`host:port`, `http://user:pass@host:port`)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidURL(f"unsupported proxy {_shown(url)!r}: only http:// and https:// proxies "
                         f"(not {scheme}://)")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise InvalidURL(f"invalid port in the proxy {_shown(url)!r}") from None
    if not host:
        raise InvalidURL(f"no host in the proxy {_shown(url)!r}")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    name = f"[{host}]" if ":" in host else host
    default = 443 if scheme == "https" else 80
    return Proxy(scheme, host, port or default, authorization, f"{scheme}://{name}:{port or default}")


def _shown(url: str) -> str:
    """`url` with its credentials left out."""
    return url.rpartition("@")[2]


def _bypass(entry: str) -> _Bypass:
    """One NO_PROXY entry: `name`, `.name`, `*.name`, an address or network, `[v6]`, each `:port`."""
    text, port = entry.lower(), None
    host = text
    if text.startswith("["):  # [::1] or [::1]:8080
        host, _, rest = text[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    elif text.count(":") == 1:
        name, _, number = text.partition(":")
        if number.isdigit():
            host, port = name, int(number)
    try:
        return _Bypass("", ipaddress.ip_network(host, strict=False), port)
    except ValueError:
        return _Bypass(host.lstrip("*").lstrip(".").rstrip("."), None, port)
