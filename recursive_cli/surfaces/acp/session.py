"""One ACP session: a runtime over one of our sessions (new, or loaded = resumed), launched as
every front end launches one, its events sent as `session/update`s, its permission questions
asked with `session/request_permission`.

The client's `mcpServers` are the user's explicit choice (as `--mcp-config` is), so they start
whatever the workspace's trust; the workspace's own `.mcp.json` still needs trust.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import schema

from ...core.choices import PermissionMode
from ...core.events import FinishReason
from ...core.interrupt import InterruptToken
from ...core.kernel import TurnOutcome
from ...core.messages import Image, ToolCall
from ...core.results import make_result
from ...launch.options import CommonOptions
from . import updates
from .updates import UpdateSink

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ...agent import AgentRuntime
    from ...features.sessions.binding import SessionBinding
    from ...launch.run import Launch

# Our permission modes as the session's ACP modes, in the order a client lists them.
MODES: dict[str, tuple[str, str]] = {
    "ask": ("Ask", "Reads run; every edit and command asks first."),
    "accept-edits": ("Accept edits", "Reads and file edits run; commands are refused."),
    "auto": ("Auto", "Every tool runs without asking (commands inside the sandbox)."),
    "read-only": ("Read only", "Only reading tools run."),
    "plan": ("Plan", "Read and plan; nothing changes until you switch mode."),
}
DEFAULT_MODE: PermissionMode = "ask"  # an editor's user is there to be asked, unless config says otherwise
# What a presented plan may be answered with: the mode that carries it out, or none (keep planning).
PLAN_OPTIONS = (("accept-edits", "Yes, and accept edits", "allow_always"), ("ask", "Yes, and ask before edits", "allow_once"),
                ("auto", "Yes, and run without asking", "allow_always"), ("plan", "No, keep planning", "reject_once"))
CARRY_OUT = "The plan is approved: carry it out."
OPTIONS = (("allow_once", "Allow"), ("allow_always", "Always allow {tool}"),
           ("reject_once", "Reject"), ("reject_always", "Always reject {tool}"))


@dataclass
class AcpSession:
    """A session the client opened in this process: its runtime and the updates it sends."""

    id: str
    runtime: AgentRuntime
    binding: SessionBinding | None
    sink: UpdateSink
    client: Client
    pump: asyncio.Task[None] | None = None
    running: bool = False
    last: TurnOutcome | None = None
    started: float = field(default_factory=time.monotonic)
    _idle: asyncio.Event = field(default_factory=asyncio.Event)

    def open(self) -> None:
        """Start sending updates, and ask the client what `ask` mode asks."""
        self.pump = asyncio.create_task(self.sink.pump(
            lambda update: self.client.session_update(session_id=self.id, update=update)))
        self.runtime.set_permission_hook(self.ask)

    @property
    def mode(self) -> str:
        return str(self.runtime.permissions.mode)

    def modes(self) -> schema.SessionModeState:
        return schema.SessionModeState(current_mode_id=self.mode, available_modes=[
            schema.SessionMode(id=mode, name=name, description=text) for mode, (name, text) in MODES.items()])

    def set_mode(self, mode: str) -> None:
        """The client's `session/set_mode`, from the next tool call on."""
        from ...features.plan_mode import enter_plan_mode, leave_plan_mode

        runtime, policy = self.runtime, self.runtime.permissions
        if mode == policy.mode:
            return
        if mode == "plan":
            enter_plan_mode(runtime, policy)
        elif policy.mode == "plan":
            leave_plan_mode(runtime, policy, mode)  # type: ignore[arg-type]
        else:
            policy.mode = mode  # type: ignore[assignment]
        if self.binding is not None and mode != "plan":  # (a later resume goes on in it)
            self.binding.writer.update_meta(permission_mode=mode)

    async def ask(self, tool: str, subject: str) -> bool:
        """`session/request_permission` for a call the mode asks about; the client's answer,
        "always" remembered for the session (allow) or made a deny rule (reject)."""
        from ...features.permissions import Rule

        start = self.sink.last_started(tool)
        await self.sink.flush()  # (the client knows the call before it is asked about it)
        call = updates.as_request(start) if start is not None else schema.ToolCallUpdate(
            tool_call_id=f"ask-{time.monotonic_ns()}", title=f"{tool} {subject}".strip(), status="pending")
        options = [schema.PermissionOption(option_id=kind, name=name.format(tool=tool), kind=kind)  # type: ignore[arg-type]
                   for kind, name in OPTIONS]
        try:
            answer = await self.client.request_permission(session_id=self.id, tool_call=call, options=options)
        except ConnectionError:
            return False
        outcome = answer.outcome
        if not isinstance(outcome, schema.AllowedOutcome):
            return False  # cancelled: the turn is being cancelled too
        if outcome.option_id == "allow_always":
            self.runtime.permissions.remember(tool)
        elif outcome.option_id == "reject_always":
            self.runtime.permissions.deny.append(Rule(tool, None))
        return outcome.option_id in ("allow_once", "allow_always")

    async def prompt(self, text: str, images: Sequence[Image]) -> TurnOutcome:
        """One turn on the prompt; every update it made sent before this returns. In plan mode a
        presented plan is put to the client: approved, the mode it chose carries it out (in
        this same prompt); else the session stays in plan mode."""
        from ...features.plan_mode import plan_state

        runtime = self.runtime
        planning = runtime.permissions.mode == "plan"
        if planning:
            plan_state(runtime).plan = None
        self.running = True
        self._idle.clear()
        try:
            outcome = await self._turn(text, images)
            plan = plan_state(runtime).plan if planning else None
            if plan is not None and runtime.permissions.mode == "plan" and outcome.finish_reason is FinishReason.COMPLETED:
                mode = await self._approve(plan)
                if mode is not None:
                    self.set_mode(mode)
                    self.sink.put(schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode))
                    again = await self._turn(CARRY_OUT, ())
                    again.steps, again.usage = again.steps + outcome.steps, again.usage + outcome.usage
                    outcome = again
            self.last = outcome
        finally:
            self.running = False
            self._idle.set()
        await self.sink.flush()
        return outcome

    async def _turn(self, text: str, images: Sequence[Image]) -> TurnOutcome:
        from ...core.errors import SessionStateError
        from ...features.sessions.records import SessionWriteError

        runtime = self.runtime
        runtime.set_interrupt_token(InterruptToken())
        runtime.next_images = tuple(images)
        try:
            return await runtime.run(text)
        except SessionWriteError as exc:
            return TurnOutcome(FinishReason.IO_ERROR, detail=str(exc))
        except SessionStateError as exc:
            return TurnOutcome(FinishReason.INTERNAL_ERROR, detail=str(exc))

    async def _approve(self, plan: str) -> str | None:
        """Ask the client whether to carry out the plan, and in which mode (None: keep planning)."""
        start = self.sink.last_started_kind("switch_mode")
        await self.sink.flush()
        call = schema.ToolCallUpdate(
            tool_call_id=start.tool_call_id if start is not None else f"plan-{time.monotonic_ns()}",
            title="Carry out the plan?", kind="switch_mode", status="pending",
            content=[schema.ContentToolCallContent(type="content", content=updates.text_block(plan))])
        options = [schema.PermissionOption(option_id=mode, name=name, kind=kind)  # type: ignore[arg-type]
                   for mode, name, kind in PLAN_OPTIONS]
        try:
            answer = await self.client.request_permission(session_id=self.id, tool_call=call, options=options)
        except ConnectionError:
            return None
        outcome = answer.outcome
        chosen = outcome.option_id if isinstance(outcome, schema.AllowedOutcome) else "plan"
        return chosen if chosen in MODES and chosen != "plan" else None

    def cancel(self) -> None:
        """`session/cancel`: the running turn stops (its tool processes killed) and answers `cancelled`."""
        if self.running:
            self.runtime.interrupt()

    async def replay(self) -> None:
        """The conversation so far as updates (`session/load`), all sent before this returns."""
        for update in updates.history(self.runtime.transcript()[1:], self.subject, self.sink.resolve):
            self.sink.put(update)
        await self.sink.flush()

    def subject(self, call: ToolCall) -> str:
        tool = self.runtime.tools.get(call.name)
        return tool.subject(call.arguments_or_empty()) if tool is not None else ""

    async def close(self) -> None:
        """End the session: record how it ended, release it, stop sending."""
        runtime = self.runtime
        if self.running:  # (the turn ends, recorded, before the session is closed under it)
            runtime.interrupt()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._idle.wait(), 10)
        outcome = self.last or TurnOutcome(FinishReason.COMPLETED)
        with contextlib.suppress(Exception):
            runtime.emit(make_result(
                reason=outcome.finish_reason, text=outcome.text, detail=outcome.detail,
                session_id=self.id, num_turns=runtime.turn_index(), num_steps=runtime.total_steps,
                duration_ms=int((time.monotonic() - self.started) * 1000), usage=runtime.usage,
                cost=runtime.budget.total_cost, model_usage=runtime.budget.by_model))
        with contextlib.suppress(Exception):
            await runtime.aclose()
        if self.binding is not None:
            self.binding.close()
        if self.pump is not None:
            self.pump.cancel()


