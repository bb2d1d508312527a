"""The user's command hooks (issue 18), in Claude Code's settings format: where they are read
from (config.py), how one runs (runner.py), and where each event fires in the runtime
(engine.py). The builder attaches them when any settings file or `--settings` holds hooks."""

from .config import HookCommand, HookConfig, HookConfigError, load_hooks, settings_files
from .engine import HookEngine, attach_hooks

__all__ = ["HookCommand", "HookConfig", "HookConfigError", "HookEngine", "attach_hooks", "load_hooks",
           "settings_files"]
