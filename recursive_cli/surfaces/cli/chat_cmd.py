"""Typer definition of the `chat` command (the interactive session); registered by `register`."""

from typing import Annotated, Optional

import typer

from ...launch.options import (
    HOOKS,
    INPUT,
    CommonOptions,
    ImageFlag,
    McpOptions,
    RunOptions,
    WorktreeFlag,
    with_common_options,
    with_mcp_options,
)

EPILOG = """[b]Examples[/b]

  recursive

  recursive chat "look at the failing test in tests/test_parser.py"

  recursive chat -c

  recursive chat -m gpt-4.1 --permission-mode ask
"""


def register(app: typer.Typer) -> None:
    """Add the `chat` command to `app`."""
    app.command(epilog=EPILOG)(chat)


@with_common_options
@with_mcp_options
def chat(
    prompt: Annotated[Optional[list[str]], typer.Argument(metavar="PROMPT", help="The first message (optional).", show_default=False)] = None,
    continue_session: Annotated[bool, typer.Option("--continue", "-c", help="Continue this workspace's latest session, with its conversation and settings.", rich_help_panel=INPUT)] = False,
    image: ImageFlag = None,
    settings: Annotated[Optional[list[str]], typer.Option("--settings", metavar="FILE|JSON", help="Settings in Claude Code's format, a file or JSON text (repeatable): their hooks run with those of ~/.recursive/settings.json, .claude/settings.json and .recursive/settings.json.", rich_help_panel=HOOKS)] = None,
    worktree: WorktreeFlag = None,
    *,
    mcp_options: McpOptions,
    common: CommonOptions,
) -> None:
    """Talk with the agent on this terminal: an interactive session in the workspace.

    `recursive` alone on a terminal opens one too. Type a message and press Enter; /help lists the slash commands (/model, /undo, /diff, /goal, /resume…). Needs a terminal: stdin and stdout.
    """
    from ..chat.start import chat_command

    options = RunOptions(continue_session=continue_session, mcp_config=mcp_options.mcp_config,
                         strict_mcp_config=mcp_options.strict_mcp_config, settings=settings,
                         image=image, worktree=worktree)
    raise typer.Exit(chat_command(common, prompt or [], options))
