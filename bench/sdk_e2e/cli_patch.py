"""Loaded into the SDK's process (`pytest -p cli_patch`, or imported before an example runs):
the SDK's own CLI lookup returns `$SDK_E2E_CLI` instead of the bundled Claude Code, so the
suite's code runs unchanged while `cli_path` points at the CLI under test."""

from __future__ import annotations

import os

from claude_agent_sdk._internal.transport import subprocess_cli

_CLI = os.environ.get("SDK_E2E_CLI")

if _CLI:
    def _find_cli(self: object) -> str:
        return str(_CLI)

    subprocess_cli.SubprocessCLITransport._find_cli = _find_cli  # type: ignore[method-assign]
