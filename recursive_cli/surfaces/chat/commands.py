"""The slash commands of the interactive session: one handler each, in one table."""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.choices import PERMISSION_MODES
from ...core.errors import CheckpointError
from ...core.messages import Message
from ...core.wording import counted
from ...features.sessions.binding import remember_model
from ...features.sessions.records import SessionError

if TYPE_CHECKING:
    from ...features.checkpoints.checkpointer import GitCheckpointer
    from .session import ChatSession

Handler = Callable[["ChatSession", str], Awaitable[None]]


@dataclass(frozen=True)
class Command:
    """`/name ARGS`: what it does in one line, and its handler."""

    name: str
    args: str
    help: str
    handler: Handler


async def run_command(chat: ChatSession, text: str) -> None:
    """Run the slash command `text`; an unknown one is named, with the known ones. An MCP
    server's prompt (`/mcp__<server>__<prompt> ARGS`) is sent as the next message."""
    name, _, args = text.partition(" ")
    command = next((c for c in COMMANDS if c.name == name.lower()), None)
    if command is None:
        command = next((c for c in COMMANDS if name.lower() in _ALIASES.get(c.name, ())), None)
    if command is None and name in mcp_prompts(chat):
        await _mcp_prompt(chat, name, args.strip())
        return
    if command is None:
        known = " ".join([*(c.name for c in COMMANDS), *mcp_prompts(chat)])
        chat.sink.line(f"unknown command {name}; the commands are: {known}", "red")
        return
    await command.handler(chat, args.strip())


def mcp_prompts(chat: ChatSession) -> dict[str, str]:
    """The MCP servers' prompts as commands: name → one line of help."""
    manager = chat.runtime.mcp()
    if manager is None:
        return {}
    return {name: (prompt.description or prompt.title or f"the {prompt.name} prompt of MCP server {server}")
            for name, (server, prompt) in manager.prompt_commands().items()}


async def _mcp_prompt(chat: ChatSession, name: str, args: str) -> None:
    from ...features.mcp.client import McpCallError

    manager = chat.runtime.mcp()
    assert manager is not None
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    try:
        text = await manager.prompt_text(name, words)
    except (ValueError, McpCallError) as exc:
        chat.sink.line(str(exc), "red")
        return
    if not text.strip():
        chat.sink.line(f"{name}: the server's prompt is empty", "red")
        return
    await chat.turn(text)


async def _mcp(chat: ChatSession, args: str) -> None:
    manager = chat.runtime.mcp()
    if manager is None or not manager.connections:
        chat.sink.line("no MCP servers (a .mcp.json in the workspace, or --mcp-config)", "dim")
        return
    for server in manager.connections.values():
        if server.status == "connected":
            counts = counted(len(server.tools), "tool") + (f", {counted(len(server.prompts), 'prompt')}" if server.prompts else "")
            chat.sink.line(f"  ✓ {server.name}  {counts}")
        else:
            chat.sink.line(f"  ✗ {server.name}  {server.status}: {server.error}", "red")
    for name, help_text in mcp_prompts(chat).items():
        chat.sink.line(f"    {name}  {help_text}", "dim")


# -- the conversation ---------------------------------------------------------------------------


async def _help(chat: ChatSession, args: str) -> None:
    prompts = mcp_prompts(chat)
    width = max(len(f"{c.name} {c.args}".strip()) for c in COMMANDS)
    for c in COMMANDS:
        chat.sink.line(f"  {f'{c.name} {c.args}'.strip():<{width}}  {c.help}")
    for name, help_text in prompts.items():
        chat.sink.line(f"  {name}  {help_text}")
    chat.sink.line(f"  {'!COMMAND':<{width}}  run a shell command yourself (sandboxed as the agent's); "
                   "it and its output go with your next message")
    chat.sink.line("  Enter sends · Alt-Enter or a trailing \\ starts a new line · Tab completes "
                   "/commands and @paths · typing during a turn queues a message · Esc or Ctrl-C "
                   "stops a turn (twice: its running command too) · Ctrl-D leaves", "dim")


