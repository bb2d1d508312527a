"""Start-up of the CLI itself (issue 16): a command builds only what it uses.

typer builds the click objects of the command run only (`surfaces/cli/narrow.py`), and a
pydantic TypeAdapter only for a parameter given a value (`usage.py`, with typer 0.29, which
pyproject.toml keeps out: 0.28 builds none); the events are plain dataclasses. What a user sees must not change: the narrowed
tree answers every command line as the whole one does, a config file is still read and
stream-json still written. (Which and how many modules a command loads:
tests/test_startup_budget.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, json_lines, write_script
from typer.testing import CliRunner

from recursive_cli.surfaces.cli.app import app
from recursive_cli.surfaces.cli.narrow import narrowed

PYTHON = sys.executable


@pytest.mark.parametrize("args", [
    ["--version"],
    ["run", "--help"],
    ["resume", "--help"],
    ["sessions"],
    ["sessions", "--help"],
    ["sessions", "lst"],
    ["sessions", "gc", "--older-than", "soon"],
    ["checkpoints", "--help"],
    ["fleet", "run", "--help"],
    ["hooks", "--help"],
    ["run", "--max-steps", "0", "x"],
    ["run", "-o", "jsn", "x"],
    ["run", "--provider", "nope", "x"],
    ["run", "--max-cost", "-1", "x"],
    ["run", "--bogus", "x"],
    ["run", "--max-steps"],
    ["goal", "--max-turns", "zero", "x"],
    ["config", "path"],
    ["bogus"],
    ["--bogus"],
], ids=lambda args: " ".join(args))
def test_the_narrowed_tree_answers_every_command_line_as_the_whole_one(args: list[str], workspace: Path) -> None:
    narrow = narrowed(app, args)
    if args[0] in ("run", "resume", "sessions", "checkpoints", "fleet", "hooks", "goal", "config"):
        assert narrow is not app and len(narrow.registered_commands) + len(narrow.registered_groups) == 1
    else:
        assert narrow is app  # no command word (or an unknown one): the whole tree, its list and its hints
    whole = invoke(*args)  # the whole tree (built once for the session: see clitools)
    narrowed_result = CliRunner().invoke(narrow, args, catch_exceptions=False)
    assert (narrowed_result.exit_code, narrowed_result.stdout, narrowed_result.stderr) == (
        whole.returncode, whole.stdout, whole.stderr)


def test_the_command_tree_is_the_whole_one_without_a_command_word() -> None:
    assert narrowed(app, []) is app
    assert narrowed(app, ["-m", "gpt-4.1", "chat"]) is app


OBSERVE = """
    import atexit, json, sys
    import typer.main
    built, adapters = [], []
    make_command = typer.main.get_command_from_info

    def get_command_from_info(command_info, **kwargs):
        command = make_command(command_info, **kwargs)
        built.append(command.name)
        return command

    typer.main.get_command_from_info = get_command_from_info
    try:  # typer 0.29's coercion layer (a pydantic TypeAdapter per value); 0.28 has none
        import typer._adapters
    except ImportError:
        pass
    else:
        make_adapter = typer._adapters.try_build_adapter

        def try_build_adapter(annotation, parameter_info):
            adapters.append(repr(annotation))
            return make_adapter(annotation, parameter_info)

        typer._adapters.try_build_adapter = try_build_adapter
    def report():
        seen = {"built": built, "adapters": len(adapters)}
        sys.__stderr__.write("OBSERVED " + json.dumps(seen) + "\\n")

    atexit.register(report)  # (the CLI is this program: it ends it with the atexit handlers run)
    from recursive_cli.surfaces.cli.app import main
    sys.argv = ["recursive", *json.loads(sys.argv[1])]
    main()
"""


def observe(args: list[str], cwd: Path, home: Path) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run the CLI's `main` with `args` in a fresh interpreter; what it built and imported."""
    proc = subprocess.run([PYTHON, "-c", textwrap.dedent(OBSERVE), json.dumps(args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**_env(), "RECURSIVE_HOME": str(home)}, check=False)
    line = next((line for line in proc.stderr.splitlines() if line.startswith("OBSERVED ")), None)
    assert line is not None, proc.stderr
    return {**json.loads(line.removeprefix("OBSERVED ")), "code": proc.returncode}, proc


def _env() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if not key.startswith("RECURSIVE_")}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return write_script(tmp_path / "script.json", [{"text": "all done"}])


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """`recursive run --provider scripted --script S -C WS "say done"` in a fresh interpreter,
    observed once: what it built."""
    root = tmp_path_factory.mktemp("plain-run")
    workspace = root / "ws"
    workspace.mkdir()
    script = write_script(root / "script.json", [{"text": "all done"}])
    return observe(["run", "--provider", "scripted", "--script", str(script), "-C", str(workspace),
                    "say done"], workspace, root / "home")


def test_a_run_builds_its_own_command_only_and_adapters_for_the_values_given(
        plain_run: tuple[dict[str, Any], subprocess.CompletedProcess[str]]) -> None:
    seen, proc = plain_run
    assert seen["code"] == 0 and proc.stdout == "all done\n"
    assert seen["built"] == ["run"]  # not the other 20 commands of the tree
    # --provider, --script, -C and the prompt: 4 of the 22 parameters of `run` have values
    assert seen["adapters"] <= 5


def test_a_config_file_is_still_read_and_stream_json_still_written(
        tmp_path: Path, workspace: Path, script: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('model = "from-config"\n', encoding="utf-8")
    seen, proc = observe(["run", "--provider", "scripted", "--script", str(script), "-C", str(workspace),
                          "-o", "stream-json", "say done"], workspace, home)
    assert seen["code"] == 0, proc.stderr
    lines = json_lines(proc.stdout)
    assert lines[0]["type"] == "system" and lines[0]["model"] == "from-config"
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "all done"


def test_a_value_given_is_still_checked_by_typer(tmp_path: Path, workspace: Path) -> None:
    seen, proc = observe(["run", "--max-steps", "0", "-C", str(workspace), "x"], workspace, tmp_path / "home")
    assert seen["code"] == 2
    assert "error: --max-steps: expected a whole number of at least 1 (got '0')" in proc.stderr


def test_events_are_plain_dataclasses_dumped_as_the_models_were() -> None:
    proc = subprocess.run([PYTHON, "-c", textwrap.dedent("""
        import sys
        from recursive_cli.core import event_models, events, values
        event = events.TurnStarted(turn=1, prompt="hi")
        print(values.dumps(event))
        check = event_models.CheckResult(command="true", exit_code=0)
        print(values.as_json(check))
        print("pydantic" in sys.modules)
    """)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        '{"type":"turn_started","turn":1,"prompt":"hi"}',
        "{'command': 'true', 'exit_code': 0, 'timed_out': False, 'duration_s': 0.0, 'output_tail': '', 'passed': True}",
        "False",
    ]
