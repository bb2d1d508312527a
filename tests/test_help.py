"""Every command's --help has a one-line summary and real examples; rare options are grouped."""

from __future__ import annotations

import typer.main
from clitools import invoke

from recursive_cli.surfaces.cli.app import app


def command_paths() -> list[list[str]]:
    """Every leaf command as its words, e.g. ['sessions', 'list']."""
    paths: list[list[str]] = []

    def walk(command, prefix: list[str]) -> None:  # type: ignore[no-untyped-def]
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, [*prefix, name])
        else:
            paths.append(prefix)

    walk(typer.main.get_command(app), [])
    return paths


def test_every_command_has_summary_and_examples() -> None:
    paths = command_paths()
    assert ["run"] in paths and ["sessions", "gc"] in paths
    for words in paths:
        proc = invoke(*words, "--help", env={"COLUMNS": "120", "NO_COLOR": "1"})
        assert proc.returncode == 0, words
        assert "Examples" in proc.stdout, f"{' '.join(words)} --help has no examples"
        examples = [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("recursive ")]
        assert 2 <= len(examples) <= 4, (words, examples)
        assert any(line.startswith(f"recursive {' '.join(words)}") for line in examples), (words, examples)


def test_rare_options_are_under_advanced() -> None:
    proc = invoke("run", "--help", env={"COLUMNS": "120", "NO_COLOR": "1"})
    advanced = proc.stdout.split("Advanced", 1)[1].split("╰", 1)[0]
    for option in ("--session-id", "--no-stream", "--system-prompt", "--script"):
        assert option in advanced
