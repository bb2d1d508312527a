"""The headless process: one runtime, driven by Claude Code's stream-json protocol.

With `--input-format stream-json` the process stays up: a task reads stdin, queueing each
`user` message as a prompt and answering control requests at once, also while a turn runs
(`interrupt` ends the turn, and the process goes on with the next prompt;
`set_permission_mode` applies from the next tool call and `set_model` from the next model
call, in the running turn too). Turns run one after another, each opened by a `system`
`init` line and closed by a `result` line; the prompts that came while a turn ran are taken
together into the next one, as Claude Code takes them. End of stdin ends the process once the prompts
already received have run, with the session saved. With text input (`-p PROMPT`) one turn
runs on PROMPT (or stdin's text).

The exit code is the last turn's (SPEC §4), except that a turn the model ended with an answer
after a denied call is a success here, as in Claude Code, unless `--fail-on permission_denied`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, cast

from ...core.errors import SessionStateError
from ...core.events import AgentEvent, FinishReason, RunFinished, SubagentFinished, SubagentStarted
from ...core.interrupt import InterruptToken
from ...core.kernel import TurnOutcome
from ...core.messages import Image, Usage
from ...core.provider import ChatProvider
from ...core.results import errors, exit_code_for, stop_reason
from ...features.sessions.ids import is_uuid
from ...features.sessions.records import SessionWriteError
from ...sinks.claude_stream import TurnResult
from . import hooks as hook_rules
from . import protocol
from . import result as claude_result
from .build import HeadlessRun
from .control import ClientRequests

# Claude Code's subtype for an interrupted turn (the others are core/results.py's).
_CLAUDE_SUBTYPES = {FinishReason.INTERRUPTED: "error_during_execution"}
_STOP_HOOK_ROUNDS = 5  # a Stop hook that keeps saying "go on" is obeyed this often per prompt
_EOF = None


class _Prompt(NamedTuple):
    """A prompt waiting in the inbox: its text, the images that came with it, the host's
    stamps the turn's result echoes (`origin`, the `uuid`s), and whether it came while a turn ran."""

    text: str
    images: tuple[Image, ...] = ()
    origin: dict[str, Any] | None = None
    uuids: tuple[str, ...] = ()
    queued: bool = False
    uuid: str | None = None  # the id of its transcript entry: the client's, or one chosen (claude_view.py)

    def stamps(self) -> dict[str, Any]:
        """What the turn's result echoes: `origin`, and the prompts' uuids as Claude Code gives them."""
        ids = {"user_message_uuid": self.uuids[-1], "user_message_uuids": list(self.uuids)} if self.uuids else {}
        return {"origin": self.origin, **ids}

    def joined(self, later: _Prompt) -> _Prompt:
        return _Prompt(f"{self.text}\n\n{later.text}", self.images + later.images, self.origin,
                       self.uuids + later.uuids, True, self.uuid)


@dataclass
class Turn:
    """The outcome of one prompt (a Stop hook may have added turns to it) and its exit code."""

    outcome: TurnOutcome
    code: int
    steps: int
    usage: Usage
    seconds: float


