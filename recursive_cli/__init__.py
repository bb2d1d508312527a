"""recursive: a command-line coding agent for the shell, CI jobs and long autonomous runs.

The library API is importable from here; names load on first use so `import recursive_cli`
(and `recursive --help`) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "AgentRuntime": "agent",
    "RuntimeCore": "core.runtime",
    "AgentRuntimeBuilder": "agent",
    "AgentKernel": "core.kernel",
    "TurnContext": "core.kernel",
    "TurnOutcome": "core.kernel",
    "Message": "core.messages",
    "ToolCall": "core.messages",
    "Usage": "core.messages",
    "Tool": "core.tool",
    "BaseTool": "core.tool",
    "ToolResult": "core.tool",
    "ToolRegistry": "core.tool",
    "ChatProvider": "core.provider",
    "AgentEvent": "core.events",
    "EventSink": "core.events",
    "FinishReason": "core.events",
    "InterruptToken": "core.interrupt",
    "Settings": "core.settings",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from .agent import AgentRuntime, AgentRuntimeBuilder
    from .core.events import AgentEvent, EventSink, FinishReason
    from .core.interrupt import InterruptToken
    from .core.kernel import AgentKernel, TurnContext, TurnOutcome
    from .core.messages import Message, ToolCall, Usage
    from .core.provider import ChatProvider
    from .core.runtime import RuntimeCore
    from .core.settings import Settings
    from .core.tool import BaseTool, Tool, ToolRegistry, ToolResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'recursive_cli' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
