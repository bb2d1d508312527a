"""MCP servers as tools (issue 17): configuration in Claude Code's `.mcp.json` format
(config.py), one connection per server (client.py) over a transport of our own — stdio
(stdio.py), streamable HTTP and HTTP with SSE (http.py), their JSON-RPC in rpc.py — what the
servers send as typed values (models.py), their tools as ours (tools.py), and the manager
that starts, restarts and stops them (manager.py). The official `mcp` SDK is the tests'
oracle, not a dependency.

The builder attaches an `McpManager` when servers are configured (`attach_mcp`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import McpConfig, McpConfigError, McpState, from_mapping, load_mcp_config, parse_source
from .manager import McpManager, kill_servers_now

if TYPE_CHECKING:
    from ...core.runtime import RuntimeCore

__all__ = ["McpConfig", "McpConfigError", "McpManager", "McpState", "attach_mcp", "as_config",
           "kill_servers_now", "load_mcp_config"]


def attach_mcp(runtime: RuntimeCore, config: McpConfig, *, log_dir: Callable[[], Path | None] = lambda: None,
               warn: Callable[[str], None] | None = None) -> McpManager:
    """Give `runtime` the servers of `config`: a manager found as `runtime.feature(McpManager)`,
    which starts them before the first turn (or when `start` is called) and is closed with the
    runtime."""
    roots = getattr(runtime.tool_context.sandbox, "roots", None)  # (the workspace and every --add-dir)
    manager = McpManager(config, runtime.workspace, log_dir=log_dir, warn=warn, roots=roots)
    runtime.attach(manager)
    runtime.add_turn_observer(manager)
    return manager


def as_config(source: McpConfig | Mapping[str, Any] | str | Path) -> McpConfig:
    """A library caller's servers: an McpConfig, a mapping in `.mcp.json`'s shape (or its
    `mcpServers` part), a file, or JSON text."""
    import os

    if isinstance(source, McpConfig):
        return source
    if isinstance(source, Mapping):
        return from_mapping(source)
    text = str(source)
    if isinstance(source, str) and text.lstrip().startswith("{"):
        return parse_source(text, "library (JSON)", "(JSON)", os.environ)
    path = Path(text).expanduser()
    try:
        body = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_source(body, f"library {path}", str(path), os.environ)
