"""The `recursive` command: typer definitions only; each command imports its work lazily.

The commands defined in other modules (`LAZY_COMMANDS`) are registered only when needed: all
of them, in that order, for the whole tree (`app`, which this module gives on first access:
`--help`, docgen, the tests); for a process whose first word names one of them, that one only
(`app_for`), so a `recursive run` never imports the typer definitions of `chat`, `fleet`,
`mcp`, `hooks`, `loop`, `goal` or `checkpoints`.
"""

import copy
import enum
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ... import __version__
from ...core.config_keys import CONFIG_ONLY
from ...launch.options import (
    CommonOptions,
    McpOptions,
    RunOptions,
    directory_value,
    with_common_options,
    with_mcp_options,
    with_run_options,
)
from .usage import RecursiveGroup

_root = typer.Typer(
    cls=RecursiveGroup,  # one `error:` line for a bad command line; value names in --help
    name="recursive",
    help="A coding agent for the shell: runs an LLM through tool calls in your workspace.\n\n"
         "`recursive \"PROMPT\"` is `recursive run \"PROMPT\"`; `recursive` alone or with options first "
         "(`recursive -m MODEL …`) opens `chat` on a terminal and is `run` off one.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


class ExportFormat(str, enum.Enum):
    jsonl = "jsonl"
    json = "json"
    md = "md"
    atif = "atif"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"recursive {__version__}")
        raise typer.Exit()


@_root.callback()
def _root_callback(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = False,
    headless: Annotated[bool, typer.Option("-p", "--print", help="Claude Code's headless mode, as `claude -p PROMPT`: run PROMPT with Claude's flags (--max-turns, --allowedTools, --output-format…) and print the result; Claude's Agent SDKs start `recursive` this way.")] = False,
) -> None:
    """A coding agent for the shell: runs an LLM through tool calls in your workspace.

    `recursive "PROMPT"` is `recursive run "PROMPT"`; `recursive` alone or with options first
    (`recursive -m MODEL …`) opens `chat` on a terminal and is `run` off one.
    """


@_root.command(epilog="""[b]Examples[/b]

  recursive run "add a docstring to utils.py"

  git diff | recursive run "review this diff" -o json

  recursive run "fix the tests" -o stream-json | jq .

  recursive run -c "now add tests for it"

  while read f; do recursive run --no-stdin "fix the lint errors in $f"; done < files.txt
""")
@with_common_options
@with_run_options()
def run(
    prompt: Annotated[Optional[list[str]], typer.Argument(metavar="PROMPT", help="The task. '-' or none reads stdin; piped stdin is appended to it (unless --no-stdin).", show_default=False)] = None,
    *,
    run_options: RunOptions,
    common: CommonOptions,
) -> None:
    """Run one turn of the agent on PROMPT and print the answer."""
    from .run_cmd import run_command

    raise typer.Exit(run_command(common, prompt or [], run_options))


@_root.command(epilog="""[b]Examples[/b]

  recursive resume parser-1 "now add tests"

  recursive resume --last

  git diff | recursive resume 2026 "review what changed since"
""")
@with_common_options
@with_run_options(continue_flag=False)
def resume(
    session: Annotated[Optional[str], typer.Argument(metavar="SESSION", help="Session id or unique prefix.", show_default=False)] = None,
    prompt: Annotated[Optional[list[str]], typer.Argument(metavar="PROMPT", help="The prompt.", show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="This workspace's latest session; all words are the prompt.")] = False,
    *,
    run_options: RunOptions,
    common: CommonOptions,
) -> None:
    """Continue a saved session; without PROMPT an interrupted run carries on."""
    from .resume_cmd import resume_command

    words = ([session] if session is not None else []) + (prompt or [])
    raise typer.Exit(resume_command(common, words, last, run_options))


sessions_app = typer.Typer(help="Inspect and manage saved sessions.", no_args_is_help=True)
_root.add_typer(sessions_app, name="sessions")


@sessions_app.command("list", epilog="""[b]Examples[/b]

  recursive sessions list

  recursive sessions list --all-workspaces --json | jq -r '.[].id'
""")
def sessions_list(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    all_workspaces: Annotated[bool, typer.Option("--all-workspaces", help="Sessions of every workspace.")] = False,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", help="Workspace whose sessions to list.")] = None,
) -> None:
    """List the sessions of this workspace, oldest first."""
    from .sessions_cmd import list_command

    raise typer.Exit(list_command(json_output, all_workspaces, workspace))


@sessions_app.command("show", epilog="""[b]Examples[/b]

  recursive sessions show parser-1

  recursive sessions show "$(recursive sessions list --json | jq -r '.[-1].id')" | less
""")
def sessions_show(session: Annotated[str, typer.Argument(help="Session id or unique prefix.")]) -> None:
    """Print a session's conversation, readable."""
    from .sessions_cmd import show_command

    raise typer.Exit(show_command(session))


