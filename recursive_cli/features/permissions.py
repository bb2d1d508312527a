"""Permission modes and `--allow` / `--deny` rules: which tool calls may run (SPEC §9).

A rule is `tool` or `tool(glob)`, the glob matched against the call's main argument (the
command for `run_shell`, the path for file tools). Deny rules always win; allow rules widen a
mode; otherwise the mode decides. `ask` asks on a TTY and, headless, denies at once. `plan` lets the agent read and
think but change nothing: reading tools, read-only shell commands (safe_commands.py) and
`exit_plan_mode` run; every other call is refused, whatever the allow rules say.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, NamedTuple

from ..core.choices import PermissionMode
from ..core.errors import ConfigError
from ..core.guards import Decision
from ..core.messages import ToolCall
from ..core.settings import PERMISSION_RULE
from ..core.wording import RULE, got
from .safe_commands import READ_ONLY_COMMANDS, read_only_command

Verdict = Literal["allow", "deny", "ask"]
AskHook = Callable[[str, str], Awaitable[bool]]

READ_ONLY_EXTRAS = frozenset({"todo_write", "checkpoint_list", "checkpoint_diff", "job_status",
                              "schedule_wakeup", "stop_loop"})
PLAN_TOOL = "exit_plan_mode"  # offered in plan mode only (features/plan_mode.py)
PLAN_SHELL_REFUSAL = ("plan mode allows only read-only commands ({shown}, git status/diff/log/show, …) "
                      "with no redirection; this one may change something")


class Rule(NamedTuple):
    """`tool` or `tool(pattern)`."""

    tool: str
    pattern: str | None

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = PERMISSION_RULE.match(text)
        if not match:  # (settings and the CLI check rules first, naming where they were set)
            raise ConfigError(f"invalid permission rule: expected {RULE}{got(text)}")
        return cls(match.group(1), match.group(2))

    def matches(self, tool: str, subject: str) -> bool:
        if self.tool != tool and not fnmatch.fnmatchcase(tool, self.tool):  # `mcp__git__*`
            return False
        return self.pattern is None or fnmatch.fnmatchcase(subject, self.pattern)


class PermissionPolicy:
    """Decides each call from the mode, the rules and, in `ask` mode, the ask hook (a `ToolGuard`)."""

    def __init__(self, mode: PermissionMode = "auto", allow: Sequence[str] = (), deny: Sequence[str] = (),
                 ask: AskHook | None = None) -> None:
        self.mode = mode
        self.allow = [Rule.parse(text) for text in allow]
        self.deny = [Rule.parse(text) for text in deny]
        self.ask = ask
        self.halt_on_no = False  # a "no" at the question ends the turn (the person says what to do instead)
        self._always: set[str] = set()

    def verdict(self, tool: str, kind: str, subject: str) -> tuple[Verdict, str]:
        """What the rules and the mode say, before anyone is asked.

        An edit naming several paths (apply_patch: `a.py, b.py`) is denied if a deny rule
        matches any of them and allowed by allow rules only if they cover all of them.
        """
        subjects = subject.split(", ") if kind == "edit" else [subject]
        for rule in self.deny:
            if any(rule.matches(tool, part) for part in subjects):
                return "deny", f"denied by rule --deny '{_show(rule)}'"
        allowed = all(any(rule.matches(tool, part) for rule in self.allow) for part in subjects)
        if self.mode == "plan":
            return _plan_verdict(tool, kind, subject)
        if allowed and self.allow or tool in self._always:
            return "allow", ""
        if self.mode == "auto":
            return "allow", ""
        if self.mode == "read-only":
            ok = kind == "read" or tool in READ_ONLY_EXTRAS
            return ("allow", "") if ok else ("deny", "the session is in read-only mode")
        if self.mode == "accept-edits":
            ok = kind != "shell"
            return ("allow", "") if ok else ("deny", "accept-edits mode does not allow shell commands")
        return ("allow", "") if kind == "read" or tool in READ_ONLY_EXTRAS else ("ask", "")

    async def decide(self, tool: str, kind: str, subject: str, call: ToolCall | None = None,
                     approved: bool = False) -> Decision:
        """Allow or deny one call; `ask` prompts through the hook, or denies when there is none;
        a call a hook `approved` is not asked about (deny rules and the mode still deny)."""
        verdict, reason = self.verdict(tool, kind, subject)
        if verdict == "allow" or verdict == "ask" and approved:
            return Decision(True)
        if verdict == "deny":
            return Decision(False, reason)
        if self.ask is None:
            return Decision(False, "ask mode with no terminal to ask on (headless): denied")
        answer = await self.ask(tool, subject)
        return Decision(True) if answer else Decision(False, "the user said no", halt=self.halt_on_no)

    def remember(self, tool: str) -> None:
        """Allow every later call of `tool` ("always" at the prompt)."""
        self._always.add(tool)


def _plan_verdict(tool: str, kind: str, subject: str) -> tuple[Verdict, str]:
    """Plan mode: read, think, present the plan; nothing that may change anything."""
    if kind == "read" or tool in READ_ONLY_EXTRAS or tool == PLAN_TOOL:
        return "allow", ""
    if tool == "run_shell" and read_only_command(subject):
        return "allow", ""
    if tool == "run_shell":
        shown = ", ".join(sorted(READ_ONLY_COMMANDS)[:8])
        return "deny", PLAN_SHELL_REFUSAL.format(shown=shown)
    return "deny", (f"plan mode: {tool} may change something, and nothing may change until the user "
                    f"approves a plan. Read and search, then call {PLAN_TOOL} with your plan")


def _show(rule: Rule) -> str:
    return rule.tool if rule.pattern is None else f"{rule.tool}({rule.pattern})"
