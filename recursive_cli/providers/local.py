"""Local model servers: which of the usual ones answers on this machine, and whether a host is local.

`find_local_servers` asks the usual ports of Ollama, llama.cpp, vLLM and LM Studio on
127.0.0.1 for `/v1/models`, all at once, within BUDGET_SECONDS. It only reports what it found:
a server found is offered to the user in `missing_key_help`, never used on its own.

`is_local_host` tells a loopback or private address (a server on this machine or this
network, where a refused connection means "not running", not "busy") from a remote one.

Standard library only (sockets, threads and `http.client`), so asking costs no SDK import.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
from typing import NamedTuple

HOST = "127.0.0.1"
# (port, server): the ports these servers listen on unless told otherwise.
PORTS: tuple[tuple[int, str], ...] = ((11434, "Ollama"), (8080, "llama.cpp"), (8000, "vLLM"),
                                      (1234, "LM Studio"))
CONNECT_TIMEOUT = 0.3  # seconds: a local port answers in well under a millisecond or not at all
BUDGET_SECONDS = 0.6  # for all the ports together (they are asked in parallel)
MAX_MODELS_SHOWN = 3


class LocalServer(NamedTuple):
    """An OpenAI-compatible server that answered `GET /v1/models` on this machine."""

    name: str
    base_url: str
    models: tuple[str, ...] = ()
    wants_key: bool = False

    def describe(self) -> str:
        """E.g. `Ollama answers at http://127.0.0.1:11434/v1 (models: qwen2.5-coder, llama3.2)`."""
        text = f"{self.name} answers at {self.base_url}"
        if self.wants_key:
            return text + " (it wants an API key)"
        if self.models:
            shown = ", ".join(self.models[:MAX_MODELS_SHOWN])
            more = f", … {len(self.models) - MAX_MODELS_SHOWN} more" if len(self.models) > MAX_MODELS_SHOWN else ""
            text += f" (models: {shown}{more})"
        return text


def find_local_servers(ports: tuple[tuple[int, str], ...] | None = None, host: str = HOST,
                       budget: float = BUDGET_SECONDS) -> list[LocalServer]:
    """The model servers answering on `ports` of `host`, in the order of `ports`; asks in parallel."""
    ports = PORTS if ports is None else ports
    found: dict[int, LocalServer] = {}
    lock = threading.Lock()

    def ask(port: int, name: str) -> None:
        server = probe(host, port, name, min(CONNECT_TIMEOUT, budget))
        if server is not None:
            with lock:
                found[port] = server

    threads = [threading.Thread(target=ask, args=entry, daemon=True, name=f"probe-{entry[0]}")
               for entry in ports]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + budget
    for thread in threads:  # a thread still waiting at the deadline is left behind (a daemon)
        thread.join(max(deadline - time.monotonic(), 0))
    with lock:
        return [found[port] for port, _ in ports if port in found]


def probe(host: str, port: int, name: str, timeout: float = CONNECT_TIMEOUT) -> LocalServer | None:
    """The server at `host:port` if it answers `/v1/models` as an OpenAI-compatible server does."""
    import http.client  # (only when no model is configured: not on a run's path)

    base_url = f"http://{host}:{port}/v1"
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", "/v1/models", headers={"Accept": "application/json"})
        response = connection.getresponse()
        status, body = response.status, response.read(256 * 1024)
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    if status in (401, 403):
        return LocalServer(name, base_url, wants_key=True)
    if status != 200:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None  # something listens there, but not a model server
    models = tuple(_printable(str(item["id"])) for item in data["data"] if isinstance(item, dict) and item.get("id"))
    return LocalServer(name, base_url, models)


def _printable(text: str, limit: int = 80) -> str:
    """A model name as the server sent it, minus anything a terminal would act on."""
    return "".join(char for char in text if char.isprintable())[:limit]


def missing_key_help(provider: str, model: str | None = None) -> str:
    """What to tell a user with neither an API key nor a base URL, in one line: the three ways on
    (a key; a local server, naming those that answer right now; the offline scripted provider)."""
    from ..core.settings import missing_key_message

    switch = "--provider openai " if provider != "openai" else ""
    found = find_local_servers()
    if found:
        first = found[0]
        suggestion = f"{switch}--api-base {first.base_url}"
        if first.models and not model:
            suggestion += f" -m {first.models[0]}"
        local = f"use a local server: {'; '.join(server.describe() for server in found)}; add {suggestion}"
    else:
        ports = ", ".join(f"{name} {port}" for port, name in PORTS)
        local = (f"start a local server and add {switch}--api-base http://127.0.0.1:PORT/v1 "
                 f"(none answers on the usual ports: {ports})")
    return (f"{missing_key_message(provider)}; or {local}; "
            "or try recursive offline: --provider scripted --script FILE (canned replies, as in examples/hello.json)")


def is_local_host(host: str | None) -> bool:
    """Whether `host` is this machine or a private network: a loopback, private or link-local address,
    `localhost`, or a name that resolves only to such addresses."""
    if not host:
        return False
    host = host.strip("[]")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return not _is_public(host)
    except ValueError:
        pass  # a name, not an address
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]) for info in infos}
    return bool(addresses) and not any(_is_public(address) for address in addresses)


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global
