"""`get_context_usage`: how full the context window is, by category, in the shape of Claude
Code's `/context` answer (`ClaudeSDKClient.get_context_usage()`). Counts are estimates (a
quarter of the bytes each part takes in a request), as `estimated: true` says; `apiUsage` is
what the provider reported for the session."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...agent import AgentRuntime
    from ...core.provider import ToolSpec


def _tokens_of(spec: ToolSpec) -> int:
    return (len(json.dumps([spec.name, spec.description, spec.parameters])) + 3) // 4


def context_usage(runtime: AgentRuntime, memory_file: str | None) -> dict[str, Any]:
    """The answer to `get_context_usage` for the conversation as it stands."""
    from ...features.compaction import context_window, message_tokens

    transcript = runtime.transcript()
    has_system = bool(transcript) and transcript[0].role == "system"
    system = message_tokens(transcript[0]) if has_system else 0
    messages = sum(message_tokens(message) for message in transcript[1 if has_system else 0:])
    specs = runtime.tools.specs()
    mcp_specs = [spec for spec in specs if spec.name.startswith("mcp__")]
    own_specs = [spec for spec in specs if not spec.name.startswith("mcp__")]
    mcp = [{"name": spec.name, "serverName": spec.name.split("__")[1], "tokens": _tokens_of(spec), "isLoaded": True}
           for spec in mcp_specs]
    builtin = [{"name": spec.name, "tokens": _tokens_of(spec)} for spec in own_specs]
    model = runtime.provider.model
    window = context_window(model)
    used = {"System prompt": system, "System tools": sum(map(_tokens_of, own_specs)),
            "MCP tools": sum(map(_tokens_of, mcp_specs)), "Messages": messages}
    total = sum(used.values())
    categories = [{"name": name, "tokens": tokens, "color": "inactive"} for name, tokens in used.items() if tokens]
    categories.append({"name": "Free space", "tokens": max(window - total, 0), "color": "promptBorder"})
    usage = runtime.usage
    compactor = runtime.compactor
    answer: dict[str, Any] = {
        "categories": categories, "totalTokens": total, "maxTokens": window, "rawMaxTokens": window,
        "percentage": round(total * 100 / max(window, 1), 1), "model": model,
        "isAutoCompactEnabled": compactor is not None, "memoryFiles": [], "mcpTools": mcp, "agents": [],
        "gridRows": [], "systemTools": builtin,
        "apiUsage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                     "cache_read_input_tokens": usage.cache_read_tokens,
                     "cache_creation_input_tokens": usage.cache_write_tokens},
        "estimated": True,
    }
    if memory_file:
        answer["memoryFiles"] = [{"path": memory_file, "type": "Project"}]
    return answer
