"""Typer definitions of the `goal` command(s); registered on the main app by `register`."""

from typing import Annotated, Optional

import typer

from ...launch.options import CommonOptions, RunOptions, with_common_options, with_run_options

GOAL = "Goal"


def register(app: typer.Typer) -> None:
    """Add the `goal` command to `app`."""
    app.command(epilog="""[b]Examples[/b]

  recursive goal "make the test suite pass" --check "pytest -q" --max-turns 8

  recursive goal "migrate the config loader to tomllib" --until "no module imports toml" --check "! grep -rn 'import toml$' src" --max-cost 3 -o json

  recursive goal "document every public function" --until "every public function in src/ has a docstring" --judge-model gpt-4.1
""")(goal)


@with_common_options
@with_run_options()
def goal(
    prompt: Annotated[Optional[list[str]], typer.Argument(metavar="PROMPT", help="The task. '-' or none reads stdin; piped stdin is appended to it (unless --no-stdin).", show_default=False)] = None,
    until: Annotated[Optional[str], typer.Option("--until", metavar="CONDITION", help="Condition a judge model must agree holds after a turn.", rich_help_panel=GOAL)] = None,
    check: Annotated[Optional[list[str]], typer.Option("--check", metavar="CMD", help="Shell command that must exit 0 after a turn (repeatable).", rich_help_panel=GOAL)] = None,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model", metavar="MODEL", help="Model for the judge (default: the run's model).", rich_help_panel=GOAL)] = None,
    max_turns: Annotated[int, typer.Option("--max-turns", min=1, metavar="N", help="Give up after this many turns, 1 or more (exit 4).", rich_help_panel=GOAL)] = 10,
    check_timeout: Annotated[str, typer.Option("--check-timeout", metavar="SECONDS", help="Kill a check after this long, e.g. 90, 90s, 5m.", rich_help_panel=GOAL)] = "600",
    *,
    run_options: RunOptions,
    common: CommonOptions,
) -> None:
    """Run turns until the goal holds: every --check passes and the judge agrees --until holds."""
    from .goal_cmd import GoalRequest, goal_command

    request = GoalRequest(words=prompt or [], until=until, checks=check or [], judge_model=judge_model,
                          max_turns=max_turns, check_timeout=check_timeout)
    raise typer.Exit(goal_command(common, request, run_options))

