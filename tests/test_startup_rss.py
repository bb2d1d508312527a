"""A process builds only its own command's typer definitions (issue 16, goal 3).

A run registers only its own command's typer definitions (`app.app_for`: `chat`, `fleet`,
`mcp`, `loop`, `goal`, `checkpoints` are not imported). What a user sees must not change: the
same help and the same errors as the whole tree's. (What start-up costs in modules and memory:
tests/test_startup_budget.py.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import invoke
from typer.testing import CliRunner

from recursive_cli.surfaces.cli import app as app_module

PYTHON = sys.executable


def _env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RECURSIVE_")}
    return {**env, "RECURSIVE_HOME": str(home), "RECURSIVE_API_KEY": "sk-test"}


def test_the_lazy_names_are_what_each_module_registers() -> None:
    import importlib

    import typer

    from recursive_cli.surfaces.cli.narrow import command_names

    for name, module in app_module.LAZY_COMMANDS.items():
        blank = typer.Typer()
        importlib.import_module(module).register(blank)
        assert list(command_names(blank) or {}) == [name], module
    # the whole tree has them all (its order is the one README, man and completions record:
    # tests/test_docs_sync.py)
    assert set(app_module.LAZY_COMMANDS) <= set(command_names(app_module.app) or {})


@pytest.mark.parametrize("args", [
    ["chat", "--help"],
    ["fleet", "--help"],
    ["fleet", "run", "--help"],
    ["fleet", "status", "--bogus"],
    ["mcp", "--help"],
    ["mcp"],
    ["hooks", "list", "--help"],
    ["loop", "--help"],
    ["loop", "--max-iterations", "0", "x"],
    ["goal", "--help"],
    ["goal", "--max-turns", "zero", "x"],
    ["checkpoints", "--help"],
    ["checkpoints", "diff"],
    ["run", "--help"],
    ["sessions", "lst"],
    ["--help"],
    ["bogus"],
    ["chta"],
], ids=lambda args: " ".join(args))
def test_the_tree_a_process_runs_answers_as_the_whole_one(args: list[str], workspace: Path) -> None:
    tree = app_module.app_for(args)
    if args[0] in app_module.LAZY_COMMANDS:
        assert len(tree.registered_commands) + len(tree.registered_groups) == 1
    whole = invoke(*args)  # the whole tree (built once for the session: see clitools)
    alone = CliRunner().invoke(tree, args, catch_exceptions=False)
    assert (alone.exit_code, alone.stdout, alone.stderr) == (whole.returncode, whole.stdout, whole.stderr)


def test_a_lazy_command_registered_alone_leaves_the_whole_tree_as_it_was() -> None:
    before = [info.name for info in app_module.app.registered_groups]
    app_module.app_for(["mcp", "list"])
    app_module.app_for(["chat"])
    assert [info.name for info in app_module.app.registered_groups] == before
    assert app_module.app is app_module.app  # built once


def test_recursive_help_still_lists_every_command(tmp_path: Path) -> None:
    proc = subprocess.run([PYTHON, "-m", "recursive_cli", "--help"], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path / "home"), stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    for name in ("run", "resume", "sessions", "tools", "config", *app_module.LAZY_COMMANDS):
        assert f" {name} " in proc.stdout, name