class HeadlessServer:
    """Runs prompts from stdin (or one from the command line) and answers the client."""

    def __init__(self, run: HeadlessRun) -> None:
        self.run = run
        self.runtime = run.runtime
        self._inbox: asyncio.Queue[_Prompt | None] = asyncio.Queue()
        self._turn_running = False
        self._stopping: int | None = None  # a signal ended the process: no more prompts
        self._last: Turn | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._started = time.monotonic()
        self._requests = ClientRequests(run, interrupt=self._interrupt)
        self._stamp: dict[str, Any] = {}  # what the running prompt's result echoes of the host's stamps
        self._busy = False  # a prompt was taken and its turn has not ended (later prompts queue behind it)
        run.runtime.add_event_sink(self)  # (SubagentStart and SubagentStop hooks: emit)

    # -- the two ways in ---------------------------------------------------------------------

    async def serve_stream(self, first: str = "") -> int:
        """Serve stdin's messages until it ends; returns the exit code."""
        self._install_signals()
        reader = asyncio.create_task(self._read_stdin())
        if first:
            self._inbox.put_nowait(_Prompt(first))
        try:
            while self._stopping is None:
                prompt = await self._inbox.get()
                if prompt is _EOF:
                    break
                prompt, ended = self._with_queued(prompt)
                self.runtime.next_images = prompt.images
                self.runtime.next_prompt_uuid = prompt.uuid
                self._stamp = prompt.stamps()
                self._busy = True
                try:
                    await self.run_prompt(prompt.text)
                finally:
                    self._busy = False
                if ended:
                    break
        finally:
            reader.cancel()
            await self._drain_tasks()
        return self._finish()

    def _with_queued(self, prompt: _Prompt) -> tuple[_Prompt, bool]:
        """`prompt` and, when it came while a turn ran, every prompt that came after it, as one
        turn, as Claude Code takes prompts sent while it works; and whether stdin ended after them."""
        if not prompt.queued:
            return prompt, False
        while not self._inbox.empty():
            later = self._inbox.get_nowait()
            if later is _EOF:
                return prompt, True
            prompt = prompt.joined(later)
        return prompt, False

    async def serve_prompt(self, prompt: str) -> int:
        """Run one prompt; returns the exit code."""
        self._install_signals()
        turn = await self.run_prompt(prompt)
        if self.run.options.output_format == "text":
            self._print_text(turn)
        return self._finish()

    # -- turns ---------------------------------------------------------------------------------

    async def run_prompt(self, prompt: str) -> Turn:
        """One prompt as one turn (more when a Stop hook says go on): `init` line, the turn's
        lines, its `result` line."""
        runtime = self.runtime
        runtime.set_interrupt_token(InterruptToken())
        started = time.monotonic()
        await self.run.start_mcp()  # (once: the init line lists the servers and their tools)
        self.run.sink.write_init(self.run.init_info())
        if not prompt.strip() and not runtime.next_images:
            turn = Turn(TurnOutcome(FinishReason.INTERNAL_ERROR, detail="the message has no text to send"),
                        1, 0, Usage(), time.monotonic() - started)
            self._write_result(turn)
            self._last = turn
            return turn
        if prompt.strip() == "/clear":
            return self._clear(started)
        verdict = await self._prompt_hooks(prompt)
        if verdict.blocked:
            outcome = TurnOutcome(FinishReason.COMPLETED, detail=verdict.reason or "blocked by a hook")
            turn = Turn(outcome, 0, 0, Usage(), time.monotonic() - started)
            self._write_result(turn, blocked=True)
            return turn
        typed = prompt
        if verdict.context:
            prompt = f"{prompt}\n\n{verdict.context}"
        prompt, rules = self.run.expand_command(prompt)
        schema = self.run.schema
        if self.run.claude_view is not None and (schema is not None or typed != prompt):
            self.run.claude_view.next_prompt = typed  # (Claude's transcript shows the prompt as typed)
        self._turn_running = True
        self.run.rules.allowed.extend(rules)  # the command's `allowed-tools`, for this turn
        try:
            turn = Turn(await self._turn(prompt + schema.instruction() if schema else prompt), 0, 0, Usage(), 0)
            turn = self._add(turn, turn.outcome)
            for round_ in range(_STOP_HOOK_ROUNDS):
                again = await self._stop_hooks(turn.outcome, active=round_ > 0)
                if again is None:
                    break
                turn = self._add(turn, await self._turn(again))
            structured = await self._structured(turn) if schema is not None else None
            turn.outcome = self._over_budget(turn.outcome)
        finally:
            self._turn_running = False
            for rule in rules:
                self.run.rules.allowed.remove(rule)
        turn.code, turn.seconds = self._code(turn.outcome), time.monotonic() - started
        self._write_result(turn, structured=structured)
        self._last = turn
        return turn

    def _clear(self, started: float) -> Turn:
        """`/clear`: the conversation starts over in a new session (HeadlessRun.start_over);
        Claude Code's `conversation_reset` line (the old session's id), then a result with no
        model call (the new one's)."""
        old = self.runtime.session_id
        self.run.start_over()
        self.run.sink.write_line({"type": "conversation_reset", "new_conversation_id": str(uuid.uuid4()),
                                  "uuid": str(uuid.uuid4()), "session_id": old})
        turn = Turn(TurnOutcome(FinishReason.COMPLETED), 0, 0, Usage(), time.monotonic() - started)
        self._write_result(turn)
        self._last = turn
        return turn

    def _over_budget(self, outcome: TurnOutcome) -> TurnOutcome:
        """A turn whose calls spent the `--max-budget-usd` ends `error_max_budget_usd`, also when
        the model had finished, as Claude Code ends it (its answer is kept)."""
        limit = self.runtime.budget.limits.max_cost
        if limit is None or outcome.finish_reason is not FinishReason.COMPLETED or self.runtime.budget.spent.cost < limit:
            return outcome
        return replace(outcome, finish_reason=FinishReason.MAX_COST)

    @staticmethod
    def _add(turn: Turn, outcome: TurnOutcome) -> Turn:
        """`turn` carried on by one more turn of the runtime."""
        return Turn(outcome, 0, turn.steps + outcome.steps, turn.usage + outcome.usage, 0)

    async def _structured(self, turn: Turn) -> Any:
        """The answer as the JSON the schema asks for; asked once more when it does not match,
        then the turn fails (`error_max_structured_output_retries`, as Claude Code names it)."""
        schema = self.run.schema
        assert schema is not None
        for attempt in (1, 2):
            if not self._answered(turn.outcome):
                return None
            value, problem = schema.check(turn.outcome.text)
            if not problem:
                return value
            if attempt == 2:
                turn.outcome = TurnOutcome(FinishReason.STRUCTURED_OUTPUT_INVALID, text=turn.outcome.text,
                                           detail=f"the final answer does not match the JSON Schema: {problem}")
                return None
            again = self._add(turn, await self._turn(schema.retry_prompt(problem)))
            turn.outcome, turn.steps, turn.usage = again.outcome, again.steps, again.usage
        return None

    async def _turn(self, prompt: str) -> TurnOutcome:
        """One turn of the runtime on `prompt`; a provider error switches to `--fallback-model`
        once, which carries the turn on."""
        outcome = await self._guarded(self.runtime.run(prompt))
        fallback = self.run.options.fallback_model
        if (outcome.finish_reason in (FinishReason.PROVIDER_ERROR, FinishReason.PROVIDER_UNAVAILABLE) and fallback
                and self.runtime.provider.model != fallback):
            sys.stderr.write(f"note: {outcome.detail}; going on with --fallback-model {fallback}\n")
            self._requests.set_model({"model": fallback})
            again = await self._guarded(self.runtime.continue_turn())
            again.steps, again.usage = again.steps + outcome.steps, again.usage + outcome.usage
            outcome = again
        return outcome

    async def _guarded(self, work: Any) -> TurnOutcome:
        try:
            return cast(TurnOutcome, await work)
        except SessionWriteError as exc:
            return TurnOutcome(FinishReason.IO_ERROR, detail=str(exc))
        except SessionStateError as exc:
            return TurnOutcome(FinishReason.INTERNAL_ERROR, detail=str(exc))
        except Exception as exc:  # a bug must still end in a result line, not a traceback
            if self.run.loaded.settings.verbose:
                traceback.print_exc()
            return TurnOutcome(FinishReason.INTERNAL_ERROR, detail=f"internal error: {type(exc).__name__}: {exc}")

    def _answered(self, outcome: TurnOutcome) -> bool:
        """Whether the turn ended with the model's answer: it finished, or it answered after
        being refused a call (an answer, as in Claude Code, unless `--fail-on permission_denied`)."""
        reason = outcome.finish_reason
        return reason is FinishReason.COMPLETED or (
            reason is FinishReason.PERMISSION_DENIED and bool(outcome.text)
            and "permission_denied" not in self.run.options.fail_on)

    def _code(self, outcome: TurnOutcome) -> int:
        if outcome.halted:  # a hook's `continue: false` ended the turn: Claude Code's `hook_stopped`
            return 0
        if outcome.finish_reason is FinishReason.PERMISSION_DENIED and self._answered(outcome):
            return 0
        return exit_code_for(outcome.finish_reason, self.runtime.interrupt_token.signal)[0]

    def _write_result(self, turn: Turn, blocked: bool = False, structured: Any = None) -> None:
        if self.run.options.output_format == "text":
            return  # the answer alone goes to stdout (`_print_text`)
        outcome = turn.outcome
        reason = outcome.finish_reason
        subtype = "success" if turn.code == 0 else _CLAUDE_SUBTYPES.get(reason, exit_code_for(reason)[1])
        detail = outcome.detail or reason.value
        if reason is FinishReason.MAX_STEPS:  # in Claude's words: its flag is --max-turns here
            detail = f"Reached maximum number of turns ({self.runtime.budget.limits.max_steps})"
        elif reason is FinishReason.MAX_COST:  # (and --max-budget-usd)
            detail = f"Reached maximum budget (${self.runtime.budget.limits.max_cost:g})"
        text = outcome.text if turn.code == 0 or outcome.text else detail
        extra: dict[str, Any] = dict(self._stamp)
        if (terminal := claude_result.terminal(outcome, blocked)) is not None:
            extra["terminal_reason"] = terminal
        if blocked:
            text = ""
        api_failed = reason in (FinishReason.PROVIDER_ERROR, FinishReason.PROVIDER_UNAVAILABLE)
        if api_failed:
            # Claude Code's shape for a failed model request: a synthetic assistant message with
            # the error, then a `success` result with is_error (the SDKs and claude-code-action read it)
            failure = claude_result.api_failure(outcome.api_status, detail)
            self.run.sink.write_api_error(failure.text, failure.message_fields())
            subtype, text = "success", failure.text
            extra.update(failure.result_fields())
        if reason is FinishReason.INTERRUPTED and self._stopping is None:  # the client's `interrupt`
            self.run.sink.write_interrupted()
        # An SDK client needs a number here (the SDKs' own examples compare it): with a model we
        # have no price for, the priced requests' sum (0 when none was), and `cost_known: false`
        spent = self.runtime.budget.spent
        self.run.sink.write_result(TurnResult(
            subtype=subtype, is_error=turn.code != 0, result=text, finish_reason=reason.value,
            num_turns=turn.steps, duration_ms=int(turn.seconds * 1000), usage=turn.usage,
            total_cost_usd=spent.cost,
            errors=[] if api_failed else errors(turn.code, detail, reason),  # (Claude's errors[] is empty then)
            stop_reason=stop_reason(reason, outcome.detail), structured_output=structured,
            model_usage=self.runtime.budget.by_model,
            extra={**extra, "cost_known": spent.cost_known}))

    def _print_text(self, turn: Turn) -> None:
        text = turn.outcome.text
        if text:
            sys.stdout.write(text.rstrip("\n") + "\n")
            sys.stdout.flush()
        if turn.code != 0 and turn.outcome.detail:
            sys.stderr.write(f"error: {turn.outcome.detail}\n")

    def _finish(self) -> int:
        """Record how the process ended in the session and return its exit code."""
        code = self._stopping if self._stopping is not None else (self._last.code if self._last else 0)
        last = self._last.outcome if self._last else TurnOutcome(FinishReason.COMPLETED)
        reason = FinishReason.INTERRUPTED if self._stopping is not None else last.finish_reason
        self.runtime.emit(RunFinished(
            subtype="success" if code == 0 else exit_code_for(reason)[1], is_error=code != 0, exit_code=code,
            result=last.text, session_id=self.runtime.session_id, num_turns=self.runtime.turn_index(),
            num_steps=self.runtime.total_steps, duration_ms=int((time.monotonic() - self._started) * 1000),
            usage=self.runtime.usage, total_cost_usd=self.runtime.budget.total_cost,
            finish_reason=reason.value, error=last.detail if code else ""))
        return code

    # -- hooks ---------------------------------------------------------------------------------

    async def _prompt_hooks(self, prompt: str) -> hook_rules.PromptVerdict:
        client = self.run.client
        if not client.hooks.has("UserPromptSubmit"):
            return hook_rules.PromptVerdict()
        outputs = await client.hooks.call(client.channel, "UserPromptSubmit",
                                          {**client.hook_base(), "prompt": prompt})
        return hook_rules.prompt_verdict(outputs)

    async def _stop_hooks(self, outcome: TurnOutcome, active: bool) -> str | None:
        client = self.run.client
        if not client.hooks.has("Stop") or outcome.finish_reason is not FinishReason.COMPLETED:
            return None
        outputs = await client.hooks.call(client.channel, "Stop", {
            **client.hook_base(), "stop_hook_active": active, "last_assistant_message": outcome.text})
        return hook_rules.stop_reason(outputs)

    def emit(self, event: AgentEvent) -> None:
        """As an event sink: tell SubagentStart and SubagentStop hooks (told only: what they answer
        is not used), in a task of their own, so the turn goes on meanwhile. (PostToolUse hooks,
        a subagent's calls' too, run in line with the call: guard.py.)"""
        if isinstance(event, (SubagentStarted, SubagentFinished)):
            self._subagent_hook(event)

    def _subagent_hook(self, event: SubagentStarted | SubagentFinished) -> None:
        """Tell SubagentStart and SubagentStop hooks (told only: what they answer is not used)."""
        client = self.run.client
        hook = "SubagentStart" if isinstance(event, SubagentStarted) else "SubagentStop"
        if not client.hooks.has(hook):
            return
        payload: dict[str, Any]
        if isinstance(event, SubagentStarted):
            payload = {"agent_id": event.task_id, "agent_type": event.subagent_type}
        else:
            transcript = self.run.binding.writer.path if self.run.binding is not None else ""
            payload = {"agent_id": event.task_id, "agent_type": event.subagent_type,
                       "stop_hook_active": False, "agent_transcript_path": str(transcript),
                       "last_assistant_message": event.summary if event.status == "completed" else ""}
        self._spawn(client.hooks.call(client.channel, hook, {**client.hook_base(), **payload},
                                      tool=payload["agent_type"]))

    # -- stdin ---------------------------------------------------------------------------------

    async def _read_stdin(self) -> None:
        """Dispatch stdin's lines until it ends, then queue the end."""
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def pump() -> None:  # a daemon thread: a blocked read never holds the process at exit
            stream = getattr(sys.stdin, "buffer", None)
            try:
                if stream is None:  # a text stream with no bytes under it (tests)
                    for text in iter(sys.stdin.readline, ""):
                        loop.call_soon_threadsafe(lines.put_nowait, text)
                else:
                    for raw in iter(stream.readline, b""):
                        loop.call_soon_threadsafe(lines.put_nowait, raw.decode("utf-8", "replace"))
            except (OSError, ValueError):
                pass
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=pump, name="stdin", daemon=True).start()
        while (raw := await lines.get()) is not None:
            if raw.strip():
                self._dispatch(raw)
        self.run.client.channel.close("the client closed stdin")
        self._inbox.put_nowait(_EOF)

    def _dispatch(self, raw: str) -> None:
        try:
            line = protocol.parse_line(raw)
        except protocol.StreamLineError as exc:
            sys.stderr.write(f"warning: ignored a stdin line: {exc}\n")
            return
        if isinstance(line, protocol.UserLine):
            dropped = line.dropped_blocks()
            if dropped:
                sys.stderr.write(f"warning: {', '.join(dropped)} content is not passed on; only text and "
                                 "base64 images are\n")
            images, problems = line.images()
            for problem in problems:
                sys.stderr.write(f"warning: {problem}; it is not passed on\n")
            given = getattr(line, "uuid", None)
            chosen = given if isinstance(given, str) and is_uuid(given) else str(uuid.uuid4())
            if self.run.options.replay_user_messages:  # Claude's acknowledgement of a prompt
                self.run.sink.write_line({"type": "user", "message": {"role": "user", "content": line.text()},
                                          "parent_tool_use_id": None, "session_id": self.runtime.session_id,
                                          "uuid": chosen, "isReplay": True})
            # (queued: it waits behind a running turn or a prompt not yet started, as Claude Code's queue)
            queued = self._busy or not self._inbox.empty()
            self._inbox.put_nowait(_Prompt(line.text(), tuple(images), line.human_origin(),
                                           (line.uuid,) if line.uuid else (), queued, chosen))
        elif isinstance(line, protocol.ControlRequestLine):
            if line.subtype in self._requests.ASYNC:
                self._spawn(self._answer_later(line))
            else:
                self.run.sink.write_line(self._requests.answer(line))
        elif isinstance(line, protocol.ControlResponseLine):
            self.run.client.channel.resolve(line)

    async def _answer_later(self, line: protocol.ControlRequestLine) -> None:
        try:
            answer = await self._requests.answer_later(line)
        except Exception as exc:  # a bug here must still answer the client
            answer = protocol.error(line.request_id, f"{type(exc).__name__}: {exc}")
        self.run.sink.write_line(answer)

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain_tasks(self) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)

    # -- signals -------------------------------------------------------------------------------

    @property
    def retired(self) -> list[ChatProvider]:
        """Providers that `set_model` replaced, to be closed at the end."""
        return self._requests.retired

    def _interrupt(self) -> None:
        """The client's `interrupt`: end the running turn, if one runs."""
        if self._turn_running:
            self.runtime.interrupt()

    def stop(self, signum: int) -> None:
        """End the process: interrupt the turn, run no more prompts, exit 128 + `signum`."""
        self._stopping = 128 + signum
        self.runtime.interrupt(signum)
        self._inbox.put_nowait(_EOF)

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if self._stopping is not None and signum == signal.SIGINT:
                self.runtime.tool_context.processes.kill_all()
                from ...features.mcp import kill_servers_now

                kill_servers_now(self.runtime)  # no MCP server may outlive us either
                os._exit(130)
            self.stop(signum)

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
