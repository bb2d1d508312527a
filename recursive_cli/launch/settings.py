"""A command's settings, as every front end loads them: config files, environment and flags
(`command_settings`), and the hooks of the settings files and `--settings` (`command_hooks`);
CliError, with the exit code of SPEC §13, for one that cannot be used."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import BadValueError, CliError, ConfigError
from ..core.settings import LoadedSettings, load_settings
from .errors import EXIT_ERROR, EXIT_USAGE, config_code

if TYPE_CHECKING:
    from ..core.events import EventSink
    from ..core.workspace_trust import TrustVerdict
    from ..features.hooks import HookConfig
    from .options import CommonOptions


def command_settings(common: CommonOptions, quiet: bool = False) -> LoadedSettings:
    """The settings of a command with `common` options, the unknown keys of the config files
    warned about on stderr (unless `quiet`)."""
    return warned(load_flags(common.as_flags()), quiet)


def load_flags(flags: dict[str, Any]) -> LoadedSettings:
    """The settings for these flag values; CliError exit 2 for a bad value of a flag
    (BadValueError), 1 for one of a config file or a variable (SPEC §13: one rule, README's
    exit-code table)."""
    try:
        return load_settings(flags, trust=recorded_trust)
    except ConfigError as exc:
        raise CliError(str(exc), EXIT_USAGE if isinstance(exc, BadValueError) else EXIT_ERROR) from None


def warned(loaded: LoadedSettings, quiet: bool = False) -> LoadedSettings:
    """`loaded`, its warnings (unknown keys of the config files) written on stderr unless `quiet`."""
    if not quiet:
        sys.stderr.writelines(f"warning: {warning}\n" for warning in loaded.warnings)
    return loaded


def recorded_trust(workspace: Path, home: Path) -> TrustVerdict:
    """Whether `recursive trust` recorded `workspace` as trusted (features/trust/)."""
    from ..features.trust import check_trust

    return check_trust(workspace, home)


def command_hooks(loaded: LoadedSettings, given: list[str], code: int | None = None) -> HookConfig:
    """The hooks of the settings files and `--settings` (the workspace's once it is trusted,
    the user's but with `--bare`); CliError exit 2 for a malformed `--settings` and 1 for a
    malformed file found on disk (`code`, when given, for either)."""
    from ..features.hooks import HookConfigError, load_hooks
    from ..features.trust import verdict_for

    workspace = loaded.settings.workspace.expanduser().resolve()
    try:
        return load_hooks(workspace, loaded.home, given, user=not loaded.settings.bare,
                          project=verdict_for(loaded, workspace).trusted)
    except HookConfigError as exc:
        raise CliError(str(exc), config_code(exc) if code is None else code) from None


def show_hook_events(sinks: list[EventSink], include: bool) -> list[EventSink]:
    """`sinks`, with the stream-json sink writing hook lines when `include` (--include-hook-events)."""
    if not include:  # (the stream-json sink writes none by default; its module stays unloaded for text)
        return sinks
    from ..sinks.claude_stream import ClaudeStreamSink

    for sink in sinks:
        if isinstance(sink, ClaudeStreamSink):
            sink.include_hook_events = include
    return sinks