def launch_options(common: CommonOptions, cwd: str, directories: Sequence[str] | None) -> CommonOptions:
    """The command's options for a session in `cwd` (ACP sends an absolute path) and the
    client's additional directories."""
    workspace = Path(cwd)
    if not workspace.is_absolute():
        raise ValueError(f"cwd must be an absolute path, not {cwd!r}")
    if not workspace.is_dir():
        raise ValueError(f"cwd {cwd} is not a directory")
    extra = [Path(path) for path in directories or ()]
    return replace(common, workspace=workspace, session_id=None,
                   add_dir=[*(common.add_dir or []), *extra] or None)


def mcp_config(servers: Sequence[Any] | None) -> str | None:
    """The client's `mcpServers` as one `--mcp-config` JSON text (Claude's `.mcp.json` shape);
    None when there are none."""
    if not servers:
        return None
    entries: dict[str, dict[str, Any]] = {}
    for server in servers:
        if isinstance(server, schema.McpServerStdio):
            entries[server.name] = {"command": server.command, "args": list(server.args),
                                    "env": {pair.name: pair.value for pair in server.env}}
        elif isinstance(server, (schema.HttpMcpServer, schema.SseMcpServer)):
            entries[server.name] = {"type": server.type, "url": server.url,
                                    "headers": {pair.name: pair.value for pair in server.headers}}
    return json.dumps({"mcpServers": entries}) if entries else None


