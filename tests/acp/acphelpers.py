"""Helpers for the ACP tests: `recursive acp` as an editor starts it, a subprocess driven by the official Python ACP client
(`agent-client-protocol`'s `spawn_agent_process` / `ClientSideConnection`), whose pydantic
models check every message we send it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clitools import require

acp = require("acp")

from acp import schema  # noqa: E402

TIMEOUT = 30  # seconds for one exchange; each takes well under one


@dataclass
class RecordingClient:
    """The editor's side: keeps every update and permission request; answers the requests with
    `answers` in order (an option kind, "cancelled", or "cancel": session/cancel first)."""

    answers: list[str] = field(default_factory=list)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[schema.RequestPermissionRequest] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    init: schema.InitializeResponse | None = None  # the agent's answer to `initialize`
    conn: Any = None  # the connection to the agent

    async def request_permission(self, session_id: str, tool_call: schema.ToolCallUpdate,
                                 options: list[schema.PermissionOption], **kwargs: Any) -> schema.RequestPermissionResponse:
        self.asked.append(schema.RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options))
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == "cancel":  # the stop button while asked: cancel, then answer `cancelled` (as the spec says)
            await self.conn.cancel(session_id=session_id)
            answer = "cancelled"
        if answer == "cancelled":
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        chosen = next(option for option in options if option.kind == answer)
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected",
                                                                              option_id=chosen.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    def of(self, kind: str) -> list[Any]:
        """The updates of one kind (`agent_message_chunk`, `tool_call`, …), in order."""
        return [update for _, update in self.updates if update.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(update.content.text for update in self.of(kind))

    async def wait_for(self, kind: str) -> Any:
        """The first update of `kind`, once it has come."""
        async def first() -> Any:
            while not self.of(kind):
                self.changed.clear()
                await self.changed.wait()
            return self.of(kind)[0]

        return await asyncio.wait_for(first(), TIMEOUT)

    def on_connect(self, conn: Any) -> None:
        self.conn = conn


@contextlib.asynccontextmanager
async def agent(client: RecordingClient, *args: str, cwd: Path) -> AsyncIterator[tuple[Any, Any]]:
    """`recursive acp ARGS` spawned, initialized; the connection and the process."""
    env = {key: value for key, value in os.environ.items()}
    async with acp.spawn_agent_process(client, sys.executable, "-m", "recursive_cli", "acp", *args,
                                       env=env, cwd=cwd) as (conn, process):
        reply = await asyncio.wait_for(conn.initialize(protocol_version=acp.PROTOCOL_VERSION), TIMEOUT)
        assert reply.protocol_version == acp.PROTOCOL_VERSION
        client.init = reply
        yield conn, process


def prompts(client: RecordingClient, script: Path, workspace: Path, *texts: str, flags: tuple[str, ...] = (),
            mode: str | None = None) -> list[schema.PromptResponse]:
    """`recursive acp` on the scripted provider: one new session (in `mode`, if given), the
    prompts `texts` one after another; their answers."""
    async def main() -> list[schema.PromptResponse]:
        async with agent(client, "--provider", "scripted", "--script", str(script), *flags, cwd=workspace) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            if mode is not None:
                await conn.set_session_mode(session_id=session.session_id, mode_id=mode)
            answers = []
            for text in texts:
                answers.append(await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[
                    schema.TextContentBlock(type="text", text=text)]), TIMEOUT))
            return answers

    return asyncio.run(main())
