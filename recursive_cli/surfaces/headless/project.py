"""Claude Code's configuration around a headless run, read as Claude Code reads it: its
environment variables (the Anthropic provider), the custom slash commands, the plugins of
`--plugin-dir` and the settings' `outputStyle`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError
from ...core.settings import LoadedSettings, Settings
from ...features.plugins import Plugin, load_plugin
from ...features.slash_commands import SlashCommand, command_folders, load_commands, workspace_commands
from .flags import HeadlessOptions, UsageError

CLAUDE_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")


def claude_provider(loaded: LoadedSettings) -> dict[str, Any]:
    """The Anthropic provider, with `ANTHROPIC_MODEL` when no model is set, for a run whose
    provider nothing of ours chose (no flag, variable or config key, no RECURSIVE_API_KEY) and
    whose environment holds Claude Code's variables (what wrappers of `claude` pass on); else
    nothing."""
    env = loaded.env
    if "provider" in loaded.sources or env.get("RECURSIVE_API_KEY") or not any(
            env.get(name) for name in CLAUDE_VARIABLES):
        return {}
    chosen: dict[str, Any] = {"provider": "anthropic"}
    if "model" not in loaded.sources and env.get("ANTHROPIC_MODEL"):
        chosen["model"] = env["ANTHROPIC_MODEL"]
    return chosen


def slash_commands(loaded: LoadedSettings, settings: Settings) -> dict[str, SlashCommand]:
    """The custom slash commands of this run: the user's, and the workspace's once it is
    trusted (a note on stderr names those an untrusted workspace leaves out)."""
    from ...features.trust import verdict_for

    if settings.bare:
        return {}
    workspace = settings.workspace.expanduser().resolve()
    verdict = verdict_for(loaded, workspace)
    skipped = [] if verdict.trusted or verdict.quiet else workspace_commands(workspace)
    if skipped:
        sys.stderr.write(f"note: skipped the workspace's slash commands ({', '.join('/' + n for n in skipped)}): "
                         f"{verdict.reason}; trust the workspace (`recursive trust`, --trust-workspace, or "
                         "setting_sources naming project) to use them\n")
    return load_commands(command_folders(workspace, loaded.home, verdict.trusted))


def plugins(folders: list[str]) -> list[Plugin]:
    """The plugins of `--plugin-dir` (UsageError for a folder that is none); a note on stderr
    names the parts of each that are not loaded here."""
    loaded = []
    for folder in folders:
        try:
            plugin = load_plugin(Path(folder))
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        if plugin.unused:
            sys.stderr.write(f"note: plugin {plugin.name}: only its commands are loaded here, not its "
                             f"{', '.join(plugin.unused)}\n")
        loaded.append(plugin)
    return loaded


def output_style(loaded: LoadedSettings, options: HeadlessOptions) -> str:
    """The `outputStyle` of the settings, as Claude Code reads it: `--settings` over the
    workspace's settings files over the user's (ours, over Claude Code's
    `$CLAUDE_CONFIG_DIR/settings.json`, which the SDK seeds for a SessionStore resume);
    "default" when none names one. As under Claude Code's SDK system prompt, the style changes
    no prompt here, it is only reported: so the workspace's files count without trust, unless
    `setting_sources` leaves them out."""
    from ...features.hooks.config import workspace_settings_files
    from ...features.sessions.claude_paths import claude_config_dir

    workspace = loaded.settings.workspace.expanduser().resolve()
    users = [claude_config_dir(loaded.env) / "settings.json", loaded.home / "settings.json"]
    files = [] if loaded.settings.bare else users
    sources = options.setting_sources
    if not loaded.settings.bare and (sources is None or {"project", "local"} & set(sources)):
        files += workspace_settings_files(workspace, loaded.home)
    given = options.settings
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in files if path.is_file()]
    if given:
        texts.append(given if given.lstrip().startswith("{") else _file_text(Path(given)))
    style = "default"
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            continue  # (a malformed file is reported where its hooks are read)
        if isinstance(value, dict) and isinstance(value.get("outputStyle"), str):
            style = value["outputStyle"]
    return style


def _file_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""
