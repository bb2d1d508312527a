"""`recursive mcp list` and `recursive mcp get NAME`: the configured MCP servers, checked by
starting them; and the helper `recursive tools` uses to list their tools.

The typer definitions are here too (registered by `register`); the work imports the MCP
feature only when a command runs, so `--help` stays light.
"""

import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ...core.errors import CliError
from ...launch.errors import EXIT_USAGE, config_code
from ...launch.options import CommonOptions, McpOptions, with_common_options, with_mcp_options

if TYPE_CHECKING:
    from ...core.settings import LoadedSettings

mcp_app = typer.Typer(help="The MCP servers the agent gets tools from: check them, see their tools.",
                      no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the `mcp` command group to `app`."""
    app.add_typer(mcp_app, name="mcp")


@mcp_app.command("list", epilog="""[b]Examples[/b]

  recursive mcp list

  recursive mcp list --mcp-config servers.json --json | jq -r '.[] | select(.status != "connected") | .name'
""")
@with_common_options
@with_mcp_options
def mcp_list(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    *,
    mcp_options: McpOptions,
    common: CommonOptions,
) -> None:
    """Start each configured MCP server and show its source, status and tools (exit 1 if one failed)."""
    raise typer.Exit(list_command(common, mcp_options, json_output))


@mcp_app.command("get", epilog="""[b]Examples[/b]

  recursive mcp get git

  recursive mcp get git --json | jq '.tools[].name'
""")
@with_common_options
@with_mcp_options
def mcp_get(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The server's name in the configuration.")],
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable server and tools.")] = False,
    *,
    mcp_options: McpOptions,
    common: CommonOptions,
) -> None:
    """Start one MCP server and show its tools with their descriptions and JSON Schemas."""
    raise typer.Exit(get_command(common, mcp_options, name, json_output))


@dataclass
class ServerReport:
    """What a check of one server found."""

    name: str
    origin: str
    transport: str
    status: str
    error: str = ""
    tools: list[Any] = field(default_factory=list)  # McpTool, as the agent would get them
    resources: list[Any] = field(default_factory=list)  # the resource tools, when it has resources
    prompts: list[Any] = field(default_factory=list)  # its ServerPrompts (commands in the interactive session)

    def as_json(self, schemas: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "origin": self.origin, "transport": self.transport,
                                "status": self.status}
        if self.error:
            data["error"] = self.error
        if schemas:
            from ...features.mcp.tools import tool_name

            data["tools"] = [{"name": t.name, "server_tool": t.remote_name, "description": t.description,
                              "read_only": t.read_only, "parameters": t.schema} for t in self.tools]
            data["prompts"] = [{"command": "/" + tool_name(self.name, p.name), "description": p.description,
                                "arguments": [{"name": a.name, "required": a.required, "description": a.description}
                                              for a in p.arguments]} for p in self.prompts]
        else:
            data["tools"] = [t.name for t in self.tools]
            data["prompts"] = [p.name for p in self.prompts]
        return data


def probe_servers(loaded: "LoadedSettings", options: McpOptions, only: Optional[str] = None) -> list["ServerReport"]:
    """Start the configured servers (or the one named `only`), note what each offers, stop
    them; or the exit code of a malformed configuration (2), already reported."""
    from ...features.mcp import McpConfigError, McpManager, load_mcp_config
    from ...features.mcp.tools import ListMcpResourcesTool, McpTool, ReadMcpResourceTool
    from ...features.trust import run_notes, verdict_for

    workspace = loaded.settings.workspace.expanduser().resolve()
    trust = verdict_for(loaded, workspace)  # (an untrusted workspace's servers are not started, not even here)
    try:
        config = load_mcp_config(workspace, loaded.home, options.mcp_config or [], options.strict_mcp_config,
                                 loaded.env, loaded.settings.mcp_timeout, user=not loaded.settings.bare,
                                 project=trust.trusted)
    except McpConfigError as exc:
        raise CliError(str(exc), config_code(exc)) from None
    if not options.strict_mcp_config:
        sys.stderr.writelines(f"{note}\n" for note in run_notes(loaded, frozenset({"mcp"})))
    if only is not None:
        if only not in config.servers:
            known = ", ".join(config.servers) or "none"
            raise CliError(f"no MCP server named {only!r} (configured: {known})", EXIT_USAGE)
        config.servers = {only: config.servers[only]}
    manager = McpManager(config, workspace, warn=lambda text: None)

    async def check() -> list[ServerReport]:
        try:
            await manager.start()
            reports = []
            for name, entry in config.servers.items():
                connection = manager.connections[name]
                kind = entry.spec.kind if entry.spec is not None else "?"
                tools = [McpTool(manager, name, tool) for tool in connection.tools]
                extra = [ListMcpResourcesTool(manager), ReadMcpResourceTool(manager)] if connection.has_resources else []
                reports.append(ServerReport(name, entry.origin, kind, connection.status, connection.error,
                                            tools, extra, list(connection.prompts)))
            return reports
        finally:
            await manager.aclose()

    import asyncio  # not at import: `--help` and `--version` load this module

    return asyncio.run(check()) if config.servers else []


def list_command(common: CommonOptions, options: McpOptions, as_json: bool) -> int:
    """Print each server: name, status, source and tools (or the reason it failed)."""
    from ...launch.settings import command_settings

    loaded = command_settings(common)
    reports = probe_servers(loaded, options)
    if as_json:
        sys.stdout.write(json.dumps([r.as_json() for r in reports], indent=2) + "\n")
    elif not reports:
        sys.stderr.write("no MCP servers configured (a .mcp.json in the workspace, "
                         f"{loaded.home / 'mcp.json'}, or --mcp-config)\n")
    else:
        sys.stdout.writelines(_row(report) + "\n" for report in reports)
    return 1 if any(r.status != "connected" for r in reports) else 0


def _row(report: ServerReport) -> str:
    mark = "✓" if report.status == "connected" else "✗"
    if report.status == "connected":
        names = ", ".join(t.name for t in report.tools)
        detail = f"{len(report.tools)} tool{'s' if len(report.tools) != 1 else ''}" + (f": {names}" if names else "")
    else:
        detail = report.error
    return "\t".join((f"{mark} {report.name}", report.status, report.transport, report.origin, detail))


def get_command(common: CommonOptions, options: McpOptions, name: str, as_json: bool) -> int:
    """Print one server's tools with their schemas."""
    from ...launch.settings import command_settings

    loaded = command_settings(common)
    reports = probe_servers(loaded, options, only=name)
    report = reports[0]
    if as_json:
        sys.stdout.write(json.dumps(report.as_json(schemas=True), indent=2) + "\n")
    else:
        sys.stdout.write(f"{report.name}: {report.status} ({report.transport}, {report.origin})\n")
        for tool in report.tools:
            hint = " [read-only]" if tool.read_only else ""
            sys.stdout.write(f"\n{tool.name}{hint}\n  {tool.description.strip()}\n")
            sys.stdout.write("  " + json.dumps(tool.schema, indent=2).replace("\n", "\n  ") + "\n")
        for prompt in report.as_json(schemas=True)["prompts"]:
            usage = " ".join(a["name"].upper() if a["required"] else f"[{a['name'].upper()}]"
                             for a in prompt["arguments"])
            sys.stdout.write(f"\n{prompt['command']} {usage}".rstrip() + f" [prompt]\n  {prompt['description']}\n")
    if report.status != "connected":
        raise CliError(f"MCP server {name!r} {report.status}: {report.error}")
    return 0


def mcp_tools(loaded: "LoadedSettings", options: McpOptions) -> list[Any]:
    """The tools the configured MCP servers would give the agent (for `recursive tools`); a
    server that fails is reported on stderr."""
    reports = probe_servers(loaded, options)
    for report in reports:
        if report.status != "connected":
            sys.stderr.write(f"warning: MCP server {report.name!r} failed to start: {report.error}\n")
    tools = [tool for report in reports for tool in report.tools]
    extra = next((report.resources for report in reports if report.resources), [])
    return tools + extra
