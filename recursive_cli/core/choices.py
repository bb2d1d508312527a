"""The closed sets a user chooses from — providers, output formats, permission modes — spelled once.

`settings` validates against these types, the CLI builds its option enums and help from the
tuples, and the docs list them from there. This module imports nothing, so `--help` stays fast
(settings pulls in pydantic).
"""

from __future__ import annotations

from typing import Literal, get_args

ProviderName = Literal["openai", "anthropic", "scripted"]
OutputFormat = Literal["text", "json", "stream-json"]
PermissionMode = Literal["auto", "accept-edits", "read-only", "ask", "plan"]
SandboxMode = Literal["read-only", "workspace-write", "off"]
Wire = Literal["responses", "chat"]
Effort = Literal["low", "medium", "high", "max"]  # how hard a reasoning model thinks (issue 30)

PROVIDERS: tuple[ProviderName, ...] = get_args(ProviderName)
OUTPUT_FORMATS: tuple[OutputFormat, ...] = get_args(OutputFormat)
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
WIRES: tuple[Wire, ...] = get_args(Wire)
EFFORTS: tuple[Effort, ...] = get_args(Effort)


def spelled_out(values: tuple[str, ...], quote: str = "") -> str:
    """`a, b or c` (each value between `quote`s), for help and docs."""
    shown = [f"{quote}{value}{quote}" for value in values]
    return ", ".join(shown[:-1]) + " or " + shown[-1] if len(shown) > 1 else "".join(shown)
