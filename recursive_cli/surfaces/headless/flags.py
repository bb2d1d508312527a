"""Claude Code's headless command line (`claude -p …`), parsed into `HeadlessOptions`.

Claude's flags keep Claude's meanings (`--max-turns` is model calls per turn, `--system-prompt
""` is "no custom prompt"), ours keep working beside them (`--provider`, `--api-base`, `-C`).
Values are taken as given, even ones that start with `-` (a system prompt may), in either
`--flag value` or `--flag=value` form. The thinking flags mean what Claude Code makes of them
(`thinking_settings`): `--max-thinking-tokens N` a thinking budget (0: none), `--thinking
adaptive` adaptive thinking (at the API's default effort, high, unless `--effort` says),
`--thinking disabled` none, `--effort LEVEL` that effort (`xhigh`, which our levels lack, as
the next one down). `--plugin-dir DIR` loads a plugin's commands (features/plugins.py);
`MAX_THINKING_TOKENS` in the environment, as Claude Code reads it, stands for `--max-thinking-tokens`
when no thinking flag is given. Flags
of Claude Code that change nothing here (its debug switches, `--plugin-dir-no-mcp`,
`--thinking-display`) are accepted and named in `ignored`; an unknown flag is a
usage error, as it is for Claude Code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import wording
from ...core.choices import SANDBOX_MODES
from ...core.errors import UsageError  # noqa: F401 (re-exported)

CLAUDE_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
OUR_MODES = ("auto", "accept-edits", "read-only", "ask")
OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
THINKING_MODES = ("adaptive", "enabled", "disabled")
CLAUDE_EFFORTS = ("low", "medium", "high", "xhigh", "max")
THINKING_MINIMUM = 1024  # the smallest budget the API takes


def _env_thinking_budget() -> int | None:
    """`MAX_THINKING_TOKENS` as Claude Code reads it (the SDKs' examples set it in `env=`);
    None when unset or not a whole number."""
    value = os.environ.get("MAX_THINKING_TOKENS", "").strip()
    return int(value) if value.isdigit() else None


@dataclass
class HeadlessOptions:
    """Everything the headless command line says."""

    prompt_words: list[str] = field(default_factory=list)
    print_mode: bool = False
    bg: bool = False  # --bg: detached, the session id printed (docs/detached.md)
    input_format: str = "text"
    output_format: str = "text"
    model: str | None = None
    fallback_model: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    max_duration: str | None = None
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    tools: list[str] | None = None  # None: every tool ("default")
    permission_mode: str | None = None
    permission_prompt_tool: str | None = None
    system_prompt: str | None = None
    system_prompt_file: Path | None = None
    append_system_prompt: str | None = None
    append_system_prompt_file: Path | None = None
    continue_session: bool = False
    resume: str | None = None
    session_id: str | None = None
    fork_session: bool = False
    resume_session_at: str | None = None  # keep the conversation up to this message (resume_at.py)
    resume_drops_turn: str | None = None  # ... and refuse unless that drops only this prompt's turn
    session_mirror: bool = False  # transcript_mirror frames for the SDK's SessionStore (claude_view.py)
    add_dir: list[Path] = field(default_factory=list)
    mcp_config: list[str] = field(default_factory=list)
    strict_mcp_config: bool = False
    settings: str | None = None
    setting_sources: list[str] | None = None  # Claude's `user`, `project`, `local` (None: not given)
    plugin_dir: list[str] = field(default_factory=list)  # the SDK's `plugins=` (local folders)
    include_partial_messages: bool = False
    include_hook_events: bool = False
    replay_user_messages: bool = False
    json_schema: str | None = None
    fail_on: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)  # --agents JSON (features/subagents)
    agent: str | None = None  # --agent NAME: the main conversation's agent
    debug: bool = False
    help: bool = False
    max_thinking_tokens: int | None = None
    thinking: str | None = None  # adaptive, enabled or disabled
    effort: str | None = None
    # ours
    provider: str | None = None
    api_base: str | None = None
    workspace: Path | None = None
    no_session: bool = False
    no_checkpoints: bool = False
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    no_stream: bool = False
    quiet: bool = False
    script: Path | None = None
    trust_workspace: bool = False
    bare: bool = False
    strict_config: bool = False
    sandbox: str | None = None  # our --sandbox (tools/os_sandbox.py)
    sandbox_network: bool = False
    sandbox_allow_port: list[int] = field(default_factory=list)
    skill: list[Path] = field(default_factory=list)  # our --skill DIR (features/skills)
    no_skills: bool = False
    otel: bool = False  # export a trace and metrics over OTLP/HTTP (features/telemetry)
    ignored: list[str] = field(default_factory=list)  # Claude's flags that change nothing here

    def thinking_settings(self) -> tuple[str | None, int | None]:
        """Our (effort, thinking budget) for Claude's thinking flags."""
        budget = self.max_thinking_tokens
        if budget is None and self.thinking is None:  # Claude Code's variable, under its flags
            budget = _env_thinking_budget()
        if self.thinking == "disabled" or budget == 0:
            return None, None
        effort = "high" if self.effort == "xhigh" else self.effort  # (Claude Code's fallback on a model without it)
        if budget:
            return effort, max(budget, THINKING_MINIMUM)
        if self.thinking in ("adaptive", "enabled") and effort is None:
            return "high", None  # adaptive thinking at the API's default effort
        return effort, None

    @property
    def streaming_input(self) -> bool:
        return self.input_format == "stream-json"

    @property
    def trusts_workspace(self) -> bool:
        """Whether the workspace's own hooks, servers and config count for this run: ours
        (`--trust-workspace`), or the SDK's `setting_sources` naming `project` or `local`
        (the program's explicit choice)."""
        return self.trust_workspace or bool({"project", "local"} & set(self.setting_sources or ()))

    @property
    def prompt_permission(self) -> bool:
        """Whether the client answers permission questions (`--permission-prompt-tool stdio`)."""
        return self.permission_prompt_tool == "stdio"


@dataclass(frozen=True)
class Flag:
    """How one flag is read: `bool`, `value`, `optional` (a value only in `--flag=value` form or
    when the next word is not a flag) or `list` (repeatable, comma or space separated)."""

    dest: str
    kind: str = "value"


_FLAGS: dict[str, Flag] = {
    "-p": Flag("print_mode", "bool"), "--print": Flag("print_mode", "bool"),
    "--input-format": Flag("input_format"), "--output-format": Flag("output_format"),
    "-o": Flag("output_format"),
    "--model": Flag("model"), "-m": Flag("model"), "--fallback-model": Flag("fallback_model"),
    "--max-turns": Flag("max_turns"), "--max-steps": Flag("max_turns"),
    "--max-budget-usd": Flag("max_budget_usd"), "--max-cost": Flag("max_budget_usd"),
    "--max-duration": Flag("max_duration"),
    "--allowedTools": Flag("allowed_tools", "list"), "--allowed-tools": Flag("allowed_tools", "list"),
    "--disallowedTools": Flag("disallowed_tools", "list"),
    "--disallowed-tools": Flag("disallowed_tools", "list"),
    "--tools": Flag("tools", "list"),
    "--permission-mode": Flag("permission_mode"),
    "--permission-prompt-tool": Flag("permission_prompt_tool"),
    "--dangerously-skip-permissions": Flag("skip_permissions", "bool"),
    "--system-prompt": Flag("system_prompt"), "--system-prompt-file": Flag("system_prompt_file"),
    "--append-system-prompt": Flag("append_system_prompt"),
    "--append-system-prompt-file": Flag("append_system_prompt_file"),
    "--continue": Flag("continue_session", "bool"), "-c": Flag("continue_session", "bool"),
    "--resume": Flag("resume", "optional"), "-r": Flag("resume", "optional"),
    "--session-id": Flag("session_id"), "--fork-session": Flag("fork_session", "bool"),
    "--resume-session-at": Flag("resume_session_at"), "--resume-drops-turn": Flag("resume_drops_turn"),
    "--session-mirror": Flag("session_mirror", "bool"),
    "--bg": Flag("bg", "bool"),
    "--add-dir": Flag("add_dir", "list"),
    "--mcp-config": Flag("mcp_config", "append"), "--strict-mcp-config": Flag("strict_mcp_config", "bool"),
    "--settings": Flag("settings"), "--setting-sources": Flag("setting_sources", "list"),
    "--plugin-dir": Flag("plugin_dir", "append"),
    "--include-partial-messages": Flag("include_partial_messages", "bool"),
    "--include-hook-events": Flag("include_hook_events", "bool"),
    "--replay-user-messages": Flag("replay_user_messages", "bool"),
    "--json-schema": Flag("json_schema"), "--fail-on": Flag("fail_on", "list"),
    "--agents": Flag("agents", "append"), "--agent": Flag("agent"),
    "--debug": Flag("debug", "bool"), "-d": Flag("debug", "bool"),
    "--help": Flag("help", "bool"), "-h": Flag("help", "bool"),
    "--no-session-persistence": Flag("no_session", "bool"),
    "--max-thinking-tokens": Flag("max_thinking_tokens"), "--thinking": Flag("thinking"),
    "--effort": Flag("effort"), "--thinking-budget": Flag("max_thinking_tokens"),
    "--provider": Flag("provider"), "--api-base": Flag("api_base"),
    "--workspace": Flag("workspace"), "-C": Flag("workspace"),
    "--no-session": Flag("no_session", "bool"), "--no-checkpoints": Flag("no_checkpoints", "bool"),
    "--allow": Flag("allow", "append"), "--deny": Flag("deny", "append"),
    "--no-stream": Flag("no_stream", "bool"), "--quiet": Flag("quiet", "bool"),
    "-q": Flag("quiet", "bool"), "--script": Flag("script"),
    "--trust-workspace": Flag("trust_workspace", "bool"), "--bare": Flag("bare", "bool"),
    "--strict-config": Flag("strict_config", "bool"),
    "--sandbox": Flag("sandbox"), "--sandbox-network": Flag("sandbox_network", "bool"),
    "--sandbox-allow-port": Flag("sandbox_allow_port", "append"),
    "--skill": Flag("skill", "append"), "--no-skills": Flag("no_skills", "bool"),
    "--otel": Flag("otel", "bool"),
    # Claude's --verbose (required with stream-json there) is how our output always is.
    "--verbose": Flag("", "bool"), "-v": Flag("", "bool"),
}
# Claude Code's flags that have nothing to change here: accepted, and listed in `ignored`.
_IGNORED_VALUE = ("--debug-file", "--betas", "--thinking-display", "--plugin-dir-no-mcp", "--task-budget",
                  "--permission-prompts", "--initialize-fields", "--channels", "--project-config-root",
                  "--managed-settings", "--sdk-url", "--teleport")
_IGNORED_BOOL = ("--await-initialize",
                 "--allow-dangerously-skip-permissions", "--managed-settings-in-initialize",
                 "--debug-to-stderr", "--hard-fail", "--no-optional-locks", "--ide")
for _name in _IGNORED_VALUE:
    _FLAGS[_name] = Flag("ignored", "ignored-value")
for _name in _IGNORED_BOOL:
    _FLAGS[_name] = Flag("ignored", "ignored-bool")

_SEPARATOR = re.compile(r"[,\s]+(?![^()]*\))")  # commas and spaces, not inside `Bash(git diff:*)`


def split_list(value: str) -> list[str]:
    """`Bash(git log:*),Read Edit` → `["Bash(git log:*)", "Read", "Edit"]`."""
    return [part for part in _SEPARATOR.split(value.strip()) if part]


def parse_flags(argv: list[str]) -> HeadlessOptions:
    """The options of a headless command line; UsageError for one that cannot be run."""
    values: dict[str, Any] = {}
    words: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            words.extend(argv[i:])
            break
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        name, has_value, inline = token.partition("=")
        flag = _FLAGS.get(name)
        if flag is None:
            near = wording.closest(name, [known for known in _FLAGS if known.startswith("--")])
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            raise UsageError(f"unknown option {name}{hint} (see `recursive -p --help`)")
        if flag.kind in ("bool", "ignored-bool"):
            if has_value:
                raise UsageError(f"{name} takes no value")
            if flag.kind == "ignored-bool":
                values.setdefault("ignored", []).append(name)
            elif flag.dest:
                values[flag.dest] = True
            continue
        if has_value:
            value = inline
        elif flag.kind == "optional":
            value = argv[i] if i < len(argv) and not argv[i].startswith("-") else ""
            i += 1 if value else 0
        elif i < len(argv):
            value, i = argv[i], i + 1
        else:
            raise UsageError(f"{name} needs a value")
        if flag.kind == "ignored-value":
            values.setdefault("ignored", []).append(name)
        elif flag.kind == "list":
            values.setdefault(flag.dest, []).extend(split_list(value))
        elif flag.kind == "append":
            values.setdefault(flag.dest, []).append(value)
        else:
            values[flag.dest] = value
    return _options(values, words)


def _options(values: dict[str, Any], words: list[str]) -> HeadlessOptions:
    skip = values.pop("skip_permissions", False)
    if skip and "permission_mode" not in values:
        values["permission_mode"] = "bypassPermissions"
    if "tools" in values:
        names = values["tools"]
        values["tools"] = None if names == ["default"] else [n for n in names if n != "default"]
    options = HeadlessOptions(prompt_words=words, **{k: v for k, v in values.items()
                                                      if k not in _CONVERTED})
    options.max_turns = _number(values, "max_turns", "--max-turns", int, minimum=1)
    options.max_budget_usd = _number(values, "max_budget_usd", "--max-budget-usd", float, minimum=0)
    options.max_thinking_tokens = _number(values, "max_thinking_tokens", "--max-thinking-tokens", int, minimum=0)
    for key in ("system_prompt_file", "append_system_prompt_file", "workspace", "script"):
        if key in values:
            setattr(options, key, Path(values[key]))
    options.add_dir = [Path(p) for p in values.get("add_dir", [])]
    options.skill = [Path(p) for p in values.get("skill", [])]
    for folder in options.skill:
        _check_skill(folder)
    options.sandbox_allow_port = [_port(value) for value in values.get("sandbox_allow_port", [])]
    _check_choice(options.output_format, OUTPUT_FORMATS, "--output-format")
    _check_choice(options.input_format, INPUT_FORMATS, "--input-format")
    if options.permission_mode is not None:
        _check_choice(options.permission_mode, CLAUDE_MODES + OUR_MODES, "--permission-mode")
    if options.sandbox is not None:
        _check_choice(options.sandbox, SANDBOX_MODES, "--sandbox")
    if options.thinking is not None:
        _check_choice(options.thinking, THINKING_MODES, "--thinking")
    if options.effort is not None:
        _check_choice(options.effort, CLAUDE_EFFORTS, "--effort")
    if options.streaming_input and options.output_format != "stream-json":
        raise UsageError("--input-format stream-json needs --output-format stream-json")
    if options.continue_session and options.resume is not None:
        raise UsageError("give --continue or --resume, not both")
    if options.fork_session and not (options.continue_session or options.resume is not None):
        raise UsageError("--fork-session needs --resume or --continue")
    if options.resume_drops_turn is not None and not options.resume_session_at:
        raise UsageError("--resume-drops-turn requires --resume-session-at")
    if options.resume_session_at and not (options.continue_session or options.resume is not None):
        raise UsageError("--resume-session-at requires --resume (or --continue)")
    return options


_CONVERTED = frozenset({"max_turns", "max_budget_usd", "max_thinking_tokens", "system_prompt_file", "append_system_prompt_file",
                        "workspace", "script", "add_dir", "sandbox_allow_port", "skill"})


def _check_skill(folder: Path) -> None:
    """`--skill DIR`: a skill folder, or a folder of them."""
    from ...features.skills.catalog import folder_problem

    problem = folder_problem(folder)
    if problem:
        raise UsageError(f"invalid value for --skill: {str(folder)!r} ({problem})")


def _port(value: str) -> int:
    """`--sandbox-allow-port`: a TCP port, 1 to 65535."""
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise UsageError(f"invalid value for --sandbox-allow-port: {value!r} (expected a port, 1 to 65535)")
    return int(value)


def _number(values: dict[str, Any], key: str, flag: str, kind: type, minimum: float) -> Any:
    if key not in values:
        return None
    text = values[key]
    try:
        number = kind(text)
    except ValueError:
        number = None
    if number is None or number < minimum or (kind is float and number == 0):
        what = f"a whole number of at least {minimum}" if kind is int else "a number of USD above 0"
        raise UsageError(f"invalid value for {flag}: {text!r} (expected {what})")
    return number


def _check_choice(value: str, choices: tuple[str, ...], flag: str) -> None:
    if value not in choices:
        raise UsageError(f"invalid value for {flag}: {value!r} (choose from {', '.join(choices)})")


HELP = """\
Usage: recursive -p [OPTIONS] [PROMPT]
       recursive --input-format stream-json --output-format stream-json [OPTIONS]

Claude Code's headless mode, for scripts and Claude's Agent SDKs (cli_path= /
pathToClaudeCodeExecutable: pointing at `recursive`), on any model recursive can use.

  -p, --print                  Run PROMPT (or stdin's text) once and print the answer.
  --input-format FORMAT        text (default) or stream-json (NDJSON messages on stdin).
  --output-format FORMAT       text (default), json or stream-json.
  --model, -m MODEL            Model name.  --provider openai|anthropic|scripted, --api-base URL.
  --max-turns N                Model calls per turn.  --max-budget-usd USD: for the session.
  --allowedTools TOOLS         Tools allowed without asking, e.g. "Bash(git *),Read".
  --disallowedTools TOOLS      Tools denied (a bare name removes the tool).
  --tools TOOLS                The tools the model gets ("" for none, "default" for all).
  --permission-mode MODE       default, acceptEdits, plan, bypassPermissions, dontAsk
                               (or ours: auto, accept-edits, read-only, ask).
  --permission-prompt-tool stdio  Ask the client (a can_use_tool control request).
  --system-prompt TEXT         Replace the built-in prompt ("" keeps it).
  --append-system-prompt TEXT  Extend it.
  -c, --continue               Continue this workspace's latest session.
  -r, --resume ID              Continue session ID.  --fork-session: into a new session.
  --resume-session-at UUID     With --resume: only up to that message (its stream line's uuid);
                               --resume-drops-turn UUID: refused unless that drops only the
                               turn of that prompt.
  --session-mirror             transcript_mirror lines (Claude's transcript, for a SessionStore).
  --session-id ID              Id for a new session.
  --bg                         Run detached: print the session id and return at once.
  --add-dir DIR                Another root for the file tools.
  --mcp-config FILE|JSON       MCP servers in .mcp.json's format (repeatable).
  --strict-mcp-config          Only those servers: not the workspace's .mcp.json or the user's.
  --max-thinking-tokens N      Anthropic extended thinking with N tokens (0: none).
  --thinking MODE              adaptive or disabled.  --effort low|medium|high|xhigh|max.
  --include-partial-messages   Also stream_event lines while the model writes.
  --fail-on permission_denied  A denied call makes the turn an error even if the model answered.
  --agents JSON                Subagents for the Agent (Task) tool: {"name": {"description", "prompt",
                               "tools", "model"}}; with .claude/agents/*.md.  --agent NAME: run as one.
  -C, --workspace DIR          Root the tools work in.  --no-session, --no-checkpoints, --script.
  --setting-sources LIST       With project or local: the workspace's own hooks, .mcp.json and
                               config count (as --trust-workspace).  --bare, --strict-config.
                               Given, project lets .claude/skills in and user ~/.recursive/skills.
  --skill DIR                  Offer the skill(s) in DIR too (repeatable).  --no-skills: none.
  --sandbox MODE               What commands may write: read-only, workspace-write or off
                               (bubblewrap; --sandbox-network lets them reach the network,
                               --sandbox-allow-port PORT only 127.0.0.1:PORT).
  --otel                       Export a trace and metrics of the run over OTLP/HTTP
                               ($OTEL_EXPORTER_OTLP_ENDPOINT; the otel extra).
"""
