"""ChatSession: one interactive session over one runtime — prompt, turn, prompt again.

Ctrl-C during a turn stops it at the next step boundary: at once while the model is asked,
after the tool call under way when one runs; a second Ctrl-C stops that call's processes
now; a third leaves the process. Either way the turn ends `interrupted`, recorded as any
turn is, and the prompt comes back with the session as it was. What is typed during a turn
is queued (`AgentRuntime.enqueue`) and runs as the next turns; what an interrupted turn
leaves queued goes back into the input line.
"""

from __future__ import annotations

import asyncio
import collections
import os
import re
import signal
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING

from ... import __version__
from ...core.choices import PermissionMode
from ...core.errors import ImageError, SessionStateError
from ...core.events import EventSink, FinishReason
from ...core.interrupt import InterruptToken
from ...core.kernel import TurnOutcome
from ...core.messages import Image, unfinished
from ...core.pricing import price_for
from ...core.settings import Settings
from ...features.plan_mode import leave_plan_mode, plan_state
from ...features.sessions.records import SessionWriteError
from ...sinks.terminal import cost_text, printable
from .render import ChatSink
from .typeahead import TypeAhead

if TYPE_CHECKING:
    from ...agent import AgentRuntime
    from ...core.provider import ChatProvider
    from ...launch.run import Launch
    from .input import InputLine

ASK_QUESTION = " [y]es / [n]o / [a]lways for this tool: "
# The modes a plan approved in chat is carried out in (the key pressed → the mode).
PLAN_MODES: dict[str, PermissionMode] = {"e": "accept-edits", "a": "auto", "k": "ask"}
PLAN_MODES_QUESTION = "Carry it out in [e]accept-edits (Enter) / [a]uto / as[k] mode: "
_COMMAND = re.compile(r"/[A-Za-z?][A-Za-z0-9_?-]*(\s|$)")  # (`/mcp__git__review` too)


