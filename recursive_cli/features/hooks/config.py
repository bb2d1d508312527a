"""Hooks in Claude Code's settings format, from every place a user keeps them.

`{"hooks": {"PreToolUse": [{"matcher": "Bash|run_shell", "hooks": [{"type": "command",
"command": "…", "timeout": 60}]}]}}`, read in this order (all of them add up):
`$RECURSIVE_HOME/settings.json`, the workspace's `.claude/settings.json`,
`.claude/settings.local.json` and `.recursive/settings.json`, then each `--settings FILE|JSON`.
The workspace's three count only once it is trusted (features/trust/): the caller says.
A matcher is a regex over tool names, matched whole against our name and Claude's
(`Bash` matches `run_shell`), or for an event without a tool over its word (SessionStart's
`startup`, a subagent's type); none, `""` or `*` match every tool. Hooks of other types than
`command` and events we do not fire are kept out silently, so Claude's files work unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ...core.errors import HookConfigError
from ...core.workspace_trust import users_file

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
          "SessionEnd", "SubagentStart", "SubagentStop")
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
DEFAULT_TIMEOUT = 60.0
_EVENT_NAME = re.compile(r"[A-Z][A-Za-z]*")


class HookCommand(NamedTuple):
    """One command hook: what runs, for how long at most, and where it was configured."""

    event: str
    matcher: str | None
    command: str
    timeout: float
    source: str

    def matches(self, tool: str | None) -> bool:
        """Whether this hook fires for our tool `tool` (None: an event without a tool; the
        matcher is then compared with the event's own word, e.g. `startup`, `auto`)."""
        if self.matcher in (None, "", "*"):
            return True
        from ...tools.claude_names import matcher_names  # (hooks with a matcher only: not for a run without)

        pattern = self.matcher or ""
        names = matcher_names(tool) if tool is not None and self.event in TOOL_EVENTS else (tool or "",)
        return any(re.fullmatch(pattern, name) for name in names)


@dataclass(slots=True)
class HookConfig:
    """Every hook in force, in the order its sources were read."""

    hooks: list[HookCommand] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the files and flags read

    def for_event(self, event: str, tool: str | None = None) -> list[HookCommand]:
        return [hook for hook in self.hooks if hook.event == event and hook.matches(tool)]

    def has(self, event: str) -> bool:
        return any(hook.event == event for hook in self.hooks)

    def __bool__(self) -> bool:
        return bool(self.hooks)


def settings_files(workspace: Path, home: Path) -> list[Path]:
    """The settings files hooks are read from, in order (present or not)."""
    return [home / "settings.json", *workspace_settings_files(workspace, home)]


def workspace_settings_files(workspace: Path, home: Path) -> list[Path]:
    """The workspace's own settings files, in order (present or not); not the user's own
    (`$RECURSIVE_HOME/settings.json` is a workspace at `~`'s `.recursive/settings.json`)."""
    paths = [workspace / ".claude" / "settings.json", workspace / ".claude" / "settings.local.json",
             workspace / ".recursive" / "settings.json"]
    return [path for path in paths if not users_file(path, home)]


def load_hooks(workspace: Path, home: Path, given: Sequence[str] = (), *, user: bool = True,
               project: bool = False) -> HookConfig:
    """The hooks of the user's settings file (unless not `user`), of the workspace's (only
    when `project`: a trusted workspace) and of each `--settings FILE|JSON`; HookConfigError
    naming the file (or `--settings`) and the key for a malformed one."""
    config = HookConfig()
    paths = ([home / "settings.json"] if user else []) + (workspace_settings_files(workspace, home) if project else [])
    try:
        for path in paths:
            if path.is_file():
                _add(config, str(path), _read(path, str(path)))
    except HookConfigError as exc:
        raise HookConfigError(str(exc), from_flag=False) from None
    for value in given:
        if value.lstrip().startswith("{"):
            _add(config, "--settings", _parse(value, "--settings"))
        else:
            path = Path(value).expanduser()
            if not path.is_file():
                raise HookConfigError(f"--settings: file not found: {value}")
            _add(config, str(path), _read(path, f"--settings {value}"))
    return config


def workspace_hooks(workspace: Path, home: Path) -> tuple[list[HookCommand], list[str]]:
    """The hooks of the workspace's own settings files, to show before they are trusted; and
    the problem of each file that cannot be used (`FILE: not valid JSON: …`)."""
    hooks: list[HookCommand] = []
    problems: list[str] = []
    for path in workspace_settings_files(workspace, home):
        if path.is_file():
            try:
                hooks.extend(parse_hooks(_read(path, str(path)), str(path)))
            except HookConfigError as exc:
                problems.append(str(exc))
    return hooks, problems


def parse_hooks(data: Any, source: str) -> list[HookCommand]:
    """The command hooks of one settings object (`{"hooks": {...}}`); HookConfigError if malformed."""
    if not isinstance(data, dict):
        raise HookConfigError(f"{source}: expected a JSON object")
    table = data.get("hooks")
    if table is None:
        return []
    if not isinstance(table, dict):
        raise HookConfigError(f"{source}: hooks: expected an object of events")
    found: list[HookCommand] = []
    for event, entries in table.items():
        where = f"hooks.{event}"
        if not _EVENT_NAME.fullmatch(str(event)):
            raise HookConfigError(f"{source}: {where}: not an event name (e.g. PreToolUse, Stop)")
        if not isinstance(entries, list):
            raise HookConfigError(f"{source}: {where}: expected a list of matchers")
        for i, entry in enumerate(entries):
            found.extend(_entry(entry, event, f"{where}[{i}]", source))
    return [hook for hook in found if hook.event in EVENTS]


def _entry(entry: Any, event: str, where: str, source: str) -> Iterable[HookCommand]:
    if not isinstance(entry, dict):
        raise HookConfigError(f"{source}: {where}: expected an object with matcher and hooks")
    matcher = entry.get("matcher")
    if matcher is not None and not isinstance(matcher, str):
        raise HookConfigError(f"{source}: {where}.matcher: expected a string (a regex of tool names)")
    if matcher not in (None, "", "*"):
        try:
            re.compile(matcher or "")
        except re.error as exc:
            raise HookConfigError(f"{source}: {where}.matcher: not a valid regex: {exc}") from None
    commands = entry.get("hooks")
    if not isinstance(commands, list):
        raise HookConfigError(f"{source}: {where}.hooks: expected a list of hooks")
    for j, hook in enumerate(commands):
        at = f"{where}.hooks[{j}]"
        if not isinstance(hook, dict):
            raise HookConfigError(f"{source}: {at}: expected an object with type and command")
        if hook.get("type", "command") != "command":
            continue  # Claude's prompt and agent hooks: not ours to run
        command = hook.get("command")
        if not isinstance(command, str) or not command.strip():
            raise HookConfigError(f"{source}: {at}.command: expected a non-empty string")
        timeout = hook.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise HookConfigError(f"{source}: {at}.timeout: expected seconds above 0, got {timeout!r}")
        yield HookCommand(event, matcher, command, float(timeout), source)


def _add(config: HookConfig, source: str, data: Any) -> None:
    config.hooks.extend(parse_hooks(data, source))
    config.sources.append(source)


def _read(path: Path, source: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HookConfigError(f"{source}: cannot read: {exc.strerror or exc}") from None
    return _parse(text, source)


def _parse(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise HookConfigError(f"{source}: not valid JSON: {exc}") from None
