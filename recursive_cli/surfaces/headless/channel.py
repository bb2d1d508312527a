"""Our requests to the client (`can_use_tool`, `hook_callback`) and the waits for their answers."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable
from typing import Any

from ...core.errors import ControlError  # noqa: F401 (re-exported)
from . import protocol


class ControlChannel:
    """Sends control requests through `write` and resolves them as `control_response`s arrive."""

    def __init__(self, write: Callable[[dict[str, Any]], None]) -> None:
        self._write = write
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._closed: str | None = None

    async def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send `payload` and wait for the answer's `response`; ControlError for an error answer
        or a client gone. A request abandoned (its turn interrupted) is cancelled at the client."""
        if self._closed is not None:
            raise ControlError(self._closed)
        request_id = f"rq_{next(self._ids)}_{os.urandom(3).hex()}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._write(protocol.request(request_id, payload))
        try:
            return await future
        except asyncio.CancelledError:
            if self._closed is None:
                self._write(protocol.cancel(request_id))
            raise
        finally:
            self._pending.pop(request_id, None)

    def resolve(self, line: protocol.ControlResponseLine) -> bool:
        """Hand an answer to its request; False when no request of ours waits for it."""
        body = line.response
        future = self._pending.get(body.request_id)
        if future is None or future.done():
            return False
        if body.subtype == "error":
            future.set_exception(ControlError(body.error or "the client answered with an error"))
        else:
            future.set_result(body.response or {})
        return True

    def close(self, reason: str) -> None:
        """Fail every waiting request, and every later one, with `reason`."""
        self._closed = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ControlError(reason))
