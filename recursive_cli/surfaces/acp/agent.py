"""The agent side of ACP: `initialize`, `authenticate`, `session/new`, `session/load`,
`session/prompt`, `session/cancel`, `session/set_mode`, answered over the library's JSON-RPC
connection (methods it does not route get Method not found; params that do not fit its
models get Invalid params).

A turn's ending is the prompt's `stopReason`: `end_turn` (the model answered, also after a
refusal of ours), `max_tokens` (its reply was cut off), `refusal` (the model or its filter
declined), `max_turn_requests` (`--max-steps` or another budget reached), `cancelled`
(`session/cancel`). A provider or session error is a JSON-RPC error with its one line. Every
answer's `_meta.recursive` says our finish reason and detail too.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any, cast

import acp
from acp import RequestError, schema

from ... import __version__
from ...core.errors import CliError
from ...core.events import FinishReason
from ...core.kernel import TurnOutcome
from ...core.messages import Image
from ...core.results import stop_reason
from ...launch.options import CommonOptions
from .session import MODES, AcpSession, launch_options, start_session

_BUDGETS = (FinishReason.MAX_STEPS, FinishReason.MAX_ITERATIONS, FinishReason.MAX_COST,
            FinishReason.MAX_DURATION, FinishReason.TRANSCRIPT_LIMIT, FinishReason.STUCK)
_ANSWERED = (FinishReason.COMPLETED, FinishReason.PERMISSION_DENIED)


def stop_reason_of(outcome: TurnOutcome) -> str | None:
    """ACP's `stopReason` for a turn's outcome; None for a failure (answered as an error)."""
    reason = outcome.finish_reason
    if reason is FinishReason.INTERRUPTED:
        return "cancelled"
    if reason in _ANSWERED:
        return "end_turn"
    if reason in _BUDGETS:
        return "max_turn_requests"
    if reason is FinishReason.PROVIDER_STOP:
        said = stop_reason(reason, outcome.detail)
        if said is None and outcome.detail.startswith("the model stopped: content_filter"):
            said = "refusal"  # (its filter declined: ACP has no other word for it)
        return said or "end_turn"
    return None


class RecursiveAgent:
    """The sessions of one `recursive acp` process, answering one client."""

    def __init__(self, common: CommonOptions) -> None:
        self.common = common
        self.sessions: dict[str, AcpSession] = {}
        self._client: Any = None

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=not self.common.no_session,  # (--no-session: nothing saved to load)
                prompt_capabilities=schema.PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=schema.McpCapabilities(http=True, sse=True),
                session_capabilities=schema.SessionCapabilities(
                    list=None if self.common.no_session else schema.SessionListCapabilities())),
            agent_info=schema.Implementation(name="recursive", title="recursive", version=__version__),
            auth_methods=[])

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse:
        return schema.AuthenticateResponse()  # (the model's key comes from the environment or config)

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **kwargs: Any) -> schema.NewSessionResponse:
        from ...launch.run import fresh_launch

        common = self._options(cwd, additional_directories)
        session = self._started(lambda: start_session(fresh_launch(common, "run"), self._client, mcp_servers,
                                                      given_mode=common.permission_mode is not None))
        await self._start_mcp(session)
        return schema.NewSessionResponse(session_id=session.id, modes=session.modes())

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None,
                           **kwargs: Any) -> schema.LoadSessionResponse:
        from ...launch.sessions import open_session

        if session_id in self.sessions:
            raise RequestError.invalid_params({"details": f"session {session_id} is already open here"})
        common = self._options(cwd, additional_directories)

        def start() -> AcpSession:
            spec = open_session(common, session_id)
            if spec.mode != "run":
                if spec.lock is not None:
                    spec.lock.release()
                raise CliError(f"session {session_id} is a {spec.mode} session: continue it with "
                               f"`recursive resume {session_id}`")
            return start_session(spec, self._client, mcp_servers, given_mode=common.permission_mode is not None)

        session = self._started(start)
        await session.replay()
        await self._start_mcp(session)
        return schema.LoadSessionResponse(modes=session.modes())

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> schema.ListSessionsResponse:
        """The saved sessions `session/load` can take up (run sessions; those of `cwd` when it
        is given), the latest first, all in one page."""
        from ...features.sessions.store import SessionStore
        from ...launch.settings import command_settings

        if cwd is not None and not Path(cwd).is_absolute():
            raise RequestError.invalid_params({"details": f"cwd must be an absolute path, not {cwd!r}"})
        try:
            home = command_settings(self.common, quiet=True).home
        except CliError as exc:
            raise RequestError.internal_error({"details": str(exc)}) from None
        metas = SessionStore(home).list(Path(cwd) if cwd else None)
        return schema.ListSessionsResponse(sessions=[
            schema.SessionInfo(session_id=meta.id, cwd=meta.workspace, title=meta.title or None, updated_at=meta.updated)
            for meta in reversed(metas) if meta.mode == "run"])

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> schema.SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params({"details": f"no mode {mode_id!r}; the modes: {', '.join(MODES)}"})
        session.set_mode(mode_id)
        return schema.SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> schema.PromptResponse:
        session = self._session(session_id)
        if session.running:
            raise RequestError.invalid_request({"details": "a prompt is already running in this session"})
        text, images = prompt_parts(prompt)
        if not text.strip() and not images:
            raise RequestError.invalid_params({"details": "the prompt has no text or image to send"})
        outcome = await session.prompt(text, images)
        meta = {"recursive": {"finish_reason": outcome.finish_reason.value, "detail": outcome.detail}}
        said = stop_reason_of(outcome)
        if said is None:
            raise RequestError.internal_error({"details": outcome.detail or outcome.finish_reason.value,
                                               "finish_reason": outcome.finish_reason.value})
        usage = outcome.usage
        return schema.PromptResponse(stop_reason=said, field_meta=meta, usage=schema.Usage(  # type: ignore[arg-type]
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            total_tokens=usage.input_tokens + usage.output_tokens,
            cached_read_tokens=usage.cache_read_tokens or None, cached_write_tokens=usage.cache_write_tokens or None))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def close(self) -> None:
        """End every session (the client went away, or a signal came)."""
        for session in list(self.sessions.values()):
            await session.close()
        self.sessions.clear()

    # -- helpers -------------------------------------------------------------------------------

    def _options(self, cwd: str, directories: list[str] | None) -> CommonOptions:
        try:
            return launch_options(self.common, cwd, directories)
        except ValueError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None

    def _started(self, start: Any) -> AcpSession:
        try:
            session: AcpSession = start()
        except CliError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        except Exception as exc:  # (a configuration or session that cannot be had)
            raise RequestError.internal_error({"details": f"{type(exc).__name__}: {exc}"}) from None
        self.sessions[session.id] = session
        session.open()
        return session

    async def _start_mcp(self, session: AcpSession) -> None:
        from ...launch.run import start_mcp

        await start_mcp(session.runtime)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        return session


def prompt_parts(blocks: list[Any]) -> tuple[str, list[Image]]:
    """A prompt's text and images: text as it is, an embedded resource's text in a fenced
    block under its URI, a resource link as its URI, images passed on; audio is not."""
    texts: list[str] = []
    images: list[Image] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, schema.ImageContentBlock):
            images.append(Image(media_type=block.mime_type, data=block.data, source=block.uri))
        elif isinstance(block, schema.ResourceContentBlock):
            texts.append(f"@{block.uri}")
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, schema.TextResourceContents):
                texts.append(f"{resource.uri}:\n```\n{resource.text}\n```")
            else:
                texts.append(f"@{resource.uri}")
    return "\n\n".join(texts), images


async def serve(common: CommonOptions) -> int:
    """Speak ACP on stdio until the client closes stdin (or a signal); the exit code."""
    from acp.agent.connection import AgentSideConnection
    from acp.interfaces import Agent

    from .transport import StdioTransport, claim_stdout

    transport = StdioTransport(claim_stdout())
    agent = RecursiveAgent(common)
    # (the protocol's optional methods, unstable ones included, are left out: Method not found)
    connection = AgentSideConnection(cast("Agent", agent), transport, listening=False)
    loop = asyncio.get_running_loop()
    listening = asyncio.ensure_future(connection.listen())
    stopped: list[int] = []

    def on_signal(signum: int) -> None:
        stopped.append(signum)
        listening.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        await listening
    except asyncio.CancelledError:
        pass
    except Exception as exc:  # (the connection failed: say so, end the sessions as saved)
        sys.stderr.write(f"error: the ACP connection failed: {type(exc).__name__}: {exc}\n")
    finally:
        await agent.close()
        await connection.close()
    return 128 + stopped[0] if stopped else 0