def start_session(spec: Launch, client: Client, servers: Sequence[Any] | None, given_mode: bool) -> AcpSession:
    """The runtime of `spec` as an ACP session (CliError when it cannot start)."""
    from ...features.mcp import McpState
    from ...launch.run import start_runtime

    config = mcp_config(servers)
    if config is not None:
        spec.mcp = McpState(configs=[config], strict=False)
    settings = spec.loaded.settings
    if not given_mode and spec.resumed is None and "permission_mode" not in spec.loaded.sources:
        spec.loaded.settings = dataclasses.replace(settings, permission_mode=DEFAULT_MODE)
    sink = UpdateSink(updates.workspace_resolver(spec.loaded.settings.workspace.expanduser().resolve()))
    spec.sinks = lambda _settings, _session_id: [sink]
    runtime, binding = start_runtime(spec)
    sink.resolve = sandbox_resolver(runtime)
    return AcpSession(spec.session_id, runtime, binding, sink, client)


def sandbox_resolver(runtime: AgentRuntime) -> updates.Resolve:
    """Paths as the file tools resolve them: real, inside the workspace and `--add-dir` roots."""
    from ...core.tool import ToolError

    sandbox = runtime.tool_context.sandbox

    def resolve(name: str) -> Path | None:
        try:
            return sandbox.resolve(name)
        except ToolError:
            return None

    return resolve
