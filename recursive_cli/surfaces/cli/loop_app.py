"""Typer definitions of the `loop` command(s); registered on the main app by `register`."""

from typing import Annotated, Optional

import typer

from ...launch.options import BUDGETS, CommonOptions, RunOptions, with_common_options, with_run_options

EPILOG = """[b]Examples[/b]

  recursive loop "keep the nightly benchmark green; investigate any regression" --max-iterations 50 --max-duration 8h --max-cost 5

  recursive loop "run the full test suite in the background and fix what fails" -o stream-json

  recursive resume nightly-1
"""


def register(app: typer.Typer) -> None:
    """Add the `loop` command(s) to `app`."""
    app.command(epilog=EPILOG)(loop)


@with_common_options
@with_run_options()
def loop(
    prompt: Annotated[Optional[list[str]], typer.Argument(metavar="PROMPT", help="The task. '-' or none reads stdin; piped stdin is appended to it (unless --no-stdin).", show_default=False)] = None,
    max_iterations: Annotated[int, typer.Option("--max-iterations", min=1, metavar="N", help="Turns for the whole loop, 1 or more.", rich_help_panel=BUDGETS)] = 100,
    max_context_tokens: Annotated[Optional[int], typer.Option("--max-context-tokens", min=1000, metavar="N", help="Compact the conversation as it nears this many tokens, 1000 or more (default: the model's context window).", rich_help_panel=BUDGETS, show_default=False)] = None,
    *,
    run_options: RunOptions,
    common: CommonOptions,
) -> None:
    """Work autonomously: wake up when scheduled, react to finished background jobs, stop when done.

    After each turn the loop sleeps for the wakeup the agent scheduled, or runs a turn per
    finished background job, until the agent calls stop_loop or nothing is pending.
    """
    from .loop_cmd import loop_command

    raise typer.Exit(loop_command(common, prompt or [], max_iterations, max_context_tokens, run_options))
