"""The in-process runner of tests/clitools.py: `invoke` builds typer's click objects of the
whole tree once, and answers exactly as typer's own CliRunner does on a tree built anew."""

from __future__ import annotations

import pytest
import typer
from clitools import _click_command, invoke
from typer.testing import CliRunner

from recursive_cli.surfaces.cli.app import app


@pytest.mark.parametrize("args", [
    ["--version"],
    ["--help"],
    ["run", "--help"],
    ["sessions", "list"],
    ["sessions", "lst"],
    ["sessions", "show", "no-such-session"],
    ["run", "--max-steps", "0", "x"],
    ["bogus"],
], ids=lambda args: " ".join(args))
def test_invoke_answers_as_typers_runner_on_a_tree_built_anew(args: list[str]) -> None:
    first, again = invoke(*args), invoke(*args)
    fresh = CliRunner().invoke(app, args, catch_exceptions=False)  # (typer builds the tree here)
    assert (first.returncode, first.stdout, first.stderr) == (fresh.exit_code, fresh.stdout, fresh.stderr)
    assert again == first


def test_the_tree_is_built_once_and_anew_when_a_command_is_added() -> None:
    assert _click_command(app) is _click_command(app)
    tree = typer.Typer()

    @tree.command()
    def one() -> None:
        """One."""

    @tree.command()
    def two() -> None:
        """Two."""

    built = _click_command(tree)
    assert _click_command(tree) is built and sorted(built.commands) == ["one", "two"]

    @tree.command()
    def three() -> None:
        """Three."""

    rebuilt = _click_command(tree)
    assert rebuilt is not built and sorted(rebuilt.commands) == ["one", "three", "two"]

