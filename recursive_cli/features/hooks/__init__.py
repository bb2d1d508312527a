"""The user's command hooks (issue 18), in Claude Code's settings format: where they are read
from (config.py), how one runs (runner.py), and where each event fires in the runtime
(engine.py). The builder attaches them when any settings file or `--settings` holds hooks;
only then are the engine and the runner imported (a run without hooks reads the files only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import HookCommand, HookConfig, HookConfigError, load_hooks, settings_files

if TYPE_CHECKING:
    from .engine import HookEngine, attach_hooks

__all__ = ["HookCommand", "HookConfig", "HookConfigError", "HookEngine", "attach_hooks", "load_hooks",
           "settings_files"]


def __getattr__(name: str) -> Any:
    if name in ("HookEngine", "attach_hooks"):
        from . import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
