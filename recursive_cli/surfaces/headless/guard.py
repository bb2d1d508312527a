"""Claude Code's permissions as one tool guard: its modes, its rules, and the client's say.

`ClaudeRules` decide a call from Claude's permission mode and the `--allowedTools` /
`--disallowedTools` rules: allow, deny, or ask. `ClientGuard` (a `ToolGuard`, after our own
permission policy) first calls the client's PreToolUse hooks, then the rules, and for `ask`
sends the client a `can_use_tool` request when it registered a permission callback
(`--permission-prompt-tool stdio`); without one, `ask` is a denial, as in `claude -p`. The
client may allow the call with a changed input (`updatedInput`): `RewritingToolRegistry` runs
the call with it.

Modes: `default` asks for everything but reading (read-only commands inside the workspace
included); `acceptEdits` also allows file edits and filesystem commands in the workspace;
`plan` allows only reading, read-only commands and ExitPlanMode (features/plan_mode.py); `bypassPermissions` allows all; `dontAsk` denies what would be
asked. Reading needs no permission in any mode (web_fetch, which reaches the network, does).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from ...core.agent_scope import current_agent
from ...core.events import AgentEvent, ToolStarted
from ...core.guards import Decision, HaltTurn
from ...core.messages import ToolCall
from ...core.tool import Tool, ToolContext, ToolRegistry, ToolResult
from ...features.hooks.context import context_note, with_notes
from ...features.permissions import PLAN_TOOL, READ_ONLY_EXTRAS
from ...features.safe_commands import inside_roots, read_only_command, workspace_command
from ...tools.sandbox import OutsideAllowed, WorkspaceSandbox
from . import hooks as hook_rules
from .channel import ControlChannel, ControlError
from .hooks import HookSet
from .tool_names import ClaudeView, claude_name, our_name

ASKING_READS = frozenset({"web_fetch"})
MCP_PREFIX = "mcp__"
# MCP's tools, which `--tools` (Claude's built-in tools) leaves alone; --disallowedTools removes them.
MCP_RESOURCE_TOOLS = frozenset({"list_mcp_resources", "read_mcp_resource"})  # read-only, but Claude Code asks before fetching a URL


@dataclass(frozen=True)
class ClaudeRule:
    """`Bash`, `Bash(git diff:*)`, `Edit(src/**)`, `WebFetch(domain:example.com)`, in our names."""

    tool: str
    pattern: str | None

    @classmethod
    def parse(cls, text: str) -> ClaudeRule:
        name, _, rest = text.strip().partition("(")
        pattern = rest[:-1] if rest.endswith(")") else None
        return cls(our_name(name.strip()), pattern if pattern not in ("", "*") else None)

    def matches(self, tool: str, arguments: dict[str, Any], subject: str) -> bool:
        if self.tool != tool and not mcp_rule_matches(self.tool, tool):
            return False
        if self.pattern is None:
            return True
        if self.pattern.startswith("domain:"):
            host = urlsplit(str(arguments.get("url", ""))).hostname or ""
            domain = self.pattern[len("domain:"):]
            return host == domain or host.endswith("." + domain)
        if tool in ("run_shell", "run_background"):
            return _command_matches(self.pattern, subject)
        return fnmatch.fnmatchcase(subject, self.pattern.removeprefix("./")) or (
            fnmatch.fnmatchcase(subject, self.pattern) or subject == self.pattern)


def mcp_rule_matches(rule: str, tool: str) -> bool:
    """Claude's rules for MCP tools: `mcp__git` (every tool of server git), `mcp__git__*`."""
    if not rule.startswith(MCP_PREFIX) or not tool.startswith(MCP_PREFIX):
        return False
    if "__" not in rule[len(MCP_PREFIX):]:
        return tool.startswith(rule + "__")
    return fnmatch.fnmatchcase(tool, rule)


def _command_matches(pattern: str, command: str) -> bool:
    """`git diff:*` is a prefix rule (`git diff`, `git diff --stat`), `npm test` is exact, and a
    glob (`git *`) is matched as one."""
    command = command.strip()
    if pattern.endswith(":*"):
        prefix = pattern[:-2].strip()
        return command == prefix or command.startswith(prefix + " ")
    return fnmatch.fnmatchcase(command, pattern) if "*" in pattern else command == pattern


