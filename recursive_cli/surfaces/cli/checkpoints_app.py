"""Typer definitions of the `checkpoints` command(s); registered on the main app by `register`."""

from typing import Annotated, Optional

import typer

checkpoints_app = typer.Typer(
    help="Workspace snapshots taken before and after every turn: list, diff, restore.",
    no_args_is_help=True)

SessionArg = Annotated[str, typer.Argument(help="Session id or unique prefix.")]


def register(app: typer.Typer) -> None:
    """Add the `checkpoints` command group to `app`."""
    app.add_typer(checkpoints_app, name="checkpoints")


@checkpoints_app.command("list", epilog="""[b]Examples[/b]

  recursive checkpoints list parser-1

  recursive checkpoints list parser-1 --json | jq '.[] | select(.files_changed > 0) | .turn'
""")
def checkpoints_list(
    session: SessionArg,
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
) -> None:
    """List a session's turns: time, files the session changed, prompt, and whether a restore undid them."""
    from .checkpoints_cmd import list_command

    raise typer.Exit(list_command(session, json_output))


@checkpoints_app.command("diff", epilog="""[b]Examples[/b]

  recursive checkpoints diff parser-1 3

  recursive checkpoints diff parser-1 | less -R
""")
def checkpoints_diff(
    session: SessionArg,
    turn: Annotated[Optional[int], typer.Argument(min=1, help="Turn number; omitted: every turn of the session.", show_default=False)] = None,
) -> None:
    """Show what the session changed in TURN (its file edits and shell commands) as a diff."""
    from .checkpoints_cmd import diff_command

    raise typer.Exit(diff_command(session, turn))


@checkpoints_app.command("restore", epilog="""[b]Examples[/b]

  recursive checkpoints restore parser-1 --turn 3 --dry-run

  recursive checkpoints restore parser-1 --turn 3

  recursive checkpoints restore parser-1 --turn 3 --force && recursive resume parser-1
""")
def checkpoints_restore(
    session: SessionArg,
    turn: Annotated[int, typer.Option("--turn", min=1, help="Go back to before this turn.", show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; change nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files someone else changed, or may have changed, since the session wrote them.")] = False,
) -> None:
    """Put the workspace back as it was before turn N, and the conversation too.

    Only what the session itself did in turns N and later is undone: files its tool calls and
    jobs modified are restored, those they created removed, those they deleted recreated.
    What anyone else changed, even during those turns, is left alone. Refused when a file to
    restore was changed by someone else since the session wrote it, or changed while a shell
    command or job ran (another process may have written it), unless --force.
    """
    from .checkpoints_cmd import restore_command

    raise typer.Exit(restore_command(session, turn, dry_run, force))
