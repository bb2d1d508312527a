"""The common options of SPEC §3, declared once and added to every agent command; and the
options of the commands that run the agent on a prompt (`RunOptions`).

Each option is one field of a dataclass whose annotation carries its typer option: the
`with_*_options` decorators give a command those fields as its own parameters and hand it
the dataclass, so a flag is spelled in one place.

Every option that takes a value names it (`N`, `USD`, `FILE`…): `--help` shows that name,
the error for a bad value names the flag and what it accepts (usage.py).
"""

import enum
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeAlias, cast

import typer

from ..core import wording
from ..core.choices import EFFORTS, OUTPUT_FORMATS, PERMISSION_MODES, PROVIDERS, SANDBOX_MODES, WIRES, spelled_out
from ..core.errors import FlagValueError


def flag_check(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`check` as a typer callback: the FlagValueError it raises for a value it refuses becomes
    click's error for the flag, whose message (what is accepted: "expected …") usage.py says
    as it is."""

    def callback(value: Any) -> Any:  # (no functools.wraps: typer reads the parameters of this one)
        try:
            return check(value)
        except FlagValueError as exc:
            raise typer.BadParameter(str(exc)) from exc

    callback.__name__, callback.__doc__ = check.__name__, check.__doc__
    return callback


ADVANCED = "Advanced"
MODEL = "Model and provider"
BUDGETS = "Budgets"
OUTPUT = "Output"
SAFETY = "Permissions"
INPUT = "Input and sessions"
MCP = "MCP servers"
HOOKS = "Hooks"
SKILLS = "Skills"


def _choice_enum(name: str, values: tuple[str, ...]) -> type[enum.Enum]:
    """A str enum of `values` for typer (members named like `stream_json`)."""
    members = {value.replace("-", "_"): value for value in values}
    return cast("type[enum.Enum]", enum.Enum(name, members, type=str))


# typer takes its choices from enums; these are built from the one spelling in `choices`.
if TYPE_CHECKING:  # (an enum made at run time is no type to a checker: any enum then)
    ProviderName: TypeAlias = enum.Enum
    OutputFormat: TypeAlias = enum.Enum
    PermissionMode: TypeAlias = enum.Enum
    SandboxMode: TypeAlias = enum.Enum
    Wire: TypeAlias = enum.Enum
    EffortLevel: TypeAlias = enum.Enum
else:
    ProviderName = _choice_enum("ProviderName", PROVIDERS)
    OutputFormat = _choice_enum("OutputFormat", OUTPUT_FORMATS)
    PermissionMode = _choice_enum("PermissionMode", PERMISSION_MODES)
    SandboxMode = _choice_enum("SandboxMode", SANDBOX_MODES)
    Wire = _choice_enum("Wire", WIRES)
    EffortLevel = _choice_enum("EffortLevel", EFFORTS)
_PROVIDERS_HELP = spelled_out(tuple(p + " (any compatible server)" if p == "openai" else p for p in PROVIDERS))


@flag_check
def positive_cost(value: float | None) -> float | None:
    """`--max-cost`: an amount of USD above 0."""
    if value is not None and not value > 0:
        raise FlagValueError("expected " + wording.USD)
    return value


@flag_check
def duration_value(value: str | None) -> str | None:
    """`--max-duration`: a wall-clock time above 0 that `parse_duration` reads."""
    if value is None:
        return value
    from ..core.settings import parse_duration  # (only when the option is given: --help stays light)

    try:
        seconds = parse_duration(value)
    except ValueError:
        raise FlagValueError("expected " + wording.DURATION) from None
    if seconds <= 0:
        raise FlagValueError("expected " + wording.POSITIVE_DURATION)
    return value


@flag_check
def directory_value(value: Path | None) -> Path | None:
    """`-C DIR`: a folder that exists and may be read (a file or a typo is exit 2, not a
    config file looked for inside it)."""
    if value is not None and (problem := _directory_problem(value)):
        raise FlagValueError("expected " + problem)
    return value


@flag_check
def directories_value(values: list[Path] | None) -> list[Path] | None:
    """`--add-dir DIR` (repeatable): each a folder that exists and may be read."""
    for value in values or ():
        if problem := _directory_problem(value):
            raise FlagValueError("expected " + problem + wording.got(str(value)))
    return values


def _directory_problem(path: Path) -> str:
    import os

    resolved = path.expanduser()
    if not resolved.exists():
        return "an existing directory"
    if not resolved.is_dir():
        return "a directory, not a file"
    return "" if os.access(resolved, os.R_OK | os.X_OK) else "a directory it may read"


@flag_check
def skill_folders(values: list[Path] | None) -> list[Path] | None:
    """`--skill DIR` (repeatable): each a folder holding a SKILL.md, or folders that do."""
    if not values:
        return values
    from ..features.skills.catalog import folder_problem  # (only when the option is given: --help stays light)

    for value in values:
        if problem := folder_problem(value):
            raise FlagValueError(problem + wording.got(str(value)))
    return values


@flag_check
def script_value(value: Path | None) -> Path | None:
    """`--script FILE`: a file that exists and holds a JSON list of replies."""
    if value is None:
        return value
    if not value.expanduser().is_file():
        raise FlagValueError("expected an existing file")
    from ..core.errors import ScriptError
    from ..providers.scripted import load_script  # (only when the option is given: --help stays light)

    try:
        load_script(value.expanduser())
    except ScriptError:
        raise FlagValueError("expected a JSON list of reply objects, or {\"replies\": [...]}") from None
    return value


@flag_check
def model_list(value: str | None) -> str | None:
    """`--fallback-model M[,M2]`: model names separated by commas, none empty."""
    if value is not None and not all(part.strip() for part in value.split(",")):
        raise FlagValueError("expected model names separated by commas, e.g. gpt-4.1-mini,gpt-4o-mini")
    return value


def model_names(value: str | None) -> list[str]:
    """The models of `--fallback-model`, in order."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]


@flag_check
def permission_rules(values: list[str] | None) -> list[str] | None:
    """`--allow`, `--deny`: each a rule, `tool` or `tool(glob)`."""
    if not values:
        return values
    from ..core.settings import PERMISSION_RULE  # (only when the option is given: --help stays light)

    bad = next((value for value in values if not PERMISSION_RULE.match(value)), None)
    if bad is not None:
        raise FlagValueError("expected " + wording.RULE + wording.got(bad))
    return values


@flag_check
def image_files(values: list[Path] | None) -> list[Path] | None:
    """`-i/--image FILE` (repeatable): each a PNG, JPEG, GIF or WebP file of at most 5 MB."""
    if not values:
        return values
    from ..core.errors import ImageError
    from ..core.images import load_image  # (only when the option is given: --help stays light)

    for value in values:
        try:
            load_image(value.expanduser())
        except ImageError as exc:
            raise FlagValueError(f"expected an image file (PNG, JPEG, GIF or WebP, at most 5 MB): {exc}") from None
    return values


# (one spelling of -i, for RunOptions and `chat`)
ImageFlag = Annotated[Optional[list[Path]], typer.Option("--image", "-i", metavar="FILE", callback=image_files, help="An image for the model with the first prompt: PNG, JPEG, GIF or WebP (repeatable).", rich_help_panel=INPUT)]


@dataclass(slots=True)
class CommonOptions:
    """The parsed common options; None / False / [] mean "not given on the command line".
    Each field's annotation is its typer option: `with_common_options` gives a command all of them."""

    model: Annotated[Optional[str], typer.Option("--model", "-m", metavar="MODEL", help="Model name (default: the provider's; with another server's --api-base, the one model it serves).", rich_help_panel=MODEL)] = None
    provider: Annotated[Optional[ProviderName], typer.Option("--provider", metavar="PROVIDER", help=_PROVIDERS_HELP + ".", rich_help_panel=MODEL, show_default=False)] = None
    api_base: Annotated[Optional[str], typer.Option("--api-base", metavar="URL", help="Base URL of the API, e.g. http://127.0.0.1:11434/v1.", rich_help_panel=MODEL)] = None
    effort: Annotated[Optional[EffortLevel], typer.Option("--effort", metavar="LEVEL", help="How hard the model reasons: " + spelled_out(EFFORTS) + " (Anthropic: adaptive thinking at that effort).", rich_help_panel=MODEL, show_default=False)] = None
    thinking_budget: Annotated[Optional[int], typer.Option("--thinking-budget", min=1024, metavar="N", help="Tokens the model may think before it answers (Anthropic extended thinking), 1024 or more.", rich_help_panel=MODEL)] = None
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", callback=directory_value, help="Root the tools work in (default: current directory).")] = None
    add_dir: Annotated[Optional[list[Path]], typer.Option("--add-dir", metavar="DIR", callback=directories_value, help="Another root the file tools may use (repeatable).", rich_help_panel=ADVANCED)] = None
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, metavar="N", help="LLM calls per turn, 1 or more (default 100).", rich_help_panel=BUDGETS)] = None
    max_cost: Annotated[Optional[float], typer.Option("--max-cost", metavar="USD", callback=positive_cost, help="USD for the whole session, e.g. 0.50.", rich_help_panel=BUDGETS)] = None
    max_duration: Annotated[Optional[str], typer.Option("--max-duration", metavar="DURATION", callback=duration_value, help="Wall clock, e.g. 90s, 20m, 2h.", rich_help_panel=BUDGETS)] = None
    output_format: Annotated[Optional[OutputFormat], typer.Option("--output-format", "-o", metavar="FORMAT", help=spelled_out(OUTPUT_FORMATS) + ".", rich_help_panel=OUTPUT, show_default=False)] = None
    session_id: Annotated[Optional[str], typer.Option("--session-id", metavar="ID", help="Id for the new session.", rich_help_panel=ADVANCED)] = None
    no_session: Annotated[bool, typer.Option("--no-session", help="Keep nothing on disk.", rich_help_panel=ADVANCED)] = False
    no_checkpoints: Annotated[bool, typer.Option("--no-checkpoints", help="No workspace snapshots.", rich_help_panel=ADVANCED)] = False
    permission_mode: Annotated[Optional[PermissionMode], typer.Option("--permission-mode", metavar="MODE", help=spelled_out(PERMISSION_MODES) + ".", rich_help_panel=SAFETY, show_default=False)] = None
    allow: Annotated[Optional[list[str]], typer.Option("--allow", metavar="RULE", callback=permission_rules, help="Allow rule like 'run_shell(git *)' (repeatable).", rich_help_panel=SAFETY)] = None
    deny: Annotated[Optional[list[str]], typer.Option("--deny", metavar="RULE", callback=permission_rules, help="Deny rule like 'write_file(secrets/**)' (repeatable); deny wins.", rich_help_panel=SAFETY)] = None
    system_prompt: Annotated[Optional[str], typer.Option("--system-prompt", metavar="TEXT", help="Replace the built-in system prompt.", rich_help_panel=ADVANCED)] = None
    append_system_prompt: Annotated[Optional[str], typer.Option("--append-system-prompt", metavar="TEXT", help="Extend the system prompt.", rich_help_panel=ADVANCED)] = None
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Ask the provider for whole responses.", rich_help_panel=ADVANCED)] = False
    wire: Annotated[Optional[Wire], typer.Option("--wire", metavar="WIRE", help="The openai provider's API: responses (OpenAI's Responses API) or chat (Chat Completions); default: responses for api.openai.com, chat for any other server.", rich_help_panel=MODEL, show_default=False)] = None
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Less on stderr.", rich_help_panel=OUTPUT)] = False
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="More on stderr.", rich_help_panel=OUTPUT)] = False
    otel: Annotated[bool, typer.Option("--otel", help="Export a trace of the run (a span per turn, model call and tool call) and token and cost metrics over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (needs the otel extra; see docs/telemetry.md).", rich_help_panel=OUTPUT)] = False
    script: Annotated[Optional[Path], typer.Option("--script", metavar="FILE", callback=script_value, help="Replies for the scripted provider (JSON).", rich_help_panel=ADVANCED)] = None
    sandbox: Annotated[Optional[SandboxMode], typer.Option("--sandbox", metavar="MODE", help="What the agent's commands may write: " + spelled_out(SANDBOX_MODES) + " (default: read-only in read-only mode, else workspace-write).", rich_help_panel=SAFETY, show_default=False)] = None
    sandbox_network: Annotated[bool, typer.Option("--sandbox-network", help="Let the agent's commands reach the network (loopback included).", rich_help_panel=SAFETY)] = False
    sandbox_allow_port: Annotated[Optional[list[int]], typer.Option("--sandbox-allow-port", metavar="PORT", min=1, max=65535, help="Without the network, let the agent's commands connect to this port on 127.0.0.1 (a local test database; repeatable).", rich_help_panel=SAFETY)] = None
    trust_workspace: Annotated[bool, typer.Option("--trust-workspace", help="Let this workspace's own hooks, MCP servers, skills and config take effect for this run (see `recursive trust`).", rich_help_panel=SAFETY)] = False
    bare: Annotated[bool, typer.Option("--bare", help="A hermetic run: no user or workspace config, hooks, MCP servers, skills, memory or context files but those given by flags.", rich_help_panel=SAFETY)] = False
    strict_config: Annotated[bool, typer.Option("--strict-config", help="Fail on an unknown key in a config file.", rich_help_panel=SAFETY)] = False
    skill: Annotated[Optional[list[Path]], typer.Option("--skill", metavar="DIR", callback=skill_folders, help="Offer the skill in DIR (a folder with a SKILL.md), or every skill in DIR's subfolders, besides ~/.recursive/skills and the workspace's .claude/skills and .agents/skills (repeatable).", rich_help_panel=SKILLS)] = None
    no_skills: Annotated[bool, typer.Option("--no-skills", help="Offer the model no skill at all.", rich_help_panel=SKILLS)] = False

    def as_flags(self) -> dict[str, Any]:
        """Values for `load_settings`, enums turned into their strings."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["sandbox_allow_ports"] = values.pop("sandbox_allow_port")  # (the flag is said once a port)
        return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in values.items()}


# (one spelling of the MCP flags, for RunOptions and McpOptions)
McpConfigFlag = Annotated[Optional[list[str]], typer.Option("--mcp-config", metavar="FILE|JSON", help="MCP servers in .mcp.json's format, a file or JSON text (repeatable); added to the workspace's .mcp.json and the user's.", rich_help_panel=MCP)]
StrictMcpConfigFlag = Annotated[bool, typer.Option("--strict-mcp-config", help="Use only the servers of --mcp-config.", rich_help_panel=MCP)]


# `-w` alone (or before another option, or before a word that is no name) names no worktree:
# the command line gets "" for it (usage.py, `optional_values`), and the session id is its name.
WorktreeFlag = Annotated[Optional[str], typer.Option("--worktree", "-w", metavar="[NAME]", help="Work in a new git worktree, .recursive/worktrees/NAME at the repository's root, on a new branch recursive/NAME from HEAD (NAME: the session id when not given), so parallel sessions never touch each other's files; see `recursive worktree`.", rich_help_panel=INPUT, show_default=False)]
OPTIONAL_VALUE_FLAGS = ("-w", "--worktree")


@dataclass(slots=True)
class RunOptions:
    """The options of the commands that run the agent on a prompt (run, loop, goal, resume);
    `continue_session` (`-c`) is not on `resume`, which has SESSION and --last."""

    no_stdin: Annotated[bool, typer.Option("--no-stdin", envvar="RECURSIVE_NO_STDIN", help="Never read stdin, even when it is a pipe or a file (e.g. inside `while read` loops).", rich_help_panel=INPUT)] = False
    continue_session: Annotated[bool, typer.Option("--continue", "-c", help="Continue this workspace's latest session, with its conversation and settings.", rich_help_panel=INPUT)] = False
    image: ImageFlag = None
    output_last_message: Annotated[Optional[Path], typer.Option("--output-last-message", metavar="FILE", help="Also write the final answer to FILE (empty when there is none).", rich_help_panel=OUTPUT)] = None
    output_schema: Annotated[Optional[Path], typer.Option("--output-schema", metavar="FILE", help="JSON Schema the final answer must validate against; asked once more if not; structured_output in the JSON result.", rich_help_panel=OUTPUT)] = None
    mcp_config: McpConfigFlag = None
    strict_mcp_config: StrictMcpConfigFlag = False
    settings: Annotated[Optional[list[str]], typer.Option("--settings", metavar="FILE|JSON", help="Settings in Claude Code's format, a file or JSON text (repeatable): their hooks run with those of ~/.recursive/settings.json, .claude/settings.json and .recursive/settings.json.", rich_help_panel=HOOKS)] = None
    bg: Annotated[bool, typer.Option("--bg", help="Run detached: print the session id and return at once; the session goes on alone (see `recursive agents`, `logs`, `queue`, `stop`).", rich_help_panel=INPUT)] = False
    include_hook_events: Annotated[bool, typer.Option("--include-hook-events", help="Stream-json: a hook_started and a hook_finished line for every hook run.", rich_help_panel=HOOKS)] = False
    worktree: WorktreeFlag = None
    agents: Annotated[Optional[list[str]], typer.Option("--agents", metavar="JSON|FILE", help='Subagents the task tool can start, in Claude Code\'s format, JSON text or a file (repeatable): {"NAME": {"description": …, "prompt": …, "tools": [...], "model": …}}; with the workspace\'s .claude/agents/*.md (once trusted) and ~/.recursive/agents/*.md.', rich_help_panel=ADVANCED)] = None
    agent: Annotated[Optional[str], typer.Option("--agent", metavar="NAME", help="Run the main conversation as agent NAME: its prompt as the system prompt, its tools, its model.", rich_help_panel=ADVANCED)] = None
    fallback_model: Annotated[Optional[str], typer.Option("--fallback-model", metavar="MODEL[,MODEL]", callback=model_list, help="When the model stays unavailable through every retry (429, 5xx, overloaded, timeouts), send the call to the next of these models, and the calls after it too; priced on it, in the result's modelUsage.", rich_help_panel=MODEL)] = None


@dataclass(slots=True)
class McpOptions:
    """`--mcp-config` and `--strict-mcp-config`, for the commands that list tools and servers."""

    mcp_config: McpConfigFlag = None
    strict_mcp_config: StrictMcpConfigFlag = False


def with_common_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give `command` every common option; it receives them as one `common: CommonOptions`."""
    return _with_options(command, "common", CommonOptions)


def with_mcp_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give `command` the MCP options; it receives them as one `mcp_options: McpOptions`."""
    return _with_options(command, "mcp_options", McpOptions)


def with_run_options(continue_flag: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give `command` the run options (`-c/--continue` and `-w/--worktree`, which start or pick a
    session, only with `continue_flag`); it receives them as one `run_options: RunOptions`."""
    left_out = () if continue_flag else ("continue_session", "worktree")

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        return _with_options(command, "run_options", RunOptions, left_out)

    return decorate


def _with_options(command: Callable[..., Any], keyword: str, holder: type, left_out: tuple[str, ...] = ()
                  ) -> Callable[..., Any]:
    """`command` with the fields of `holder` (a dataclass of options, each annotated with its
    typer option) as its own keyword parameters, collected into one `holder` for it."""
    options = [f for f in fields(holder) if f.name not in left_out]
    own = [p for p in inspect.signature(command).parameters.values() if p.name != keyword]
    extra = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
             for f in options]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        values = holder(**{f.name: kwargs.pop(f.name) for f in options})
        return command(**{keyword: values}, **kwargs)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + extra
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    del wrapper.__wrapped__  # type: ignore[attr-defined]
    return wrapper
