"""Claude Code plugins given by the program (the Agent SDK's `plugins=[{"type": "local",
"path": …}]`, which it passes as `--plugin-dir`): a folder with `.claude-plugin/plugin.json`
(its `name`, `version`) whose `commands/*.md` are slash commands named `plugin:command`, as
Claude Code names them. A plugin's other parts (hooks, agents, skills, MCP servers) are not
loaded here; `Plugin.unused` names those it has, for the run to say so."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from .slash_commands import SlashCommand, load_commands

MANIFEST = Path(".claude-plugin") / "plugin.json"
_OTHER_PARTS = {"hooks": "hooks", "agents": "agents", "skills": "skills", ".mcp.json": "MCP servers"}


@dataclass(frozen=True, slots=True)
class Plugin:
    """One plugin folder: its name and version, its commands, and the parts not loaded."""

    name: str
    version: str | None
    path: Path
    commands: dict[str, SlashCommand]
    unused: tuple[str, ...]

    def record(self) -> dict[str, Any]:
        """Its entry in `init`'s `plugins`, as Claude Code writes it."""
        entry: dict[str, Any] = {"name": self.name, "path": str(self.path), "source": f"{self.name}@inline"}
        return {**entry, "version": self.version} if self.version else entry


def load_plugin(folder: Path) -> Plugin:
    """The plugin in `folder`; ConfigError when there is no such folder or its manifest is bad."""
    path = folder.expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"--plugin-dir {folder}: no such folder")
    manifest: dict[str, Any] = {}
    if (path / MANIFEST).is_file():
        try:
            read = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--plugin-dir {folder}: cannot read {MANIFEST}: {exc}") from None
        manifest = read if isinstance(read, dict) else {}
    name = str(manifest.get("name") or path.name)
    version = manifest.get("version")
    commands = {f"{name}:{key}": command for key, command in load_commands([(path / "commands", name)]).items()}
    unused = tuple(label for part, label in _OTHER_PARTS.items() if (path / part).exists())
    return Plugin(name, str(version) if version else None, path, commands, unused)
