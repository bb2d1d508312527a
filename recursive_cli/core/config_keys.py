"""The settings no flag sets: what each does, its default and its variable, written once.

`recursive config show` lists every setting; those below have no flag of their own, so
their help, the man page's CONFIGURATION KEYS and docs/configuration.md say what they are
from this table (tests/test_config_keys.py holds the three to it, and it to `Settings`:
every setting without a flag is here, with the default and the variable the settings use).
This module imports nothing, so `--help` stays fast.
"""

from __future__ import annotations

from typing import NamedTuple


class ConfigKey(NamedTuple):
    """A config-file key: what it does, its default in words, and its variable ("" for none)."""

    key: str
    does: str
    default: str
    variable: str = ""

    def line(self) -> str:
        """`shell-timeout: … Default: 120. Variable: none (config files only).`"""
        variable = f"`{self.variable}`" if self.variable else "none (config files only)"
        return f"`{self.key}`: {self.does} Default: {self.default}. Variable: {variable}."


CONFIG_ONLY = (
    ConfigKey("shell-timeout", "Seconds a `run_shell` command may run (with everything it started) "
              "before it is stopped, unless the model asks for its own timeout; an MCP tool call's "
              "too, unless `MCP_TOOL_TIMEOUT` (ms) says otherwise.", "120"),
    ConfigKey("allow-private-network", "When true, `web_fetch` may read loopback, private and "
              "link-local addresses (a local docs server); else it refuses them. A workspace's "
              "own config sets it only once the folder is trusted.", "false"),
    ConfigKey("mcp-timeout", "How long an MCP server may take to start, a duration (`30s`, `2m`).",
              "Claude's `MCP_TIMEOUT` (ms) when set, else 30 s", "RECURSIVE_MCP_TIMEOUT"),
    ConfigKey("sandbox-allow-ports", "Loopback ports the agent's commands may connect to without "
              "the network, a list (`[5432]`); `--sandbox-allow-port PORT` adds one per run.", "none"),
    ConfigKey("prices", "Prices of models in USD per million tokens, a table per model: "
              "`[prices.\"MODEL\"]` with `input`, `output` and optionally `cache_read` and "
              "`cache_write`; they come before the built-in ones.", "the built-in table"),
)