@sessions_app.command("export", epilog="""[b]Examples[/b]

  recursive sessions export parser-1 --format md > parser-1.md

  recursive sessions export parser-1 --format json | jq .meta

  recursive sessions export parser-1 --format atif -o trajectory.json

  recursive sessions export parser-1 --bundle parser-1.tar.gz
""")
def sessions_export(
    session: Annotated[str, typer.Argument(help="Session id or unique prefix.")],
    fmt: Annotated[Optional[ExportFormat], typer.Option("--format", "-f", metavar="FORMAT", help="jsonl (the transcript as stored; the default), json, md, or atif (an Agent Trajectory Interchange Format document, as Harbor reads).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.")] = None,
    bundle: Annotated[Optional[str], typer.Option("--bundle", metavar="FILE", help="Write the whole session instead, checkpoints included, as one file for `sessions import` (- for stdout).")] = None,
) -> None:
    """Write a session to stdout (or -o FILE) as jsonl, json, Markdown or an ATIF trajectory, or as a bundle to move it to another machine."""
    from .sessions_cmd import export_command

    raise typer.Exit(export_command(session, fmt.value if fmt is not None else None, bundle, output))


@sessions_app.command("import", epilog="""[b]Examples[/b]

  recursive sessions import parser-1.tar.gz -C ~/src/parser

  recursive resume "$(recursive sessions import parser-1.tar.gz)" "go on"
""")
def sessions_import(
    bundle: Annotated[str, typer.Argument(metavar="FILE", help="A bundle written by `sessions export --bundle` (- for stdin).")],
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", help="Bind the session to this workspace (default: the current folder, never the one the bundle names).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a session with the same id.")] = False,
) -> None:
    """Make an exported session resumable here, its checkpoints included; prints its id.

    A bundle is someone else's data: its api base, scripted replies, MCP servers, goal checks,
    permission mode, allow rules and budgets are kept out (each named on stderr); resuming it
    uses yours."""
    from .sessions_cmd import import_command

    raise typer.Exit(import_command(bundle, workspace, force))


@sessions_app.command("rm", epilog="""[b]Examples[/b]

  recursive sessions rm parser-1

  recursive sessions rm 20261129-2041 20261129-2107
""")
def sessions_rm(sessions: Annotated[list[str], typer.Argument(metavar="SESSION...", help="Session ids or unique prefixes.")]) -> None:
    """Delete sessions (refused while a process is using one)."""
    from .sessions_cmd import rm_command

    raise typer.Exit(rm_command(sessions))


@sessions_app.command("gc", epilog="""[b]Examples[/b]

  recursive sessions gc --older-than 30d --dry-run

  recursive sessions gc --older-than 90d --all-workspaces --yes
""")
def sessions_gc(
    older_than: Annotated[str, typer.Option("--older-than", metavar="AGE", help="Age by last update, with a unit: 30d, 12h, 90m, 45s.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be removed.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking; needed when stdin is not a terminal.")] = False,
    all_workspaces: Annotated[bool, typer.Option("--all-workspaces", help="Sessions of every workspace, not only this one.")] = False,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", help="Workspace whose sessions to remove.")] = None,
) -> None:
    """Delete this workspace's sessions not updated for the given time. Nothing else ever deletes one.

    On a terminal it lists them and asks first; otherwise it deletes only with --yes (exit 2 without it). Each removed id is printed on stderr.
    """
    from .sessions_cmd import gc_command

    raise typer.Exit(gc_command(older_than, dry_run, yes, all_workspaces, workspace))


@_root.command(epilog="""[b]Examples[/b]

  recursive tools

  recursive tools --json | jq -r '.[].name'
""")
@with_common_options
@with_mcp_options
def tools(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    *,
    mcp_options: McpOptions,
    common: CommonOptions,
) -> None:
    """List the tools the agent would get with these options (MCP servers' too: they are started). Needs no API key."""
    from .tools_cmd import tools_command

    raise typer.Exit(tools_command(common, json_output, mcp_options))


config_app = typer.Typer(help="Show the effective settings and the config files.", no_args_is_help=True)
_root.add_typer(config_app, name="config")


@config_app.command("show", epilog="""[b]Examples[/b]

  recursive config show

  recursive config show --provider anthropic --json | jq .model

  recursive config show --mcp-config extra.json --json | jq '."mcp-servers".value'

  recursive config show --settings ci-hooks.json --json | jq .hooks.value

[b]Keys without a flag[/b] (set in a config file; docs/configuration.md)

""" + "\n\n".join(key.line().replace("[", "\\[") for key in CONFIG_ONLY) + "\n")
@with_common_options
@with_mcp_options
def config_show(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable settings.")] = False,
    settings: Annotated[Optional[list[str]], typer.Option("--settings", metavar="FILE|JSON", help="More settings in Claude Code's format, a file or JSON text (repeatable): their hooks are listed too.")] = None,
    *,
    mcp_options: McpOptions,
    common: CommonOptions,
) -> None:
    """Effective settings and where each came from (default, config file, env, flag), MCP servers (not started) and hooks too; keys masked."""
    from .config_cmd import show_command

    raise typer.Exit(show_command(common, json_output, mcp_options, settings or []))


