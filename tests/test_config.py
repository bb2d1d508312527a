"""Settings precedence, `config show` sources and masking, and clear config-file errors."""

from __future__ import annotations

import json
from pathlib import Path

from clitools import invoke


def show(*args: str, env: dict[str, str] | None = None) -> dict:
    proc = invoke("config", "show", "--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_sources_in_precedence_order(workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_text('model = "from-user"\nmax-steps = 7\nmax-cost = 2.5\n')
    (workspace / ".recursive").mkdir()
    (workspace / ".recursive" / "config.toml").write_text('max-steps = 9\npermission-mode = "read-only"\n')
    data = show("-C", str(workspace), "--max-cost", "1", "--trust-workspace", env={"RECURSIVE_MODEL": "from-env"})
    assert data["model"] == {"value": "from-env", "source": "env RECURSIVE_MODEL"}
    assert data["max-steps"]["value"] == "9"
    assert data["max-steps"]["source"] == f"project config {workspace / '.recursive' / 'config.toml'}:1"
    assert data["permission-mode"]["value"] == "read-only"
    assert data["max-cost"] == {"value": "1.0", "source": "flag"}
    assert data["provider"] == {"value": "openai", "source": "default"}


def test_api_key_is_masked(workspace: Path) -> None:
    secret = "sk-live-abcdefghijklmnop1234"
    proc = invoke("config", "show", "-C", str(workspace), env={"OPENAI_API_KEY": secret})
    assert secret not in proc.stdout
    assert "sk-…1234\tenv OPENAI_API_KEY" in proc.stdout


def test_unknown_key_names_file_and_line(workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    config = isolated_home / "config.toml"
    config.write_text('model = "x"\n\nmax_stepz = 3\n')
    proc = invoke("config", "show", "--strict-config")
    assert proc.returncode == 1
    assert proc.stderr == f"error: {config}:3: unknown key 'max_stepz'\n"


def test_unknown_key_is_a_warning_without_strict_config(workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    config = isolated_home / "config.toml"
    config.write_text('model = "x"\n\nmax_stepz = 3\n')
    proc = invoke("config", "show", "--json")
    assert proc.returncode == 0
    assert proc.stderr == (f"warning: {config}:3: unknown key 'max_stepz' (ignored; --strict-config makes "
                           "it an error)\n")
    assert json.loads(proc.stdout)["model"]["value"] == "x"


def test_bad_value_names_file_line_and_key(workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    config = isolated_home / "config.toml"
    config.write_text('max-steps = "many"\n')
    proc = invoke("run", "x", "-C", str(workspace))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: invalid value for max-steps (user config {config}:1)")


def test_config_path_lists_both_files(workspace: Path, isolated_home: Path) -> None:
    proc = invoke("config", "path", "-C", str(workspace))
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert lines == [["user", str(isolated_home / "config.toml"), "absent"],
                     ["project", str(workspace.resolve() / ".recursive" / "config.toml"), "absent"]]
