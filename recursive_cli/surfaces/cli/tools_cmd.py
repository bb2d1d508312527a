"""`recursive tools`: the tools the agent would get, without building a provider."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap

from ...core.settings import ConfigError, load_settings
from .errors import fail
from .options import CommonOptions


def tools_command(common: CommonOptions, as_json: bool) -> int:
    """Print the tool list (names and one-line descriptions, or JSON with schemas)."""
    try:
        settings = load_settings(common.as_flags()).settings
    except ConfigError as exc:
        return fail(str(exc))
    from ...tools.catalog import core_tools

    tools = core_tools()
    if not (settings.no_session or settings.no_checkpoints):  # what launch adds (with git present)
        from ...features.checkpoints.git import find_git
        from ...features.checkpoints.tools import checkpoint_tools

        tools += checkpoint_tools() if find_git() else []
    if as_json:
        specs = [tool.spec() for tool in tools]
        data = [{"name": s.name, "description": s.description, "parameters": s.parameters} for s in specs]
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    width = max(len(tool.name) for tool in tools)
    columns = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for tool in tools:
        summary = tool.description.strip().splitlines()[0]
        sys.stdout.write(_entry(f"{tool.name:<{width}}  ", summary, columns) + "\n")
    return 0


def _entry(name: str, summary: str, columns: int | None) -> str:
    """`name  summary`, on a terminal wrapped at word boundaries under the summary's column;
    piped (`columns` None) on one line, for grep and cut."""
    if columns is None or columns - len(name) < 20:
        return name + summary
    return textwrap.fill(summary, columns - 1, initial_indent=name, subsequent_indent=" " * len(name),
                         break_long_words=False, break_on_hyphens=False)
