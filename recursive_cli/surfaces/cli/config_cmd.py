"""`recursive config show|path`: the effective settings and where each came from."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ...core.errors import BadValueError, ConfigError
from ...core.pricing import configured_key, price_for
from ...core.settings import LoadedSettings, Settings, load_settings
from .errors import EXIT_ERROR, EXIT_USAGE, fail
from .options import CommonOptions


def load_or_fail(common: CommonOptions) -> LoadedSettings | int:
    """The settings of a command with `common` options; or the exit code of the error, already
    reported: 2 for a value malformed in itself (BadValueError: a bad base URL, wherever it was
    set), 1 for any other configuration error (SPEC §4: broken config)."""
    try:
        return load_settings(common.as_flags())
    except ConfigError as exc:
        return fail(str(exc), EXIT_USAGE if isinstance(exc, BadValueError) else EXIT_ERROR)


def mask(secret: str) -> str:
    """`sk-…b3f1`: enough to tell keys apart, never enough to use one."""
    return "…" if len(secret) < 12 else f"{secret[:3]}…{secret[-4:]}"


def config_rows(loaded: LoadedSettings) -> list[tuple[str, str, str]]:
    """(key, value, source) for every setting; the API key masked."""
    data = loaded.settings.model_dump(mode="json")
    rows: list[tuple[str, str, str]] = [("model", loaded.settings.effective_model, loaded.sources.get("model", "default (provider's)")),
                                        price_row(loaded)]
    for key in Settings.model_fields:
        if key in ("model", "api_key", "prices"):
            continue
        rows.append((key.replace("_", "-"), _text(data[key]), loaded.sources.get(key, "default")))
    api_key = loaded.settings.api_key
    rows.append(("api-key", mask(api_key) if api_key else "(not set)", loaded.sources.get("api_key", "-")))
    return rows


def price_row(loaded: LoadedSettings) -> tuple[str, str, str]:
    """The price in force for the current model and where it comes from: a `[prices."MODEL"]`
    table in a config file, the bundled table, or nowhere (cost unknown, `--max-cost` refused)."""
    model, configured = loaded.settings.effective_model, loaded.settings.prices
    price = price_for(model, configured)
    if price is None:
        return ("price", "(unknown)", "unknown")
    key = configured_key(model, configured)
    source = "builtin table" if key is None else loaded.sources.get(f"prices.{key}", "config")
    return ("price", price.describe(), source)


def _text(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "(none)"
    return str(value).lower() if isinstance(value, bool) else str(value)


def show_command(common: CommonOptions, as_json: bool) -> int:
    """Print the effective settings with their sources (a table on a TTY, tab-separated piped)."""
    loaded = load_or_fail(common)
    if isinstance(loaded, int):
        return loaded
    rows = config_rows(loaded)
    if as_json:
        data = {key: {"value": value, "source": source} for key, value, source in rows}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table("setting", "value", "source", box=None)
        for row in rows:
            table.add_row(*row)
        Console().print(table)
    else:
        sys.stdout.writelines("\t".join(row) + "\n" for row in rows)
    return 0


def path_command(common: CommonOptions) -> int:
    """Print the config files that are read, in order of precedence (lowest first)."""
    import os

    from ...core.settings import recursive_home

    home = recursive_home(os.environ)
    workspace = (common.workspace or Path.cwd()).expanduser().resolve()
    for label, path in (("user", home / "config.toml"),
                        ("project", workspace / ".recursive" / "config.toml")):
        state = "exists" if path.exists() else "absent"
        sys.stdout.write(f"{label}\t{path}\t{state}\n")
    return 0
