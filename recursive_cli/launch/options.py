"""The common options of SPEC §3, declared once and added to every agent command; and the
options of the commands that run the agent on a prompt (`RunOptions`).

Every option that takes a value names it (`N`, `USD`, `FILE`…): `--help` shows that name,
the error for a bad value names the flag and what it accepts (usage.py).
"""

import enum
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, cast

import typer

from ..core import wording
from ..core.choices import OUTPUT_FORMATS, PERMISSION_MODES, PROVIDERS, SANDBOX_MODES, spelled_out
from ..core.slotted import Slotted


class BadValue(typer.BadParameter):
    """A value our own check refused; its message says what is accepted ("expected …")."""


ADVANCED = "Advanced"
MODEL = "Model and provider"
BUDGETS = "Budgets"
OUTPUT = "Output"
SAFETY = "Permissions"
INPUT = "Input and sessions"
MCP = "MCP servers"
HOOKS = "Hooks"


def _choice_enum(name: str, values: tuple[str, ...]) -> type[enum.Enum]:
    """A str enum of `values` for typer (members named like `stream_json`)."""
    members = {value.replace("-", "_"): value for value in values}
    return cast("type[enum.Enum]", enum.Enum(name, members, type=str))


# typer takes its choices from enums; these are built from the one spelling in `choices`.
ProviderName = _choice_enum("ProviderName", PROVIDERS)
OutputFormat = _choice_enum("OutputFormat", OUTPUT_FORMATS)
PermissionMode = _choice_enum("PermissionMode", PERMISSION_MODES)
SandboxMode = _choice_enum("SandboxMode", SANDBOX_MODES)
_PROVIDERS_HELP = spelled_out(tuple(p + " (any compatible server)" if p == "openai" else p for p in PROVIDERS))


