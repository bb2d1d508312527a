"""The `recursive` command: typer definitions only; each command imports its work lazily."""

from typing import Annotated, Optional

import typer

from .. import __version__
from .options import CommonOptions, with_common_options

app = typer.Typer(
    name="recursive",
    help="A coding agent for the shell: runs an LLM through tool calls in your workspace.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"recursive {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = False,
) -> None:
    """A coding agent for the shell: runs an LLM through tool calls in your workspace."""


@app.command(epilog="""[b]Examples[/b]

  recursive run "add a docstring to utils.py"

  git diff | recursive run "review this diff" -o json

  recursive run "fix the tests" -o stream-json | jq .
""")
@with_common_options
def run(
    prompt: Annotated[Optional[list[str]], typer.Argument(help="The task. '-' or none reads stdin.", show_default=False)] = None,
    *,
    common: CommonOptions,
) -> None:
    """Run one turn of the agent on PROMPT and print the answer."""
    from .run_cmd import run_command

    raise typer.Exit(run_command(common, prompt or []))


@app.command(epilog="""[b]Examples[/b]

  recursive tools

  recursive tools --json | jq -r '.[].name'
""")
@with_common_options
def tools(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    *,
    common: CommonOptions,
) -> None:
    """List the tools the agent would get with these options. Needs no API key."""
    from .tools_cmd import tools_command

    raise typer.Exit(tools_command(common, json_output))


def main() -> None:
    """Console-script entry point."""
    from . import lazy_markdown
    from .errors import run_app

    lazy_markdown.install()
    run_app(app)
