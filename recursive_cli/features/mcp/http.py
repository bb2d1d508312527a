"""MCP servers over HTTP, spoken to by us (rpc.py for the JSON-RPC): streamable HTTP
(`"type": "http"`, revisions 2025-03-26 on) and the older HTTP with SSE (`"type": "sse"`,
2024-11-05).

Streamable HTTP: every message is a POST to the server's URL, accepting JSON or an event
stream. A request's answer comes back as one JSON message, or as events of which the last we
need is the answer (the server's own requests and log notices may come first: answered and
noted as on stdio); a notification or a reply is taken with 202. The `Mcp-Session-Id` the
server gives at `initialize` goes with every later message, with `MCP-Protocol-Version`; a
404 for a message carrying it means the server dropped the session, so it is started again
(one new `initialize`) and the message sent once more. At close the session is ended with a
DELETE. What the server sends on its own (a change of its tools, its own requests) comes on
a GET stream opened after `initialize`, when the server has one.

HTTP with SSE: a GET opens the event stream, whose first `endpoint` event names where to
POST; every answer comes back on the stream as a `message` event.

The requests go through the package's one HTTP transport (net/http1.py, the environment's
proxies included), with the entry's headers (config.py refused any holding CR, LF or NUL); each wait on the network is bounded
by READ_TIMEOUT (a quiet event stream included), each call by the tool timeout above us.
Connection failures end the session as closed (the manager restarts it once); an HTTP error
status is an error for that call alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, TextIO
from urllib.parse import urljoin

from ...core.errors import McpHttpError, McpSessionGone, TransportError
from ...net.http_client import Answer, EventStream, Sender, sender
from .config import HttpServer
from .models import ProtocolError
from .rpc import ConnectionClosed, RpcPeer, stop_task

READ_TIMEOUT = 300.0  # seconds of silence on a connection (as the `mcp` SDK's SSE read timeout)
CLOSE_TIMEOUT = 2.0  # for the DELETE that ends a session
JSON_OR_EVENTS = "application/json, text/event-stream"


HttpError = McpHttpError  # (the name features/mcp/client.py knows)


class _HttpPeer(RpcPeer):
    """What both HTTP transports share: the client, the replies sent without waiting."""

    def __init__(self, spec: HttpServer, log: TextIO) -> None:
        super().__init__(log)
        self.url = spec.url
        self._http: Sender = sender(dict(spec.headers), READ_TIMEOUT)

    async def _post(self, url: str, message: dict[str, Any], headers: dict[str, str]) -> Answer:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            return await self._http.request("POST", url, body, {"Content-Type": "application/json", **headers})
        except TransportError as exc:
            raise ConnectionClosed(f"cannot reach the server: {exc}") from exc



class HttpSession(_HttpPeer):
    """One streamable HTTP server."""

    def __init__(self, spec: HttpServer, log: TextIO) -> None:
        super().__init__(spec, log)
        self.session_id: str | None = None
        self._client_info: tuple[str, str] = ("", "")
        self._listener: asyncio.Future[None] | None = None

    async def initialize(self, client_name: str, client_version: str) -> None:
        self._client_info = (client_name, client_version)
        await super().initialize(client_name, client_version)
        if self._listener is None or self._listener.done():
            self._listener = asyncio.ensure_future(self._listen())

    async def _listen(self) -> None:
        """The GET stream of what the server sends on its own (a change of its tools, its own
        requests): opened again when it ends or breaks (after 1 s, doubling to 30 s while it
        keeps ending at once); a server without one answers 405, and that is all."""
        delay = 1.0
        loop = asyncio.get_running_loop()
        while self._closed is None:
            opened = loop.time()
            if not await self._listen_once():
                return
            delay = 1.0 if loop.time() - opened > 30 else min(delay * 2, 30.0)
            await asyncio.sleep(delay)

    async def _listen_once(self) -> bool:
        """One GET stream, read to its end; False when the server has none."""
        try:
            response = await self._http.request("GET", self.url, b"", {"Accept": "text/event-stream",
                                                                        **self._session_headers()})
        except TransportError:
            return True
        try:
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if response.status_code != 200 or kind != "text/event-stream":
                return False
            async for _event, data in EventStream(response):
                if data:
                    self._receive_json(data)
        except TransportError:
            pass
        finally:
            await response.aclose()
        return True

    def _session_headers(self) -> dict[str, str]:
        headers = {}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        try:
            return await super().request(method, params)
        except McpSessionGone:
            self.session_id, self.protocol_version = None, ""
            await super().initialize(*self._client_info)
            return await super().request(method, params)

    async def _send(self, message: dict[str, Any]) -> None:
        headers = {"Accept": JSON_OR_EVENTS, **self._session_headers()}
        response = await self._post(self.url, message, headers)
        try:
            await self._read_answer(message, response, carried="Mcp-Session-Id" in headers)
        except TransportError as exc:
            raise ConnectionClosed(f"the connection to the server broke: {exc}") from exc
        finally:
            await response.aclose()
        number = message.get("id") if "method" in message else None
        if isinstance(number, int) and not self.answered(number):
            raise ProtocolError(f"the server's answer to {message['method']} carried no result")

    async def _read_answer(self, message: dict[str, Any], response: Answer, carried: bool) -> None:
        """Take the answer to one POST: the session's id from `initialize`'s, the messages of
        a request's (JSON or events, until its own answer has come)."""
        status = response.status_code
        if status == 404 and carried:
            raise McpSessionGone()
        if status >= 400:
            raise await http_error(response)
        if message.get("method") == "initialize":
            self.session_id = response.headers.get("mcp-session-id") or None
        if status == 202 or "method" not in message or "id" not in message:
            await response.aread()
            return
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "text/event-stream":
            async for _event, data in EventStream(response):
                if data:
                    self._receive_json(data)
                if self.answered(message["id"]):
                    return
        else:
            self._receive_json(await response.aread())

    async def close(self, graceful: bool = True) -> None:
        await self._finish_soon(CLOSE_TIMEOUT)
        await stop_task(self._listener)
        if self.session_id is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._delete(), CLOSE_TIMEOUT)
        self._close_pending(ConnectionClosed("the connection was closed"))
        await self._http.aclose()

    async def _delete(self) -> None:
        response = await self._http.request("DELETE", self.url, b"", self._session_headers())
        await response.aclose()