class ChatSession:
    """The interactive session of one launch; `then` says what follows it: None (leave), ""
    (a new session: /clear) or a session id (/resume ID)."""

    def __init__(self, spec: Launch, first_prompt: str = "") -> None:
        self.spec = spec
        self.first_prompt = first_prompt
        self.then: str | None = None
        self.turns = 0  # turns run in this process
        self.done = False
        self.retired: list[ChatProvider] = []  # providers /model replaced, closed at the end
        self._sink: ChatSink | None = None
        self._runtime: AgentRuntime | None = None
        self._typeahead: TypeAhead | None = None
        self._input: InputLine | None = None
        self._busy = False
        self._presses = 0  # Ctrl-C presses during this turn
        self._stop_after_tool = False
        self._asking = False
        self._terminated: int | None = None  # SIGTERM: leave
        self._pending = ""  # text for the next input line (queued messages an interrupt left)
        self._failed: TurnOutcome | None = None  # the session cannot be written: it ends
        self._queued: collections.deque[str] = collections.deque()  # queued, not started yet
        self._shell_notes: list[str] = []  # `!` commands and their output, for the next message

    # -- the parts, once launched ---------------------------------------------------------

    def sinks(self, settings: Settings, session_id: str) -> list[EventSink]:
        """The launch's sinks (`Launch.sinks`): the chat's terminal display."""
        self._sink = ChatSink(sys.stdout, settings.quiet, settings.verbose, settings.prices)
        return [self._sink]

    @property
    def runtime(self) -> AgentRuntime:
        assert self._runtime is not None, "the session is not running"
        return self._runtime

    @property
    def sink(self) -> ChatSink:
        assert self._sink is not None, "the session has no display"
        return self._sink

    @property
    def settings(self) -> Settings:
        return self.spec.loaded.settings

    @property
    def home(self) -> Path:
        return self.spec.loaded.home

    # -- the loop ---------------------------------------------------------------------------

    async def run(self, runtime: AgentRuntime) -> TurnOutcome:
        """The session's work (`launch`): prompts and turns until the user leaves."""
        from .commands import COMMANDS, mcp_prompts, run_command
        from .input import InputLine

        self._runtime = runtime
        sink = self.sink
        sink.footer = self._footer
        sink.on_tool_finished = self._tool_finished
        sink.on_turn_started = self._turn_started
        self._typeahead = TypeAhead(sys.stdin.fileno(), self._queue, sink.region.refresh, self._on_escape)
        self._input = InputLine(None if self.settings.no_session else self.home,
                                runtime.workspace, {**{c.name: c.help for c in COMMANDS}, **mcp_prompts(self)},
                                self.status)
        self._install_signals()
        runtime.set_permission_hook(self._ask)
        runtime.permissions.halt_on_no = True
        self._welcome()
        try:
            if self.spec.resumed is not None:
                from .history import last_context_tokens, show_history

                sink.context_tokens = last_context_tokens(runtime.transcript())
                show_history(sink, runtime.transcript())
                if unfinished(runtime.transcript()[1:]):
                    sink.line("the last turn was cut short: it carries on", "dim")
                    await self.turn(None)
            if self.first_prompt and not self.done:  # (`recursive chat PROMPT`: shown as if typed)
                self._echo(self.first_prompt)
                await self.turn(self.first_prompt)
            while not self.done:
                text = await self._read()
                if text is None:
                    break
                if _COMMAND.match(text.strip()):  # (`/usr/bin/env is odd` is a message, not a command)
                    await run_command(self, text.strip())
                elif text.strip().startswith("!") and text.strip()[1:].strip():
                    await self.shell(text.strip()[1:].strip())
                elif text.strip():
                    await self.turn(text)
        finally:
            for provider in self.retired:
                await provider.aclose()
        return self._ending()

    def _ending(self) -> TurnOutcome:
        if self._failed is not None:
            return self._failed
        if self._terminated is not None:
            return TurnOutcome(FinishReason.INTERRUPTED, detail="terminated")
        if (self.turns or self.spec.resumed is not None) and not self.settings.no_session:
            sid = self.runtime.session_id
            self.sink.line(f"session {sid} saved · to go on: recursive resume {sid}", "dim")
        return TurnOutcome(FinishReason.COMPLETED)

    def _welcome(self) -> None:
        runtime = self.runtime
        what = "resumed" if self.spec.resumed is not None else "new"
        self.sink.line(f"recursive {__version__} · {what} session {runtime.session_id} · "
                       f"{runtime.provider.model}", "bold")
        self.sink.line(f"in {runtime.workspace} · /help lists the commands · Alt-Enter for a new "
                       "line · Esc or Ctrl-C stops a turn · Ctrl-D leaves", "dim")

    async def _read(self) -> str | None:
        """The next message; None to leave (Ctrl-D, Ctrl-C twice on an empty line, SIGTERM)."""
        assert self._input is not None
        default, self._pending = self._pending, ""
        warned = False
        while self._terminated is None:
            try:
                return await self._input.read(default)
            except EOFError:
                return None
            except KeyboardInterrupt:
                if warned:
                    return None
                warned, default = True, ""
                self.sink.line("press Ctrl-C again to exit (or Ctrl-D)", "dim")
        return None

    # -- turns ------------------------------------------------------------------------------

    async def turn(self, text: str | None) -> TurnOutcome:
        """One turn on `text` (None: carry on a cut-short one), then the queued messages; the
        `!` commands run since the last turn go first, as context."""
        runtime = self.runtime
        if text is not None:
            runtime.next_images += self._mentioned_images(text)
        if text is not None and self._shell_notes:
            text = "\n\n".join([*self._shell_notes, text])
            self._shell_notes.clear()
        planning = runtime.permissions.mode == "plan"
        if planning:
            plan_state(runtime).plan = None
        work = runtime.run(text) if text is not None else runtime.continue_turn()
        outcome = await self.busy(work, turns=True)
        plan = plan_state(runtime).plan if planning else None
        if plan is not None and runtime.permissions.mode == "plan" and not self.done:
            mode = await self._approve(plan)
            if mode is not None:
                leave_plan_mode(runtime, runtime.permissions, mode)
                self.sink.line(f"permission mode: {mode} · carrying out the plan", "dim")
                return await self.turn("go")
            self.sink.line("still in plan mode: say what to change in the plan", "dim")
        return outcome

    async def _approve(self, plan: str) -> PermissionMode | None:
        """Show the plan and ask for approval; the mode to carry it out in, or None (not approved)."""
        assert self._typeahead is not None
        self.sink.line("plan:", "bold")
        for line in plan.splitlines():
            self.sink.line("  " + line)
        if not await self.confirm("Approve this plan?"):
            return None
        with self._typeahead.capturing():
            key = await self._typeahead.answer(PLAN_MODES_QUESTION, sys.stdout, "eak\r\n", on_end="e")
        mode = PLAN_MODES.get(key, "accept-edits")
        sys.stdout.write(mode + "\n")
        sys.stdout.flush()
        return mode

    def _mentioned_images(self, text: str) -> tuple[Image, ...]:
        """The images a message names as `@shot.png` (workspace-relative), each read; one that
        cannot be is said in red and left out."""
        from ...core.images import image_mentions, load_image

        images = []
        for name in image_mentions(text):
            try:
                images.append(load_image(self.runtime.workspace / name, name))
            except ImageError as exc:
                self.sink.line(f"error: {exc}; the message goes without it", "red")
        return tuple(images)

    async def busy(self, work: Awaitable[TurnOutcome | object], turns: bool = False) -> TurnOutcome:
        """Run `work` as a turn runs: its own interrupt token, keys queued, the status line up."""
        runtime, sink = self.runtime, self.sink
        runtime.set_interrupt_token(InterruptToken())
        self._busy, self._presses, self._stop_after_tool = True, 0, False
        sink.region.active = True
        sink.region.show(None)
        outcome: TurnOutcome
        try:
            assert self._typeahead is not None
            with self._typeahead.capturing():
                result = await work
            outcome = result if isinstance(result, TurnOutcome) else TurnOutcome(FinishReason.COMPLETED)
        except SessionWriteError as exc:
            outcome = self._failed = TurnOutcome(FinishReason.IO_ERROR, detail=str(exc))
            self.done = True
        except SessionStateError as exc:
            outcome = TurnOutcome(FinishReason.INTERNAL_ERROR, detail=str(exc))
            sink.line(f"error: {exc}", "red")
        except Exception as exc:  # a bug ends the turn, not the session
            outcome = TurnOutcome(FinishReason.INTERNAL_ERROR, detail=f"internal error: {type(exc).__name__}: {exc}")
            sink.line(f"error: {outcome.detail}", "red")
        finally:
            self._busy = False
            sink.region.stop()
        if turns:
            self.turns += 1
        self._take_back()
        return outcome

    async def shell(self, command: str) -> None:
        """`!command`: run now (passthrough.py); it and its output go with the next message."""
        from .passthrough import run_passthrough

        note = await run_passthrough(self, command)
        if note:
            self._shell_notes.append(note)

    def _take_back(self) -> None:
        """What the turn left queued, and the line left half typed, go back into the input line."""
        assert self._typeahead is not None
        left = self.runtime.take_queued()
        self._queued.clear()
        typed = self._typeahead.take_text()
        if left:
            self.sink.line(f"{len(left)} queued message{'s' if len(left) > 1 else ''} not sent "
                           "(the turn did not finish): back in the input line", "yellow")
        self._pending = "\n\n".join(part for part in (*left, typed) if part.strip())

    def _queue(self, text: str) -> None:
        """A line typed during a turn: it runs after the turn, in order."""
        self.runtime.enqueue(text)
        self._queued.append(text)
        first = text.strip().splitlines()[0] if text.strip() else ""
        more = " …" if "\n" in text.strip() else ""
        self.sink.line(f"queued › {first}{more}", "cyan")
        self.sink.region.refresh()

    def _turn_started(self, prompt: str) -> None:
        """A queued message starts its turn: shown as if typed now, so the turns stay apart."""
        if self._queued and prompt == self._queued[0]:
            self._queued.popleft()
            self._echo(prompt)

    def _echo(self, prompt: str) -> None:
        """A message as the input line leaves a typed one on the screen."""
        self.sink.line("› " + prompt.strip().replace("\n", "\n  "), "bold")

    # -- status -----------------------------------------------------------------------------

    def status(self) -> str:
        """`model · 1,234 tokens · $0.0012 · context 3% · +1 queued`."""
        from ...features.compaction import context_window

        runtime = self.runtime
        usage = runtime.usage
        model = runtime.provider.model
        share = self.sink.context_tokens * 100 // max(1, context_window(model))
        parts = [model, f"{usage.input_tokens + usage.output_tokens:,} tokens", cost_text(self.cost()), f"context {share}%"]
        queued = runtime.queue_len()
        if queued:
            parts.append(f"+{queued} queued")
        return printable(" · ".join(parts))

    def cost(self) -> float | None:
        """The session's cost so far; None for an unpriced model (unknown from the start, not
        $0.0000 until its first reply)."""
        cost = self.runtime.budget.total_cost
        if not cost and price_for(self.runtime.provider.model, self.settings.prices) is None:
            return None
        return cost

    def _footer(self) -> list[str]:
        lines = [self.status() + (" · Esc or Ctrl-C stops" if self._busy else "")]
        typed = self._typeahead.text if self._typeahead is not None else ""
        if typed:
            lines.append("› " + printable(typed.replace("\n", " ↵ ")) + "▏")
        elif self._busy:
            lines.append("› (type to queue a message)")
        return lines

    # -- Ctrl-C, SIGTERM, permission questions -----------------------------------------------

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
        loop.add_signal_handler(signal.SIGHUP, self._on_sigterm, signal.SIGHUP)  # the terminal closed

    def _on_sigint(self) -> None:
        if not self._busy:  # at the prompt Ctrl-C is a key (and between prompts there is nothing to stop)
            return
        runtime, sink = self.runtime, self.sink
        self._presses += 1
        if self._presses == 1 and sink.tool_running and not self._asking:
            self._stop_after_tool = True
            sink.line(f"stopping once {sink.tool_running} ends · Ctrl-C again stops it now", "yellow")
        elif self._presses == 1:
            runtime.interrupt_token.set(signal.SIGINT)
        elif self._presses == 2:
            sink.line("stopping the running command", "yellow")
            runtime.interrupt(signal.SIGINT)  # kills the tool's process group
        else:
            sys.stderr.write("\ninterrupted three times: exiting now\n")
            runtime.tool_context.processes.kill_all()
            from ...features.mcp import kill_servers_now

            kill_servers_now(runtime)
            os._exit(130)

    def _on_escape(self) -> None:
        """Esc during a turn: what Ctrl-C does, but never the third press that leaves."""
        if self._presses < 2:
            self._on_sigint()

    def _tool_finished(self) -> None:
        if self._stop_after_tool:
            self.runtime.interrupt_token.set(signal.SIGINT)

    def _on_sigterm(self, signum: int = signal.SIGTERM) -> None:
        self._terminated = signum
        self.done = True
        self.runtime.interrupt(signum)
        app = self._input.session.app if self._input is not None else None
        if app is not None and app.is_running:
            app.exit(exception=EOFError())

    async def confirm(self, question: str) -> bool:
        """A yes/no question at the prompt: `y` is yes; `n`, Enter, Esc and Ctrl-D are no."""
        assert self._typeahead is not None
        with self._typeahead.capturing():
            key = await self._typeahead.answer(printable(question) + " [y/N] ", sys.stdout, "yn\r\n\x1b", on_end="n")
        sys.stdout.write(("yes" if key == "y" else "no") + "\n")
        sys.stdout.flush()
        return key == "y"

    async def _ask(self, tool: str, subject: str) -> bool:
        """`--permission-mode ask`: what the call would change (a diff, the whole command), then
        the question inline, the status line off meanwhile. "n" ends the turn: the person says
        what to do instead, as at Claude Code's question."""
        from ...sinks.live import progress_paused
        from .preview import preview

        assert self._typeahead is not None
        sink = self.sink
        call = sink.current_call
        shown = preview(call, self.runtime.workspace) if call is not None and call.name == tool else []
        what = "(the command above)" if shown and tool == "run_shell" else subject
        question = printable(f"Allow {tool} {what}?") + ASK_QUESTION
        self._asking = True
        try:
            with progress_paused():
                for line in shown:
                    sink.line(line.text, line.style)
                try:
                    key = await self._typeahead.answer(question, sys.stdout, "yna", on_end="n")
                except asyncio.CancelledError:
                    sys.stdout.write("\n")
                    raise
                sys.stdout.write({"y": "yes", "n": "no", "a": "always"}[key] + "\n")
                sys.stdout.flush()
        finally:
            self._asking = False
        if key == "a":
            self.runtime.permissions.remember(tool)
        if key == "n":
            sink.declined = " ".join(f"{tool} {subject}".split())
        return key in ("y", "a")
