"""`recursive config show|path`: the effective settings and where each came from, the MCP
servers in force (read from their files and flags, never started) and the command hooks in
force with their source (the settings files and `--settings`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import CliError
from ...core.pricing import configured_key, price_for
from ...core.settings import FIELDS, LoadedSettings
from ...core.values import as_json
from ...launch.errors import config_code
from ...launch.options import CommonOptions, McpOptions
from ...launch.settings import command_settings

if TYPE_CHECKING:
    from ...features.hooks import HookConfig
    from ...features.mcp.config import McpConfig, ServerEntry


def mask(secret: str) -> str:
    """`sk-…b3f1`: enough to tell keys apart, never enough to use one."""
    return "…" if len(secret) < 12 else f"{secret[:3]}…{secret[-4:]}"


def config_rows(loaded: LoadedSettings) -> list[tuple[str, str, str]]:
    """(key, value, source) for every setting; the API key masked; the MCP start-up timeout
    in force, whatever set it (`load_mcp_or_fail` has checked Claude's `MCP_TIMEOUT`)."""
    data = as_json(loaded.settings)
    rows: list[tuple[str, str, str]] = [model_row(loaded), price_row(loaded)]
    for key in FIELDS:
        if key in ("model", "api_key", "prices"):
            continue
        if key == "mcp_timeout":
            rows.append(mcp_timeout_row(loaded))
            continue
        if key == "sandbox":
            rows.append(sandbox_row(loaded))
            continue
        rows.append((key.replace("_", "-"), _text(data[key]), loaded.sources.get(key, "default")))
    api_key = loaded.settings.api_key
    rows.append(("api-key", mask(api_key) if api_key else "(not set)", loaded.sources.get("api_key", "-")))
    return rows


def model_row(loaded: LoadedSettings) -> tuple[str, str, str]:
    """The model and where it comes from; with a server's base URL and none given, the one
    the server serves, asked when a command starts (launch/served_model.py)."""
    from ...launch.served_model import asks_server

    if asks_server(loaded):
        return ("model", "(the one the server serves, asked at start)", "default (the server's /v1/models)")
    return ("model", loaded.settings.effective_model, loaded.sources.get("model", "default (provider's)"))


def sandbox_row(loaded: LoadedSettings) -> tuple[str, str, str]:
    """The command sandbox in force, what it lets commands do, or why it cannot start here."""
    from ...core.errors import SandboxUnavailableError
    from ...tools.os_sandbox import command_sandbox

    settings = loaded.settings
    workspace = settings.workspace.expanduser().resolve()
    source = loaded.sources.get("sandbox", "default (by the permission mode)")
    try:
        sandbox = command_sandbox(settings.sandbox_mode, workspace, [p.expanduser().resolve() for p in settings.add_dir],
                                  protected=[loaded.home], network=settings.sandbox_network,
                                  ports=settings.sandbox_allow_ports)
    except SandboxUnavailableError as exc:
        return ("sandbox", f"{settings.sandbox_mode}, which cannot start here: {exc}", source)
    layers = " (bubblewrap + Landlock)" if sandbox.landlock else " (bubblewrap)" if sandbox.confined else ""
    return ("sandbox", sandbox.describe() + layers, source)


def price_row(loaded: LoadedSettings) -> tuple[str, str, str]:
    """The price in force for the current model and where it comes from: a `[prices."MODEL"]`
    table in a config file, the bundled table, or nowhere (cost unknown, `--max-cost` refused)."""
    from ...launch.served_model import asks_server

    if asks_server(loaded):
        return ("price", "(the served model's, once it is known)", "-")
    model, configured = loaded.settings.effective_model, loaded.settings.prices
    price = price_for(model, configured)
    if price is None:
        return ("price", "(unknown)", "unknown")
    key = configured_key(model, configured)
    source = "builtin table" if key is None else loaded.sources.get(f"prices.{key}", "config")
    return ("price", price.describe(), source)


def mcp_timeout_row(loaded: LoadedSettings) -> tuple[str, str, str]:
    """The MCP start-up timeout in force: the `mcp-timeout` setting (flag, env, config file),
    else Claude's `MCP_TIMEOUT` (ms), else the default."""
    from ...features.mcp.config import start_timeout_from

    configured = loaded.settings.mcp_timeout
    seconds, source = start_timeout_from(loaded.env, configured)
    return ("mcp-timeout", _text(seconds), loaded.sources.get("mcp_timeout", source) if configured is not None else source)


def load_mcp_or_fail(loaded: LoadedSettings, options: McpOptions) -> McpConfig:
    """The MCP servers these settings and flags configure (not started); or the exit code of a
    malformed configuration (2), already reported, as `run` reports it."""
    from ...features.mcp.config import McpConfigError, load_mcp_config
    from ...features.trust import verdict_for

    workspace = loaded.settings.workspace.expanduser().resolve()
    try:
        return load_mcp_config(workspace, loaded.home, options.mcp_config or [], options.strict_mcp_config,
                               loaded.env, loaded.settings.mcp_timeout, user=not loaded.settings.bare,
                               project=verdict_for(loaded, workspace).trusted)
    except McpConfigError as exc:
        raise CliError(str(exc), config_code(exc)) from None


def server_view(entry: ServerEntry) -> dict[str, Any]:
    """One server as `config show --json` shows it: as written in its source (no `${VAR}`
    expanded, so no secret from the environment), env and header values written literally
    masked (they are often tokens), its origin, and why it cannot start if it cannot."""
    from ...features.mcp.config import as_written, has_variable

    view: dict[str, Any] = {"name": entry.name, **as_written(entry)}
    for table in ("env", "headers"):  # a `${VAR}` template as written; a literal value masked
        if isinstance(view.get(table), dict):
            view[table] = {key: value if has_variable(value) else mask(value) for key, value in view[table].items()}
    view["origin"] = entry.origin
    if entry.problem:
        view["problem"] = entry.problem
    return view


def server_row(view: dict[str, Any]) -> tuple[str, str, str]:
    """(`mcp.NAME`, what starts it, origin) for the text table."""
    import shlex

    if view["transport"] == "stdio":
        parts = [f"stdio: {shlex.join([str(view.get('command', '')), *map(str, view.get('args', []))])}"]
        table = "env"
    else:
        parts = [f"{view['transport']}: {view['url']}" if view.get("url") else view["transport"]]
        table = "headers"
    if view.get(table):
        parts.append(f"{table}: " + ", ".join(f"{key}={value}" for key, value in view[table].items()))
    if view.get("cwd"):
        parts.append(f"cwd: {view['cwd']}")
    if view.get("problem"):
        parts.append(f"cannot start: {view['problem']}")
    return (f"mcp.{view['name']}", "; ".join(parts), view["origin"])


def trust_view(loaded: LoadedSettings) -> tuple[dict[str, Any], list[str]]:
    """Whether the workspace's own configuration counts (trusted, why, its config files),
    and what of it is left out, one line per hook, MCP server and config key."""
    from ...features.trust import verdict_for, workspace_offer

    verdict = verdict_for(loaded, loaded.settings.workspace.expanduser())
    view = {"trusted": verdict.trusted, "reason": verdict.reason, "files": list(verdict.files)}
    if not verdict.skips:
        return view, []
    return view, workspace_offer(verdict.workspace, loaded.home, loaded.env, loaded.held).lines()


def hook_views(config: HookConfig) -> list[dict[str, Any]]:
    """The hooks in force as `config show --json` shows them, event by event (in the order
    they fire), each in the order its sources were read."""
    from ...features.hooks.config import EVENTS

    views = [{"event": hook.event, "matcher": hook.matcher or "*", "command": hook.command,
              "timeout": hook.timeout, "source": hook.source} for hook in config.hooks]
    return sorted(views, key=lambda view: EVENTS.index(str(view["event"])))


def hook_row(view: dict[str, Any]) -> tuple[str, str, str]:
    """(`hooks.EVENT[MATCHER]`, the command and its timeout, the file or flag) for the text table."""
    return (f"hooks.{view['event']}[{view['matcher']}]", f"{view['command']} (timeout {view['timeout']:g}s)",
            str(view["source"]))


def _text(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "(none)"
    return str(value).lower() if isinstance(value, bool) else str(value)


def show_command(common: CommonOptions, as_json: bool, mcp_options: McpOptions | None = None,
                 settings: list[str] | None = None) -> int:
    """Print the effective settings with their sources (a table on a TTY, tab-separated piped),
    then the MCP servers in force with their origins, then the command hooks with their sources
    (`settings`: the `--settings FILE|JSON` values, read after the settings files)."""
    from ...launch.settings import command_hooks

    loaded = command_settings(common)
    mcp = load_mcp_or_fail(loaded, mcp_options or McpOptions())
    hooks = command_hooks(loaded, settings or [])
    rows = config_rows(loaded)
    servers = [server_view(entry) for entry in mcp.servers.values()]
    hooked = hook_views(hooks)
    trust, skipped = trust_view(loaded)
    if as_json:
        data: dict[str, Any] = {key: {"value": value, "source": source} for key, value, source in rows}
        origins = ", ".join(dict.fromkeys(view["origin"] for view in servers)) or "-"  # (in the servers' order)
        data["mcp-servers"] = {"value": servers, "source": origins}
        sources = ", ".join(dict.fromkeys(str(view["source"]) for view in hooked)) or "-"
        data["hooks"] = {"value": hooked, "source": sources}
        data["workspace-trust"] = {"value": trust, "source": trust["reason"]}
        data["skipped"] = {"value": skipped, "source": trust["reason"] if skipped else "-"}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    rows += [server_row(view) for view in servers] or [("mcp-servers", "(none)", "-")]
    rows += [hook_row(view) for view in hooked] or [("hooks", "(none)", "-")]
    rows.append(("workspace-trust", "trusted" if trust["trusted"] else "not trusted", trust["reason"]))
    rows += [("skipped", line, trust["reason"]) for line in skipped]
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table("setting", "value", "source", box=None)
        for row in rows:
            table.add_row(*map(Text, row))  # (as written: `[x]` in an argument is no markup)
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