async def _model(chat: ChatSession, args: str) -> None:
    from ...core.settings import ConfigError, resolve_model
    from ...features.compaction import context_window
    from ...providers import make_provider

    runtime = chat.runtime
    name = args.strip()
    if not name:
        chat.sink.line(f"model: {runtime.provider.model} ({runtime.provider.name}); /model NAME changes it")
        return
    name = resolve_model(chat.settings.provider, name)  # (`/model opus`)
    if runtime.provider.name == "scripted":  # its replies go on where they are
        runtime.provider.model = name
    else:
        try:
            provider = make_provider(replace(chat.settings, model=name), runtime.session_id or None)
        except ConfigError as exc:
            chat.sink.line(f"error: {exc}", "red")
            return
        chat.retired.append(runtime.provider)
        runtime.provider = provider
    runtime.budget.price = runtime.budget.price.of(name)
    if runtime.compactor is not None and hasattr(runtime.compactor, "max_tokens"):
        runtime.compactor.max_tokens = context_window(name)
    remember_model(runtime, name)
    chat.sink.line(f"model: {name} from the next request on")


async def _cost(chat: ChatSession, args: str) -> None:
    from ...sinks.terminal import cost_text

    runtime = chat.runtime
    usage = runtime.usage
    cached = f", {usage.cache_read_tokens:,} of them read from cache" if usage.cache_read_tokens else ""
    chat.sink.line(f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens{cached} · "
                   f"{cost_text(runtime.budget.total_cost)} for the whole session")
    by_model = runtime.budget.by_model
    if len(by_model) > 1:
        for model, spent in by_model.items():
            chat.sink.line(f"  {model}: {spent.input_tokens:,} in / {spent.output_tokens:,} out tokens", "dim")


