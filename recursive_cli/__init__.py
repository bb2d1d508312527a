"""recursive: a command-line coding agent for the shell, CI jobs and long autonomous runs.

The library API is importable from here; names load on first use so `import recursive_cli`
(and `recursive --help`) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "AgentRuntime": "agent",
    "RuntimeCore": "runtime",
    "AgentRuntimeBuilder": "agent",
    "AgentKernel": "kernel",
    "TurnContext": "kernel",
    "TurnOutcome": "kernel",
    "Message": "messages",
    "ToolCall": "messages",
    "Usage": "messages",
    "Tool": "tools.base",
    "BaseTool": "tools.base",
    "ToolResult": "tools.base",
    "ToolRegistry": "tools.base",
    "ChatProvider": "providers.base",
    "AgentEvent": "events",
    "EventSink": "events",
    "FinishReason": "events",
    "InterruptToken": "interrupt",
    "Settings": "settings",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from .agent import AgentRuntime, AgentRuntimeBuilder
    from .events import AgentEvent, EventSink, FinishReason
    from .interrupt import InterruptToken
    from .kernel import AgentKernel, TurnContext, TurnOutcome
    from .messages import Message, ToolCall, Usage
    from .providers.base import ChatProvider
    from .runtime import RuntimeCore
    from .settings import Settings
    from .tools.base import BaseTool, Tool, ToolRegistry, ToolResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'recursive_cli' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