class CommonOptions(Slotted):
    """The parsed common options; None / False / [] mean "not given on the command line"."""

    __slots__ = ("model", "provider", "api_base", "workspace", "add_dir", "max_steps", "max_cost", "max_duration",
                 "output_format", "session_id", "no_session", "no_checkpoints", "permission_mode", "allow", "deny",
                 "system_prompt", "append_system_prompt", "no_stream", "quiet", "verbose", "script", "sandbox",
                 "sandbox_network", "sandbox_allow_port", "trust_workspace", "bare", "strict_config")
    model: Optional[str]
    provider: Optional[enum.Enum]  # a ProviderName
    api_base: Optional[str]
    workspace: Optional[Path]
    add_dir: Optional[list[Path]]
    max_steps: Optional[int]
    max_cost: Optional[float]
    max_duration: Optional[str]
    output_format: Optional[enum.Enum]  # an OutputFormat
    session_id: Optional[str]
    no_session: bool
    no_checkpoints: bool
    permission_mode: Optional[enum.Enum]  # a PermissionMode
    allow: Optional[list[str]]
    deny: Optional[list[str]]
    system_prompt: Optional[str]
    append_system_prompt: Optional[str]
    no_stream: bool
    quiet: bool
    verbose: bool
    script: Optional[Path]
    sandbox: Optional[enum.Enum]  # a SandboxMode
    sandbox_network: bool
    sandbox_allow_port: Optional[list[int]]
    trust_workspace: bool
    bare: bool
    strict_config: bool

    def __init__(self, model: Optional[str] = None, provider: Optional[enum.Enum] = None,
                 api_base: Optional[str] = None, workspace: Optional[Path] = None,
                 add_dir: Optional[list[Path]] = None, max_steps: Optional[int] = None,
                 max_cost: Optional[float] = None, max_duration: Optional[str] = None,
                 output_format: Optional[enum.Enum] = None, session_id: Optional[str] = None,
                 no_session: bool = False, no_checkpoints: bool = False, permission_mode: Optional[enum.Enum] = None,
                 allow: Optional[list[str]] = None, deny: Optional[list[str]] = None,
                 system_prompt: Optional[str] = None, append_system_prompt: Optional[str] = None,
                 no_stream: bool = False, quiet: bool = False, verbose: bool = False,
                 script: Optional[Path] = None, sandbox: Optional[enum.Enum] = None,
                 sandbox_network: bool = False, sandbox_allow_port: Optional[list[int]] = None,
                 trust_workspace: bool = False, bare: bool = False,
                 strict_config: bool = False) -> None:
        self.model = model
        self.provider = provider
        self.api_base = api_base
        self.workspace = workspace
        self.add_dir = add_dir
        self.max_steps = max_steps
        self.max_cost = max_cost
        self.max_duration = max_duration
        self.output_format = output_format
        self.session_id = session_id
        self.no_session = no_session
        self.no_checkpoints = no_checkpoints
        self.permission_mode = permission_mode
        self.allow = allow
        self.deny = deny
        self.system_prompt = system_prompt
        self.append_system_prompt = append_system_prompt
        self.no_stream = no_stream
        self.quiet = quiet
        self.verbose = verbose
        self.script = script
        self.sandbox = sandbox
        self.sandbox_network = sandbox_network
        self.sandbox_allow_port = sandbox_allow_port
        self.trust_workspace = trust_workspace
        self.bare = bare
        self.strict_config = strict_config

    def as_flags(self) -> dict[str, Any]:
        """Values for `load_settings`, enums turned into their strings."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values["sandbox_allow_ports"] = values.pop("sandbox_allow_port")  # (the flag is said once a port)
        return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in values.items()}


def _defaults(holder: type) -> dict[str, Any]:
    """Each option of `holder` (a class of them) and its default: none given."""
    return {p.name: p.default for p in inspect.signature(holder).parameters.values()}


def positive_cost(value: float | None) -> float | None:
    """`--max-cost`: an amount of USD above 0."""
    if value is not None and not value > 0:
        raise BadValue("expected " + wording.USD)
    return value


def duration_value(value: str | None) -> str | None:
    """`--max-duration`: a wall-clock time above 0 that `parse_duration` reads."""
    if value is None:
        return value
    from ..core.settings import parse_duration  # (only when the option is given: --help stays light)

    try:
        seconds = parse_duration(value)
    except ValueError:
        raise BadValue("expected " + wording.DURATION) from None
    if seconds <= 0:
        raise BadValue("expected " + wording.POSITIVE_DURATION)
    return value


def directory_value(value: Path | None) -> Path | None:
    """`-C DIR`: a folder that exists and may be read (a file or a typo is exit 2, not a
    config file looked for inside it)."""
    if value is not None and (problem := _directory_problem(value)):
        raise BadValue("expected " + problem)
    return value


def directories_value(values: list[Path] | None) -> list[Path] | None:
    """`--add-dir DIR` (repeatable): each a folder that exists and may be read."""
    for value in values or ():
        if problem := _directory_problem(value):
            raise BadValue("expected " + problem + wording.got(str(value)))
    return values


def _directory_problem(path: Path) -> str:
    import os

    resolved = path.expanduser()
    if not resolved.exists():
        return "an existing directory"
    if not resolved.is_dir():
        return "a directory, not a file"
    return "" if os.access(resolved, os.R_OK | os.X_OK) else "a directory it may read"


def script_value(value: Path | None) -> Path | None:
    """`--script FILE`: a file that exists and holds a JSON list of replies."""
    if value is None:
        return value
    if not value.expanduser().is_file():
        raise BadValue("expected an existing file")
    from ..core.errors import ScriptError
    from ..providers.scripted import load_script  # (only when the option is given: --help stays light)

    try:
        load_script(value.expanduser())
    except ScriptError:
        raise BadValue("expected a JSON list of reply objects, or {\"replies\": [...]}") from None
    return value


def permission_rules(values: list[str] | None) -> list[str] | None:
    """`--allow`, `--deny`: each a rule, `tool` or `tool(glob)`."""
    if not values:
        return values
    from ..core.settings import PERMISSION_RULE  # (only when the option is given: --help stays light)

    bad = next((value for value in values if not PERMISSION_RULE.match(value)), None)
    if bad is not None:
        raise BadValue("expected " + wording.RULE + wording.got(bad))
    return values


_OPTIONS: dict[str, Any] = {
    "model": Annotated[Optional[str], typer.Option("--model", "-m", metavar="MODEL", help="Model name (default: the provider's).", rich_help_panel=MODEL)],
    "provider": Annotated[Optional[ProviderName], typer.Option("--provider", metavar="PROVIDER", help=_PROVIDERS_HELP + ".", rich_help_panel=MODEL, show_default=False)],
    "api_base": Annotated[Optional[str], typer.Option("--api-base", metavar="URL", help="Base URL of the API, e.g. http://127.0.0.1:11434/v1.", rich_help_panel=MODEL)],
    "workspace": Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", callback=directory_value, help="Root the tools work in (default: current directory).")],
    "add_dir": Annotated[Optional[list[Path]], typer.Option("--add-dir", metavar="DIR", callback=directories_value, help="Another root the file tools may use (repeatable).", rich_help_panel=ADVANCED)],
    "max_steps": Annotated[Optional[int], typer.Option("--max-steps", min=1, metavar="N", help="LLM calls per turn, 1 or more (default 100).", rich_help_panel=BUDGETS)],
    "max_cost": Annotated[Optional[float], typer.Option("--max-cost", metavar="USD", callback=positive_cost, help="USD for the whole session, e.g. 0.50.", rich_help_panel=BUDGETS)],
    "max_duration": Annotated[Optional[str], typer.Option("--max-duration", metavar="DURATION", callback=duration_value, help="Wall clock, e.g. 90s, 20m, 2h.", rich_help_panel=BUDGETS)],
    "output_format": Annotated[Optional[OutputFormat], typer.Option("--output-format", "-o", metavar="FORMAT", help=spelled_out(OUTPUT_FORMATS) + ".", rich_help_panel=OUTPUT, show_default=False)],
    "session_id": Annotated[Optional[str], typer.Option("--session-id", metavar="ID", help="Id for the new session.", rich_help_panel=ADVANCED)],
    "no_session": Annotated[bool, typer.Option("--no-session", help="Keep nothing on disk.", rich_help_panel=ADVANCED)],
    "no_checkpoints": Annotated[bool, typer.Option("--no-checkpoints", help="No workspace snapshots.", rich_help_panel=ADVANCED)],
    "permission_mode": Annotated[Optional[PermissionMode], typer.Option("--permission-mode", metavar="MODE", help=spelled_out(PERMISSION_MODES) + ".", rich_help_panel=SAFETY, show_default=False)],
    "allow": Annotated[Optional[list[str]], typer.Option("--allow", metavar="RULE", callback=permission_rules, help="Allow rule like 'run_shell(git *)' (repeatable).", rich_help_panel=SAFETY)],
    "deny": Annotated[Optional[list[str]], typer.Option("--deny", metavar="RULE", callback=permission_rules, help="Deny rule like 'write_file(secrets/**)' (repeatable); deny wins.", rich_help_panel=SAFETY)],
    "system_prompt": Annotated[Optional[str], typer.Option("--system-prompt", metavar="TEXT", help="Replace the built-in system prompt.", rich_help_panel=ADVANCED)],
    "append_system_prompt": Annotated[Optional[str], typer.Option("--append-system-prompt", metavar="TEXT", help="Extend the system prompt.", rich_help_panel=ADVANCED)],
    "no_stream": Annotated[bool, typer.Option("--no-stream", help="Ask the provider for whole responses.", rich_help_panel=ADVANCED)],
    "quiet": Annotated[bool, typer.Option("--quiet", "-q", help="Less on stderr.", rich_help_panel=OUTPUT)],
    "verbose": Annotated[bool, typer.Option("--verbose", "-v", help="More on stderr.", rich_help_panel=OUTPUT)],
    "script": Annotated[Optional[Path], typer.Option("--script", metavar="FILE", callback=script_value, help="Replies for the scripted provider (JSON).", rich_help_panel=ADVANCED)],
    "sandbox": Annotated[Optional[SandboxMode], typer.Option("--sandbox", metavar="MODE", help="What the agent's commands may write: " + spelled_out(SANDBOX_MODES) + " (default: read-only in read-only mode, else workspace-write).", rich_help_panel=SAFETY, show_default=False)],
    "sandbox_network": Annotated[bool, typer.Option("--sandbox-network", help="Let the agent's commands reach the network (loopback included).", rich_help_panel=SAFETY)],
    "sandbox_allow_port": Annotated[Optional[list[int]], typer.Option("--sandbox-allow-port", metavar="PORT", min=1, max=65535, help="Without the network, let the agent's commands connect to this port on 127.0.0.1 (a local test database; repeatable).", rich_help_panel=SAFETY)],
    "trust_workspace": Annotated[bool, typer.Option("--trust-workspace", help="Let this workspace's own hooks, MCP servers and config take effect for this run (see `recursive trust`).", rich_help_panel=SAFETY)],
    "bare": Annotated[bool, typer.Option("--bare", help="A hermetic run: no user or workspace config, hooks, MCP servers, memory or context files but those given by flags.", rich_help_panel=SAFETY)],
    "strict_config": Annotated[bool, typer.Option("--strict-config", help="Fail on an unknown key in a config file.", rich_help_panel=SAFETY)],
}
_DEFAULTS = _defaults(CommonOptions)


class RunOptions(Slotted):
    """The options of the commands that run the agent on a prompt (run, loop, goal, resume)."""

    __slots__ = ("no_stdin", "continue_session", "output_last_message", "output_schema", "mcp_config",
                 "strict_mcp_config", "settings", "include_hook_events")
    no_stdin: bool
    continue_session: bool  # `-c`: not on `resume`, which has SESSION and --last
    output_last_message: Optional[Path]
    output_schema: Optional[Path]
    mcp_config: Optional[list[str]]
    strict_mcp_config: bool
    settings: Optional[list[str]]
    include_hook_events: bool

    def __init__(self, no_stdin: bool = False, continue_session: bool = False,
                 output_last_message: Optional[Path] = None, output_schema: Optional[Path] = None,
                 mcp_config: Optional[list[str]] = None, strict_mcp_config: bool = False,
                 settings: Optional[list[str]] = None, include_hook_events: bool = False) -> None:
        self.no_stdin = no_stdin
        self.continue_session = continue_session
        self.output_last_message = output_last_message
        self.output_schema = output_schema
        self.mcp_config = mcp_config
        self.strict_mcp_config = strict_mcp_config
        self.settings = settings
        self.include_hook_events = include_hook_events


class McpOptions(Slotted):
    """`--mcp-config` and `--strict-mcp-config`, for the commands that list tools and servers."""

    __slots__ = ("mcp_config", "strict_mcp_config")
    mcp_config: Optional[list[str]]
    strict_mcp_config: bool

    def __init__(self, mcp_config: Optional[list[str]] = None, strict_mcp_config: bool = False) -> None:
        self.mcp_config = mcp_config
        self.strict_mcp_config = strict_mcp_config


_MCP_OPTIONS: dict[str, Any] = {
    "mcp_config": Annotated[Optional[list[str]], typer.Option("--mcp-config", metavar="FILE|JSON", help="MCP servers in .mcp.json's format, a file or JSON text (repeatable); added to the workspace's .mcp.json and the user's.", rich_help_panel=MCP)],
    "strict_mcp_config": Annotated[bool, typer.Option("--strict-mcp-config", help="Use only the servers of --mcp-config.", rich_help_panel=MCP)],
}
_RUN_OPTIONS: dict[str, Any] = {
    "no_stdin": Annotated[bool, typer.Option("--no-stdin", envvar="RECURSIVE_NO_STDIN", help="Never read stdin, even when it is a pipe or a file (e.g. inside `while read` loops).", rich_help_panel=INPUT)],
    "continue_session": Annotated[bool, typer.Option("--continue", "-c", help="Continue this workspace's latest session, with its conversation and settings.", rich_help_panel=INPUT)],
    "output_last_message": Annotated[Optional[Path], typer.Option("--output-last-message", metavar="FILE", help="Also write the final answer to FILE (empty when there is none).", rich_help_panel=OUTPUT)],
    "output_schema": Annotated[Optional[Path], typer.Option("--output-schema", metavar="FILE", help="JSON Schema the final answer must validate against; asked once more if not; structured_output in the JSON result.", rich_help_panel=OUTPUT)],
    **_MCP_OPTIONS,
    "settings": Annotated[Optional[list[str]], typer.Option("--settings", metavar="FILE|JSON", help="Settings in Claude Code's format, a file or JSON text (repeatable): their hooks run with those of ~/.recursive/settings.json, .claude/settings.json and .recursive/settings.json.", rich_help_panel=HOOKS)],
    "include_hook_events": Annotated[bool, typer.Option("--include-hook-events", help="Stream-json: a hook_started and a hook_finished line for every hook run.", rich_help_panel=HOOKS)],
}
_RUN_DEFAULTS = _defaults(RunOptions)
_MCP_DEFAULTS = _defaults(McpOptions)


def with_common_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give `command` every common option; it receives them as one `common: CommonOptions`."""
    return _with_options(command, "common", CommonOptions, _OPTIONS, _DEFAULTS)


def with_mcp_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give `command` the MCP options; it receives them as one `mcp_options: McpOptions`."""
    return _with_options(command, "mcp_options", McpOptions, _MCP_OPTIONS, _MCP_DEFAULTS)


def with_run_options(continue_flag: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give `command` the run options (`-c/--continue` only with `continue_flag`); it receives
    them as one `run_options: RunOptions`."""
    options = {k: v for k, v in _RUN_OPTIONS.items() if continue_flag or k != "continue_session"}

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        return _with_options(command, "run_options", RunOptions, options, _RUN_DEFAULTS)

    return decorate


def _with_options(command: Callable[..., Any], keyword: str, holder: type, options: dict[str, Any],
                  defaults: dict[str, Any]) -> Callable[..., Any]:
    """`command` with `options` as its own keyword parameters, collected into `holder` for it."""
    own = [p for p in inspect.signature(command).parameters.values() if p.name != keyword]
    extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name],
                               annotation=annotation) for name, annotation in options.items()]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        values = holder(**{name: kwargs.pop(name) for name in options})
        return command(**{keyword: values}, **kwargs)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + extra
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    del wrapper.__wrapped__  # type: ignore[attr-defined]
    return wrapper
