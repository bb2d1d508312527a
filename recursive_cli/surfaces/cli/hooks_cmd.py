"""`recursive hooks list`: the command hooks that would fire for each event, with their source;
and the helpers the agent commands use to load hooks (exit 2 for a malformed file) and to show
their events in stream-json (`--include-hook-events`).

The typer definitions are here too (registered by `register`); the hooks feature is imported
only when a command runs.
"""

import json
import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ...launch.options import CommonOptions, with_common_options
from ...launch.settings import command_hooks, command_settings

if TYPE_CHECKING:
    pass

hooks_app = typer.Typer(help="The command hooks in force (Claude Code's settings format).",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the `hooks` command group to `app`."""
    app.add_typer(hooks_app, name="hooks")


@hooks_app.command("list", epilog="""[b]Examples[/b]

  recursive hooks list

  recursive hooks list --settings ci-hooks.json --json | jq '.[] | select(.event == "PreToolUse")'
""")
@with_common_options
def hooks_list(
    settings: Annotated[Optional[list[str]], typer.Option("--settings", metavar="FILE|JSON", help="More settings in Claude Code's format, a file or JSON text (repeatable).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    *,
    common: CommonOptions,
) -> None:
    """Show each event's hooks: matcher, command, timeout and the file they come from."""
    raise typer.Exit(list_command(common, settings or [], json_output))


def list_command(common: CommonOptions, settings: list[str], as_json: bool) -> int:
    from ...features.hooks.config import EVENTS

    loaded = command_settings(common)
    config = command_hooks(loaded, settings)
    from ...features.trust import run_notes

    sys.stderr.writelines(f"{note}\n" for note in run_notes(loaded, frozenset({"hooks"})))
    rows = [{"event": hook.event, "matcher": hook.matcher or "*", "command": hook.command,
             "timeout": hook.timeout, "source": hook.source} for hook in config.hooks]
    rows.sort(key=lambda row: EVENTS.index(str(row["event"])))
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    if not rows:
        sys.stdout.write("no hooks (settings files: ~/.recursive/settings.json, .claude/settings.json, "
                         ".claude/settings.local.json, .recursive/settings.json, or --settings)\n")
        return 0
    for event in EVENTS:
        mine = [row for row in rows if row["event"] == event]
        if not mine:
            continue
        sys.stdout.write(f"{event}\n")
        for row in mine:
            sys.stdout.write(f"  [{row['matcher']}] {row['command']}  (timeout {row['timeout']:g}s; "
                             f"{row['source']})\n")
    return 0