@dataclass
class ClaudeRules:
    """Claude Code's permission mode and rules; the mode can change between calls."""

    mode: str = "default"
    allowed: list[ClaudeRule] = field(default_factory=list)
    denied: list[ClaudeRule] = field(default_factory=list)
    roots: tuple[str, ...] = ()  # the workspace (first: commands run there) and the --add-dir roots
    ours: bool = False  # one of our own modes decides (SPEC §9), under bypassPermissions here

    @classmethod
    def of(cls, mode: str, allowed: list[str], denied: list[str]) -> ClaudeRules:
        return cls(mode, [ClaudeRule.parse(text) for text in allowed],
                   [ClaudeRule.parse(text) for text in denied])

    def verdict(self, tool: str, kind: str, subject: str, arguments: dict[str, Any]) -> tuple[str, str]:
        """`allow`, `deny` or `ask`, and the reason of a denial."""
        shown = claude_name(tool)
        if any(rule.matches(tool, arguments, subject) for rule in self.denied):
            return "deny", f"{shown} is denied by --disallowedTools"
        if self.allows(tool, arguments, subject):
            return "allow", ""
        reading = (kind == "read" and tool not in ASKING_READS) or tool in READ_ONLY_EXTRAS
        if reading or self.mode in ("bypassPermissions", "auto"):
            return "allow", ""
        if self.mode == "plan" and (tool == PLAN_TOOL or tool == "run_shell" and read_only_command(subject)):
            return "allow", ""
        if self.mode == "plan":
            return "deny", f"plan mode: {shown} would change something, and nothing may change yet"
        if self.mode == "acceptEdits" and kind == "edit":
            return "allow", ""
        if tool == "run_shell" and self.roots and self._safe_command(subject):
            return "allow", ""
        if self.mode == "dontAsk":
            return "deny", f"{shown} was not allowed beforehand (--allowedTools) and dontAsk mode asks no one"
        return "ask", ""


    def allows(self, tool: str, arguments: dict[str, Any], subject: str) -> bool:
        """Whether an --allowedTools rule (or one the client added) allows the call."""
        return any(rule.matches(tool, arguments, subject) for rule in self.allowed)

    def _safe_command(self, command: str) -> bool:
        """A command Claude Code runs without asking: one that only reads inside the roots, or
        under acceptEdits one that only changes files inside them (features/safe_commands.py)."""
        inside = inside_roots(self.roots, self.roots[0])
        if self.mode == "acceptEdits":
            return workspace_command(command, inside)
        return read_only_command(command, inside)


class CallLedger:
    """An event sink that remembers the call whose tool is about to be decided and run: the
    kernel announces each call (`ToolStarted`) just before it asks the guards."""

    def __init__(self) -> None:
        self.current: ToolCall | None = None

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, ToolStarted):
            self.current = event.call

    def arguments(self, tool: str, given: ToolCall | None = None) -> tuple[ToolCall | None, dict[str, Any]]:
        """The call being decided (`given`, as the guards before changed it, or the last
        announced) and its arguments."""
        call = given if given is not None else self.current
        call = call if call is not None and call.name == tool else None
        if call is None:
            return None, {}
        try:
            value = json.loads(call.arguments or "{}")
        except ValueError:
            return call, {}
        return call, value if isinstance(value, dict) else {}


