"""The settings no flag sets are told where `config show` lists them (issue 32): what each
does, its default and its variable, in `recursive config show --help`, the man page and
docs/configuration.md, all from core/config_keys.py; and that table is true to the settings."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main
from clitools import invoke

from recursive_cli.core.config_keys import CONFIG_ONLY
from recursive_cli.core.settings import CONFIG_KEYS, ENV_VARS, default_of
from recursive_cli.surfaces.cli.app import app

ROOT = Path(__file__).resolve().parent.parent


def _flags() -> set[str]:
    """Every long option of every command."""
    found: set[str] = set()

    def walk(command: object) -> None:
        for param in getattr(command, "params", ()):
            found.update(opt for opt in param.opts if opt.startswith("--"))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return found


def _words(text: str) -> str:
    """`text` with its whitespace (line breaks, the help's box) as single spaces."""
    return " ".join(text.replace("│", " ").split())


def test_every_setting_without_a_flag_is_in_the_table_and_true_to_the_settings() -> None:
    flags = _flags()
    keys = {key.key for key in CONFIG_ONLY}
    flagless = {name.replace("_", "-") for name in CONFIG_KEYS if "--" + name.replace("_", "-") not in flags}
    assert flagless <= keys, f"say what these do in core/config_keys.py: {sorted(flagless - keys)}"
    for key in CONFIG_ONLY:
        name = key.key.replace("-", "_")
        assert name in CONFIG_KEYS, key.key
        assert key.variable == ENV_VARS.get(name, ""), key.key
    defaults = {key.key: key.default for key in CONFIG_ONLY}
    assert defaults["shell-timeout"] == f"{default_of('shell_timeout'):g}"
    assert defaults["allow-private-network"] == str(default_of("allow_private_network")).lower()


def test_config_show_lists_them_and_its_help_says_what_they_are() -> None:
    shown = invoke("config", "show")
    assert shown.returncode == 0
    listed = {line.split("\t")[0] for line in shown.stdout.splitlines()}
    assert {key.key for key in CONFIG_ONLY} - {"prices"} <= listed  # (prices: the `price` row)
    helped = invoke("config", "show", "--help", env={"COLUMNS": "100"})
    assert helped.returncode == 0
    for key in CONFIG_ONLY:
        assert _words(key.line()) in _words(helped.stdout), key.key
    assert "Default: 120. Variable: none (config files only)." in _words(helped.stdout)


def test_the_man_page_and_the_docs_say_the_same() -> None:
    man = (ROOT / "man" / "recursive.1").read_text(encoding="utf-8")
    section = man.split('.SH "CONFIGURATION KEYS"', 1)[1].split(".SH", 1)[0]
    plain = re.sub(r"\\f[BIR]|\\%", "", section).replace("\\-", "-").replace("\\(ga", "`").replace("\\(aq", "'")
    for key in CONFIG_ONLY:
        assert f"\n{key.key}\n" in plain, key.key
        shown = _words(plain.replace("\\(dq", '"'))
        assert f"Default: {key.default.replace('`', '')}." in shown, key.key  # (`code` is set in bold)
    docs = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for key in CONFIG_ONLY:
        variable = f"`{key.variable}`" if key.variable else "none"
        assert f"| `{key.key}` | {key.does} | {key.default} | {variable} |" in docs, key.key