class SseSession(_HttpPeer):
    """One server over HTTP with SSE: its event stream held open, messages POSTed to the
    endpoint it named."""

    def __init__(self, spec: HttpServer, log: TextIO) -> None:
        super().__init__(spec, log)
        self._endpoint: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._endpoint_url = ""
        self._stream: Answer | None = None
        self._reader: asyncio.Future[None] | None = None

    async def initialize(self, client_name: str, client_version: str) -> None:
        self._reader = asyncio.ensure_future(self._listen())
        self._endpoint_url = await asyncio.shield(self._endpoint)
        await super().initialize(client_name, client_version)

    async def _listen(self) -> None:
        error: BaseException = ConnectionClosed("the server closed the connection")
        try:
            response = await self._http.request("GET", self.url, b"", {"Accept": "text/event-stream"})
            self._stream = response
            if response.status_code >= 400:
                raise await http_error(response)
            async for event, data in EventStream(response):
                if event == "endpoint" and not self._endpoint.done():
                    self._endpoint.set_result(urljoin(self.url, data.strip()))
                elif event in (None, "message") and data:
                    self._receive_json(data)
        except HttpError as exc:
            error = exc
        except TransportError as exc:
            error = ConnectionClosed("the server closed the connection" if self._endpoint.done()
                                     else f"cannot reach the server: {exc}")
            error.__cause__ = exc
        finally:
            if not self._endpoint.done():
                self._endpoint.set_exception(error)
            self._close_pending(error)

    async def _send(self, message: dict[str, Any]) -> None:
        response = await self._post(self._endpoint_url, message, {})
        try:
            if response.status_code >= 400:
                raise await http_error(response)
            await response.aread()
        except TransportError as exc:
            raise ConnectionClosed(f"the connection to the server broke: {exc}") from exc
        finally:
            await response.aclose()

    async def close(self, graceful: bool = True) -> None:
        await self._finish_soon(CLOSE_TIMEOUT)
        await stop_task(self._reader)
        if self._stream is not None:
            await self._stream.aclose()
        if not self._endpoint.done():
            self._endpoint.cancel()
        elif not self._endpoint.cancelled():
            self._endpoint.exception()  # (seen: no "exception was never retrieved" when nobody waited)
        self._close_pending(ConnectionClosed("the connection was closed"))
        await self._http.aclose()


async def http_error(response: Answer) -> HttpError:
    """The error for an answer with status 400 or more (its body read)."""
    try:
        text = (await response.aread()).decode("utf-8", "replace").strip()
    except TransportError:
        text = ""
    message = f"HTTP {response.status_code}" + (f": {text[:300]}" if text else "")
    if response.status_code in (401, 403):
        message += (" (the server wants authorization: give this server's entry a token in its \"headers\", "
                    "e.g. \"Authorization\": \"Bearer ${TOKEN}\"; recursive runs no OAuth sign-in)")
    return HttpError(message)
