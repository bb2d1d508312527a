"""Claude Code's tool names and argument shapes, and ours: they live in `tools/claude_names.py`
(the hooks use them too); this module keeps the headless surface's imports."""

from ...tools.claude_names import (
    ALIASES,
    BY_CLAUDE,
    BY_OURS,
    ClaudeView,
    ToolAlias,
    claude_name,
    listed_name,
    our_name,
)

__all__ = ["ALIASES", "BY_CLAUDE", "BY_OURS", "ClaudeView", "ToolAlias", "claude_name", "listed_name", "our_name"]