class RewritingToolRegistry(ToolRegistry):
    """A registry that runs a call with the input its guard approved in place of the model's,
    and holds only the tools `keep` lets in (the client's `--tools` and `--disallowedTools`)."""

    def __init__(self, tools: list[Tool], keep: Callable[[str], bool] = lambda name: True) -> None:
        self._keep = keep
        self.rewrites: dict[str, dict[str, Any]] = {}
        self.granted: set[str] = set()  # calls allowed explicitly: their file tools may leave the workspace
        super().__init__(tools)

    def add(self, tool: Tool) -> None:
        if self._keep(tool.name):
            super().add(tool)

    async def execute(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        rewritten = self.rewrites.pop(call.id, None)
        if rewritten is not None:
            call = replace(call, arguments=json.dumps(rewritten))
        if call.id in self.granted and isinstance(ctx.sandbox, WorkspaceSandbox):
            self.granted.discard(call.id)
            ctx = replace(ctx, sandbox=OutsideAllowed(ctx.sandbox))
        return await super().execute(call, ctx)


@dataclass
class ClientSide:
    """What the client registered: its hooks, and whether it answers permission questions."""

    channel: ControlChannel
    hooks: HookSet = field(default_factory=HookSet)
    asks: bool = False  # --permission-prompt-tool stdio
    hook_base: Callable[[], dict[str, Any]] = dict  # session_id, cwd, permission_mode…


class ClientGuard:
    """Claude's permission flow for one call (see the module docstring); a `ToolGuard`."""

    def __init__(self, rules: ClaudeRules, client: ClientSide, ledger: CallLedger,
                 registry: RewritingToolRegistry, view: ClaudeView,
                 recheck: Callable[[str, str, str], tuple[str, str]],
                 stop_turn: Callable[[], None], sandbox: WorkspaceSandbox | None = None) -> None:
        self.rules = rules
        self._sandbox = sandbox
        self.client = client
        self._ledger = ledger
        self._registry = registry
        self._view = view
        self._recheck = recheck  # our own policy's verdict, for an input the client changed
        self._stop_turn = stop_turn

    async def decide(self, tool: str, kind: str, subject: str, call: ToolCall | None = None,
                     approved: bool = False) -> Decision:
        call, arguments = self._ledger.arguments(tool, call)
        hooked = await self._pre_tool_hooks(tool, call, arguments)
        if hooked.stop:  # `continue: false`: the call is not run, and the turn ends (`hook_stopped`)
            return Decision(False, f"a PreToolUse hook stopped the run: {hooked.reason or 'no reason given'}",
                            halt=True)
        if hooked.updated_input is not None and call is not None:
            arguments = self._rewrite(tool, call, hooked.updated_input, arguments)
            subject = self._subject(tool, arguments)
        decision = await self._judge(tool, kind, subject, call, arguments, hooked, approved)
        if decision.allowed and (hooked.contexts or self.client.hooks.has("PostToolUse")):
            return decision._replace(after=self._after(hooked.contexts))
        return decision

    async def _judge(self, tool: str, kind: str, subject: str, call: ToolCall | None,
                     arguments: dict[str, Any], hooked: hook_rules.ToolVerdict, approved: bool) -> Decision:
        """The hooks' decision, then the rules', then the client's answer when they ask.

        A file tool's path outside the workspace is asked about, as Claude Code asks, unless a
        hook's allow, an --allowedTools rule or bypassPermissions allowed the call explicitly;
        an explicit allow (the client's answer too) lets the call's file tool go there."""
        if hooked.decision == "deny":
            return Decision(False, hooked.reason or "denied by a PreToolUse hook")
        verdict, reason = ("allow", "") if hooked.decision == "allow" else (
            self.rules.verdict(tool, kind, subject, arguments))
        if hooked.decision == "ask":
            verdict = "ask" if verdict != "deny" else verdict
        if verdict == "deny":
            return Decision(False, reason)
        outside = self._outside(tool, kind, subject, arguments)
        if outside and verdict == "allow":
            bypass = self.rules.mode == "bypassPermissions" and not self.rules.ours
            explicit = hooked.decision == "allow" or bypass or self.rules.allows(tool, arguments, subject)
            verdict = "allow" if explicit else "ask"
        if verdict == "ask" and approved:  # a command hook said allow: nobody is asked
            return self._grant(call, outside)
        if verdict == "ask":
            if not self.client.asks:
                where = f" for {outside}, outside the workspace," if outside else ""
                return Decision(False, f"{claude_name(tool)} needs permission{where} in {self.rules.mode} "
                                       "mode and none was given (allow it with --allowedTools, or answer "
                                       "can_use_tool)")
            answer = await self._ask(tool, call, arguments)
            return self._grant(call, outside) if answer.allowed else answer
        return self._grant(call, outside)

    def _grant(self, call: ToolCall | None, outside: str) -> Decision:
        """Allow the call; one whose file tool leaves the workspace may (it was allowed explicitly)."""
        if outside and call is not None:
            self._registry.granted.add(call.id)
        return Decision(True)

    def _outside(self, tool: str, kind: str, subject: str, arguments: dict[str, Any]) -> str:
        """The first path of a file-tool call that lies outside the workspace, or ""."""
        if kind not in ("read", "edit") or tool in ASKING_READS or self._sandbox is None:
            return ""
        given = arguments.get("path")
        paths = [given] if isinstance(given, str) and given else (
            subject.split(", ") if tool == "apply_patch" else [])
        return next((path for path in paths if path and self._sandbox.outside(path)), "")

    def _after(self, contexts: tuple[str, ...]) -> Callable[[ToolCall, ToolResult], Awaitable[ToolResult]]:
        """The after-call step: the PreToolUse hooks' contexts, then the PostToolUse hooks (their
        contexts and blocks' reasons join the result; `continue: false` ends the turn)."""
        async def after(call: ToolCall, result: ToolResult) -> ToolResult:
            name, shown = self._view.present_input(call.name, call.arguments_or_empty())
            result = with_notes(result, [context_note("PreToolUse", name, text) for text in contexts])
            hooks = self.client.hooks
            if not hooks.has("PostToolUse"):
                return result
            payload = {**self.client.hook_base(), "tool_name": name, "tool_input": shown,
                       "tool_response": result.content, "tool_use_id": call.id, **_agent_fields()}
            told = hook_rules.result_verdict(await hooks.call(
                self.client.channel, "PostToolUse", payload, tool=name, tool_use_id=call.id))
            result = with_notes(result, [*told.notes, *(context_note("PostToolUse", name, text)
                                                         for text in told.contexts)])
            if told.stop is not None:
                raise HaltTurn(f"a PostToolUse hook stopped the run: {told.stop}", result)
            return result

        return after

    async def _pre_tool_hooks(self, tool: str, call: ToolCall | None,
                              arguments: dict[str, Any]) -> hook_rules.ToolVerdict:
        hooks = self.client.hooks
        if not hooks.has("PreToolUse"):
            return hook_rules.ToolVerdict()
        name, shown = self._view.present_input(tool, arguments)
        payload = {**self.client.hook_base(), "tool_name": name, "tool_input": shown,
                   "tool_use_id": call.id if call is not None else "", **_agent_fields()}
        outputs = await hooks.call(self.client.channel, "PreToolUse", payload, tool=name,
                                   tool_use_id=call.id if call is not None else None)
        return hook_rules.tool_verdict(outputs)

    async def _ask(self, tool: str, call: ToolCall | None, arguments: dict[str, Any]) -> Decision:
        name, shown = self._view.present_input(tool, arguments)
        question: dict[str, Any] = {"subtype": "can_use_tool", "tool_name": name, "input": shown,
                    "permission_suggestions": [], "blocked_path": None,
                    "tool_use_id": call.id if call is not None else None}
        scope = current_agent()
        if scope is not None:  # (a subagent's call: which one, as Claude Code says it)
            question["agent_id"] = scope.agent_id
        try:
            answer = await self.client.channel.request(question)
        except ControlError as exc:
            return Decision(False, f"the client could not be asked: {exc}")
        if answer.get("behavior") != "allow":
            if answer.get("interrupt"):
                self._stop_turn()
            return Decision(False, str(answer.get("message") or "the client denied it"))
        self._remember(answer.get("updatedPermissions"))
        updated = answer.get("updatedInput")
        if isinstance(updated, dict) and call is not None and updated != shown:
            arguments = self._rewrite(tool, call, updated, arguments)
            verdict, reason = self._recheck(tool, self._kind(tool), self._subject(tool, arguments))
            if verdict == "deny":
                return Decision(False, reason)
        return Decision(True)

    def _remember(self, updates: Any) -> None:
        """Apply the permission updates that came with an answer (`addRules`, `setMode`) for
        the rest of this process."""
        for update in updates if isinstance(updates, list) else []:
            if not isinstance(update, dict):
                continue
            if update.get("type") == "setMode" and isinstance(update.get("mode"), str):
                self.rules.mode = update["mode"]
            elif update.get("type") == "addRules":
                into = self.rules.denied if update.get("behavior") == "deny" else self.rules.allowed
                for rule in update.get("rules") or []:
                    if isinstance(rule, dict) and rule.get("toolName"):
                        content = rule.get("ruleContent")
                        into.append(ClaudeRule.parse(f"{rule['toolName']}({content})" if content
                                                     else str(rule["toolName"])))

    def _rewrite(self, tool: str, call: ToolCall, shown: dict[str, Any],
                 arguments: dict[str, Any]) -> dict[str, Any]:
        """Run `call` with `shown` (Claude's shape) from here on; our arguments for it."""
        new = self._view.take_input(tool, shown, arguments)
        self._registry.rewrites[call.id] = new
        return new

    def _subject(self, tool: str, arguments: dict[str, Any]) -> str:
        found = self._registry.get(tool)
        return found.subject(arguments) if found is not None else ""

    def _kind(self, tool: str) -> str:
        found = self._registry.get(tool)
        return found.kind if found is not None else "other"


def keep_tools(names: list[str] | None, removed: list[str], known: set[str]) -> tuple[Callable[[str], bool], list[str]]:
    """Which of our tools a run keeps for `--tools NAMES` (None: all) and the bare names of
    `--disallowedTools`, in either spelling; and the names that match no tool of ours. MCP
    tools (known only once their servers start) are kept unless `--disallowedTools` names
    them (`mcp__git__push`, `mcp__git__*`, or `mcp__git` for all of a server's)."""
    unknown: list[str] = []

    def ours(given: list[str]) -> set[str]:
        found = set()
        for name in given:
            mine = our_name(name)
            if mine in known or mine.startswith(MCP_PREFIX) or mine in MCP_RESOURCE_TOOLS:
                found.add(mine)
            else:
                unknown.append(name)
        return found

    wanted = ours(names) if names is not None else None
    dropped = ours([name for name in removed if "(" not in name])

    def keep(name: str) -> bool:
        if name.startswith(MCP_PREFIX) or name in MCP_RESOURCE_TOOLS:
            return name not in dropped and not any(mcp_rule_matches(rule, name) for rule in dropped)
        return (wanted is None or name in wanted) and name not in dropped

    return keep, unknown


def _agent_fields() -> dict[str, str]:
    """A hook input's `agent_id` and `agent_type` inside a subagent (none in the main conversation)."""
    scope = current_agent()
    return {} if scope is None else {"agent_id": scope.agent_id, "agent_type": scope.agent_type}