@config_app.command("path", epilog="""[b]Examples[/b]

  recursive config path

  recursive config path -C ~/src/project
""")
def config_path(
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", callback=directory_value, help="Workspace whose project config to show.")] = None,
) -> None:
    """The config files that are read, lowest precedence first, and whether they exist."""
    from ...launch.options import CommonOptions as _Common
    from .config_cmd import path_command

    raise typer.Exit(path_command(_Common(workspace=workspace)))


class LogsFormat(str, enum.Enum):
    text = "text"
    stream_json = "stream-json"


@_root.command(epilog="""[b]Examples[/b]

  recursive agents

  recursive agents --all-workspaces --json | jq -r '.[].id'
""")
def agents(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    all_workspaces: Annotated[bool, typer.Option("--all-workspaces", help="Running sessions of every workspace.")] = False,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", help="Workspace whose running sessions to list.")] = None,
) -> None:
    """List the sessions running now (started with --bg, or in another terminal): pid, mode, turn, step, age, cost, last event."""
    from .detached_cmd import agents_command

    raise typer.Exit(agents_command(json_output, all_workspaces, workspace))


@_root.command(epilog="""[b]Examples[/b]

  recursive logs "$(recursive loop --bg 'watch the CI')" -f

  recursive logs nightly-1 -o stream-json | jq -c 'select(.type=="result")'
""")
def logs(
    session: Annotated[str, typer.Argument(help="Session id or unique prefix.")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep following while the session runs; exit with its exit code when it ends.")] = False,
    output_format: Annotated[LogsFormat, typer.Option("--output-format", "-o", metavar="FORMAT", help="text (progress, then the answer, as `run` prints them) or stream-json.", show_default=False)] = LogsFormat.text,
) -> None:
    """Print a detached session's progress from the start, as `run` prints it."""
    from .detached_cmd import logs_command

    raise typer.Exit(logs_command(session, follow, output_format.value))


@_root.command(epilog="""[b]Examples[/b]

  recursive queue nightly-1 "also check the docs build"

  recursive queue nightly-1 < review-notes.txt
""")
def queue(
    session: Annotated[str, typer.Argument(help="Session id or unique prefix.")],
    message: Annotated[Optional[list[str]], typer.Argument(metavar="MESSAGE", help="The message (none: read stdin).", show_default=False)] = None,
) -> None:
    """Leave a message for a session: a running one takes it at its next turn (a loop waiting for a wakeup at once), a stopped one on `resume`. Prints the message's id."""
    from .detached_cmd import queue_command

    raise typer.Exit(queue_command(session, message or []))


@_root.command(epilog="""[b]Examples[/b]

  recursive stop nightly-1

  recursive stop nightly-1 --now && recursive resume nightly-1 "go on, but skip the slow tests"
""")
def stop(
    session: Annotated[str, typer.Argument(help="Session id or unique prefix.")],
    now: Annotated[bool, typer.Option("--now", help="At once, killing the running tool commands, instead of at the next step boundary.")] = False,
) -> None:
    """Stop a running session (status interrupted, exit 143); `recursive resume` continues it."""
    from .detached_cmd import stop_command

    raise typer.Exit(stop_command(session, now))


@_root.command(epilog="""[b]Examples[/b]

  recursive attach nightly-1

  recursive attach "$(recursive loop --bg 'keep the build green')"
""")
def attach(session: Annotated[str, typer.Argument(help="Session id or unique prefix.")]) -> None:
    """Follow a detached session; each line typed is queued for it, /stop stops it, Ctrl-C detaches."""
    from .detached_cmd import attach_command

    raise typer.Exit(attach_command(session))


# Top-level name → the module whose `register(app)` adds it, in the whole tree's order
# (tests/test_startup_rss.py checks that each module adds exactly the name listed here).
LAZY_COMMANDS: dict[str, str] = {
    "loop": "recursive_cli.surfaces.cli.loop_app",
    "goal": "recursive_cli.surfaces.cli.goal_app",
    "checkpoints": "recursive_cli.surfaces.cli.checkpoints_app",
    "mcp": "recursive_cli.surfaces.cli.mcp_cmd",
    "hooks": "recursive_cli.surfaces.cli.hooks_cmd",
    "chat": "recursive_cli.surfaces.cli.chat_cmd",
    "fleet": "recursive_cli.surfaces.fleet.fleet_cmd",
    "trust": "recursive_cli.surfaces.cli.trust_cmd",
    "worktree": "recursive_cli.surfaces.cli.worktree_cmd",
    "skills": "recursive_cli.surfaces.cli.skills_cmd",
    "acp": "recursive_cli.surfaces.acp.acp_cmd",
}
_whole: list[typer.Typer] = []


def whole_app() -> typer.Typer:
    """The whole command tree: this module's commands, then every lazy one (built once)."""
    if not _whole:
        whole = _blank_copy(_root, keep=True)
        for module in LAZY_COMMANDS.values():
            importlib.import_module(module).register(whole)
        _whole.append(whole)
    return _whole[0]


def _blank_copy(source: typer.Typer, keep: bool) -> typer.Typer:
    """`source` with its own command lists (a copy of them, or empty)."""
    fresh = copy.copy(source)  # the same info, callback and settings
    fresh.registered_commands = list(source.registered_commands) if keep else []
    fresh.registered_groups = list(source.registered_groups) if keep else []
    return fresh


def app_for(args: Sequence[str]) -> typer.Typer:
    """The tree a process with these arguments runs: the root and the command its first word
    names, registered alone when it is a lazy one; the whole tree when no word names one."""
    from .narrow import narrowed

    module = LAZY_COMMANDS.get(args[0]) if args and not args[0].startswith("-") else None
    if module is None:
        # `--version` answers before any command is looked at: the root's own commands do
        base = _root if args and (args[0] == "--version" or command_in(_root, args[0])) else whole_app()
        return narrowed(base, args)
    only = _blank_copy(_root, keep=False)
    importlib.import_module(module).register(only)
    return narrowed(only, args)


def command_in(tree: typer.Typer, word: str) -> bool:
    """Whether `word` is one of the plain top-level names of `tree`."""
    from .narrow import command_names

    names = command_names(tree)
    return names is not None and word in names


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole tree, for whoever imports it (docgen, the tests)
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ROOT_OPTIONS = ("-h", "--help", "--version")


def implied_command(args: list[str], terminal: bool) -> str | None:
    """The command a command line without one means, as `claude` and `codex` take theirs:
    `recursive` alone or with options (`recursive -m MODEL`) opens `chat` on a terminal;
    `recursive "PROMPT"` and, off a terminal, `recursive -m MODEL "PROMPT"` are `run`.
    None: the line names its command, or is the root's own (`--help`, `--version`, or a
    near miss of one, `--verison`, left for the root to say what was meant)."""
    if args and not args[0].startswith("-"):
        return "run" if is_bare_prompt(args) else None
    if args and (args[0] in _ROOT_OPTIONS or closest_root_option(args[0])):
        return None
    if terminal:
        return "chat"
    return "run" if args else None


def closest_root_option(word: str) -> str | None:
    """The root's own long option that `word` (a long option the root does not have) is a typo of."""
    from ...core.wording import closest

    if not word.startswith("--") or word in _ROOT_OPTIONS:
        return None
    near = closest(word.partition("=")[0], ["--help", "--version", "--print"])
    return near[0] if near else None


def is_bare_prompt(args: list[str]) -> bool:
    """`recursive "fix the tests"`: a first word that is no option, no command and no near miss
    of one (`sesions`, `version` stay errors that say what was meant) is a prompt for `run`."""
    from .narrow import command_names
    from .usage import closest_command

    if not args or args[0].startswith("-"):
        return False
    names = list(command_names(_root) or {}) + list(LAZY_COMMANDS)
    return args[0] not in names and closest_command(args[0], names) is None


# A word alone that a user types for a root option: `recursive version`, as `git version`.
_WORDS_FOR_OPTIONS = {"version": "--version", "help": "--help"}


def main() -> None:
    """Console-script entry point."""
    import sys

    from ...launch.errors import end_startup, exit_now
    from ..headless.entry import is_headless, maybe_headless  # `recursive -p …`: Claude Code's headless mode

    if is_headless(sys.argv[1:]):
        end_startup()  # (a session of its own: the collector paused at import is back on for it)
    if (code := maybe_headless()) is not None:
        exit_now(code)  # flushed and closed: skip the interpreter's teardown (returns if it cannot)
        raise SystemExit(code)
    if len(sys.argv) == 2 and sys.argv[1] in _WORDS_FOR_OPTIONS:
        sys.argv[1] = _WORDS_FOR_OPTIONS[sys.argv[1]]
    if command := implied_command(sys.argv[1:], sys.stdin.isatty() and sys.stdout.isatty()):
        sys.argv.insert(1, command)
    from . import lazy_markdown
    from .errors import run_app

    lazy_markdown.install()
    run_app(app_for(sys.argv[1:]))  # typer builds the click objects of the command run only