async def _status(chat: ChatSession, args: str) -> None:
    from ...sinks.terminal import cost_text

    runtime, settings = chat.runtime, chat.settings
    provider = runtime.provider
    base = settings.api_base or getattr(provider, "default_base_url", None) or "-"
    commands = runtime.tool_context.commands
    usage = runtime.usage
    rows = (("session", "(not saved: --no-session)" if settings.no_session else runtime.session_id),
            ("model", provider.model),
            ("provider", f"{provider.name} · {base}"),
            ("permissions", runtime.permissions.mode),
            ("sandbox", commands.describe() if commands is not None else "off: commands run unconfined, as the user"),
            ("workspace", str(runtime.workspace)),
            ("turns", str(runtime.turn_index())),
            ("tokens", f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"),
            ("cost", cost_text(chat.cost())))
    for name, value in rows:
        chat.sink.line(f"  {name:<12} {value}")


INIT_PROMPT = """\
Write an AGENTS.md file at the root of this repository: the instructions that coding agents \
(you in later sessions, and others such as Codex or Claude Code) read before they work here. \
Look around first: the README, the build and package files, the CI configuration, the layout \
of the source and the tests, any contributing guide or existing agent instructions \
(CLAUDE.md, .cursorrules, .github/copilot-instructions.md).

Put in what an agent cannot guess quickly and would otherwise get wrong:
- the commands to set up, build, lint, type-check and run the tests, including how to run one \
test alone;
- the architecture in brief: the main parts, where they live, and how they fit together;
- the conventions of the code: style, naming, error handling, how tests are written, what \
must not be done;
- anything surprising: generated files not to edit, required environment variables, slow or \
flaky steps.

Keep it short and concrete (well under 200 lines), in Markdown; do not list every file or \
repeat what any developer knows. {existing}When it is written, say in two or three lines what \
it covers."""
INIT_EXISTING = "There is an AGENTS.md already: read it first, keep what is still true, and improve it. "


async def _init(chat: ChatSession, args: str) -> None:
    path = chat.runtime.workspace / "AGENTS.md"
    exists = path.exists()
    if exists and not await chat.confirm(f"{path.name} exists in {chat.runtime.workspace}; have the agent rewrite it?"):
        chat.sink.line("AGENTS.md left as it is", "dim")
        return
    await chat.turn(INIT_PROMPT.format(existing=INIT_EXISTING if exists else ""))


async def _compact(chat: ChatSession, args: str) -> None:
    done: list[object] = []

    async def compact() -> None:
        done.append(await chat.runtime.compact_now())  # (its notice says what it did)

    chat.sink.line("compacting the conversation…", "dim")
    outcome = await chat.busy(compact())
    if outcome.finish_reason.value == "completed" and (not done or done[0] is None):
        chat.sink.line("nothing to compact: the conversation is too short (or its summary failed)")


async def _goal(chat: ChatSession, args: str) -> None:
    try:
        words = shlex.split(args)
    except ValueError as exc:
        chat.sink.line(f"error: /goal: {exc}", "red")
        return
    checks: list[str] = []
    condition: list[str] = []
    max_turns: int | None = None
    while words:
        word = words.pop(0)
        if word in ("--check", "--max-turns") and not words:
            chat.sink.line(f"error: /goal: {word} needs a value", "red")
            return
        if word == "--check":
            checks.append(words.pop(0))
        elif word == "--max-turns":
            value = words.pop(0)
            if not value.isdigit() or int(value) < 1:
                chat.sink.line(f"error: /goal: --max-turns expects a whole number of 1 or more, got {value!r}", "red")
                return
            max_turns = int(value)
        else:
            condition.append(word)
    until = " ".join(condition).strip()
    if not until and not checks:
        chat.sink.line("usage: /goal CONDITION [--check CMD]... [--max-turns N]", "red")
        return
    runtime = chat.runtime
    system = runtime.transcript()[0]
    prompt = until or "Make these checks pass: " + "; ".join(f"`{c}`" for c in checks)
    outcome = await chat.busy(runtime.run_goal_loop(prompt, until or None, checks, max_turns), turns=True)
    transcript = runtime.transcript()
    if transcript and transcript[0].role == "system":  # the goal's note leaves with the goal
        runtime.set_transcript([Message.system(system.content), *transcript[1:]])
    summary = runtime.goal_summary
    runtime.clear_goal()
    runtime.goal_summary = None
    if summary is not None and summary.status == "met":
        chat.sink.line(f"goal met after {summary.turns} turn{'s' if summary.turns != 1 else ''}", "green")
    elif summary is not None and outcome.finish_reason.value != "interrupted":
        chat.sink.line(f"goal not met: {summary.reason or outcome.detail}", "red")


# -- the workspace ---------------------------------------------------------------------------


def _checkpointer(chat: ChatSession) -> GitCheckpointer | None:
    from ...features.checkpoints.checkpointer import GitCheckpointer

    found = chat.runtime.feature(GitCheckpointer)
    if found is None:
        chat.sink.line("error: this session takes no checkpoints (--no-checkpoints, --no-session, "
                       "or git is missing)", "red")
    return found


async def _undo(chat: ChatSession, args: str) -> None:
    force = args.strip() == "--force"
    if args.strip() and not force:
        chat.sink.line("usage: /undo [--force]", "red")
        return
    cp = _checkpointer(chat)
    if cp is None:
        return
    try:
        live = [t.turn for t in cp.turns() if not t.rewound]
    except CheckpointError as exc:
        chat.sink.line(f"error: {exc}", "red")
        return
    if not live:
        chat.sink.line("nothing to undo: no turn of this session is in effect")
        return
    _restore(chat, cp, live[-1], force)


async def _rewind(chat: ChatSession, args: str) -> None:
    words = args.split()
    force = "--force" in words
    rest = [w for w in words if w != "--force"]
    if len(rest) != 1 or not rest[0].isdigit() or int(rest[0]) < 1:
        chat.sink.line("usage: /rewind N [--force]  (back to before turn N; /undo is the last turn)", "red")
        return
    cp = _checkpointer(chat)
    if cp is not None:
        _restore(chat, cp, int(rest[0]), force)


def _restore(chat: ChatSession, cp: GitCheckpointer, turn: int, force: bool) -> None:
    """The workspace and the conversation back to before `turn`, as `checkpoints restore` does
    it: only the session's own changes, refused when someone else changed those files since."""
    from ...features.checkpoints.restore import apply_restore, plan_restore, record_rewind

    sink = chat.sink
    try:
        plan = plan_restore(cp, turn)
        undone = ", ".join(map(str, plan.undone)) or "none still in effect"
        sink.line(f"back to before turn {plan.turn} (undoes turn{'s' if len(plan.undone) > 1 else ''} {undone})")
        for action in plan.actions:
            sink.line(f"  {action.kind:<9} {action.path}", "dim")
        for path in plan.conflicts:
            why = (f"changed while {plan.unsure[path]} ran; another process may have written it"
                   if path in plan.unsure else "changed by someone else since the session wrote it")
            sink.line(f"  conflict  {path} ({why})", "yellow")
        if plan.conflicts and not force:
            sink.line(f"error: refused: {len(plan.conflicts)} file(s) someone else changed, or may have, would be "
                      "overwritten; add --force to restore anyway", "red")
            return
        result = apply_restore(cp, plan)
        folder = _folder(chat)
        if folder is not None:
            record_rewind(folder / "transcript.jsonl", plan, result)
            _reload_conversation(chat, folder)
    except (CheckpointError, SessionError, OSError) as exc:
        sink.line(f"error: {exc}", "red")
        return
    for path in result.blocked:
        sink.line(f"warning: left {path} alone: a symlink, file or folder stands in its way", "yellow")
    done = len(plan.actions) - len(result.blocked)
    sink.line(f"restored {done} file{'s' if done != 1 else ''}; the conversation is back to before turn {plan.turn}", "green")


def _folder(chat: ChatSession) -> Path | None:
    from ...features.sessions.store import SessionStore

    if chat.settings.no_session:
        return None
    return SessionStore(chat.home).folder(chat.runtime.session_id)


def _reload_conversation(chat: ChatSession, folder: Path) -> None:
    """The conversation as the session file now has it (the rewind record applied)."""
    from ...features.sessions.reader import load_session, repair_orphans

    loaded = load_session(folder, chat.settings.prices)
    messages, _ = repair_orphans(loaded.messages)
    runtime = chat.runtime
    runtime.set_transcript([runtime.transcript()[0], *messages])


async def _diff(chat: ChatSession, args: str) -> None:
    cp = _checkpointer(chat)
    if cp is None:
        return
    try:
        live = {t.turn for t in cp.turns() if not t.rewound}
        text = cp.own_diff(cp.history().own(live)) if live else ""
    except CheckpointError as exc:
        chat.sink.line(f"error: {exc}", "red")
        return
    if not text.strip():
        chat.sink.line("no files changed by this session")
        return
    for line in text.rstrip("\n").splitlines():
        style = ("green" if line.startswith("+") and not line.startswith("+++") else
                 "red" if line.startswith("-") and not line.startswith("---") else
                 "cyan" if line.startswith("@@") else "bold" if line.startswith("diff ") else "")
        chat.sink.line(line, style)


# -- sessions ---------------------------------------------------------------------------------


async def _sessions(chat: ChatSession, args: str) -> None:
    from ...features.sessions.store import SessionStore

    current = chat.runtime.session_id
    try:
        metas = SessionStore(chat.home).list(chat.runtime.workspace)
    except SessionError as exc:
        chat.sink.line(f"error: {exc}", "red")
        return
    if not metas:
        chat.sink.line("no saved session in this workspace")
        return
    store = SessionStore(chat.home)
    for meta in metas[-20:]:
        mark = "*" if meta.id == current else " "
        undone = _rewound(store.folder(meta.id) / "transcript.jsonl", meta.id)
        note = f" ({undone} rewound)" if undone else ""
        chat.sink.line(f"{mark} {meta.id}  {meta.updated[:16].replace('T', ' ')}  "
                       f"{meta.turns:>3} {'turn ' if meta.turns == 1 else 'turns'}{note}  {meta.title}")
    chat.sink.line("/resume ID opens one (an id prefix will do)", "dim")


def _rewound(transcript: Path, session_id: str) -> int:
    """How many of the session's turns a rewind took back (as `sessions show` marks them)."""
    from ...features.sessions.reader import parse_transcript, rewound_turns

    try:
        data = transcript.read_bytes()
    except OSError:
        return 0
    if b'"rewind"' not in data:  # (most sessions: no need to read them through)
        return 0
    try:
        records, _ = parse_transcript(data, session_id)
    except SessionError:
        return 0
    return len(rewound_turns(records))


async def _resume(chat: ChatSession, args: str) -> None:
    from ...features.sessions.meta import read_meta
    from ...features.sessions.store import SessionStore

    ref = args.strip()
    if not ref:
        chat.sink.line("usage: /resume ID  (/sessions lists them)", "red")
        return
    try:
        session_id = SessionStore(chat.home).resolve(ref)
    except SessionError as exc:
        chat.sink.line(f"error: {exc}", "red")
        return
    if session_id == chat.runtime.session_id:
        chat.sink.line(f"already in session {session_id}")
        return
    try:
        mode = read_meta(SessionStore(chat.home).folder(session_id)).mode
    except SessionError as exc:
        chat.sink.line(f"error: {exc}", "red")
        return
    if mode != "run":
        chat.sink.line(f"error: session {session_id} is a {mode} session: continue it with "
                       f"`recursive resume {session_id}` in a shell", "red")
        return
    chat.then, chat.done = session_id, True


async def _clear(chat: ChatSession, args: str) -> None:
    chat.sink.line("a new session begins (this one is saved)", "dim")
    chat.then, chat.done = "", True


async def _permissions(chat: ChatSession, args: str) -> None:
    policy = chat.runtime.permissions
    mode = args.strip()
    if mode:
        if mode not in PERMISSION_MODES:
            chat.sink.line(f"error: unknown permission mode {mode!r} (choose from {', '.join(PERMISSION_MODES)})", "red")
            return
        from ...features.plan_mode import enter_plan_mode, leave_plan_mode

        if mode == "plan" and policy.mode != "plan":
            enter_plan_mode(chat.runtime, policy)
        elif policy.mode == "plan" and mode != "plan":
            leave_plan_mode(chat.runtime, policy, mode)  # type: ignore[arg-type]
        policy.mode = mode  # type: ignore[assignment]
        chat.sink.line(f"permission mode: {mode} from the next tool call on")
        return
    chat.sink.line(f"permission mode: {policy.mode} (/permissions MODE changes it: {', '.join(PERMISSION_MODES)})")
    for word, rules in (("allow", policy.allow), ("deny", policy.deny)):
        for rule in rules:
            chat.sink.line(f"  --{word} {rule.tool}" + (f"({rule.pattern})" if rule.pattern else ""))
    always = sorted(getattr(policy, "_always", ()))
    if always:
        chat.sink.line("  allowed always (answered at a question): " + ", ".join(always))


async def _exit(chat: ChatSession, args: str) -> None:
    chat.done = True


COMMANDS: tuple[Command, ...] = (
    Command("/help", "", "this list", _help),
    Command("/model", "[NAME]", "the model; from the next request on, NAME", _model),
    Command("/status", "", "the session, model, provider, permissions, sandbox, tokens and cost", _status),
    Command("/cost", "", "tokens and cost of the session", _cost),
    Command("/init", "", "have the agent write an AGENTS.md for this repository", _init),
    Command("/compact", "", "summarise the older part of the conversation now", _compact),
    Command("/undo", "[--force]", "put the files and the conversation back as before the last turn", _undo),
    Command("/rewind", "N [--force]", "back to before turn N (files and conversation)", _rewind),
    Command("/diff", "", "what the session changed in the workspace", _diff),
    Command("/goal", "CONDITION [--check CMD]", "keep working until CONDITION holds and the checks pass", _goal),
    Command("/sessions", "", "the sessions of this workspace", _sessions),
    Command("/resume", "ID", "continue another session", _resume),
    Command("/clear", "", "start a new session (this one is saved)", _clear),
    Command("/permissions", "[MODE]", "the permission mode and rules; MODE changes the mode", _permissions),
    Command("/mcp", "", "the MCP servers, their tools and prompts", _mcp),
    Command("/exit", "", "leave (Ctrl-D does too)", _exit),
)
_ALIASES = {"/exit": ("/quit",), "/help": ("/?",)}
