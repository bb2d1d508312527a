"""The `scripted` provider: replays replies from a JSON file, for tests, demos and offline runs.

A script is a JSON list of replies (or `{"replies": [...]}`), each one of::

    {"text": "answer"}
    {"text": "optional", "tool_calls": [{"name": "run_shell", "arguments": {"command": "ls"}}]}
    {"error": {"status": 429, "message": "slow down"}}       # raised as a ProviderError
    optional on any reply: "stop": "length" | "content_filter" | "refusal" | …, "usage": {...},
    "delay": seconds, "thinking": "what the model thought" (kept as a signed thinking block)

The same reply format drives the tests' loopback HTTP server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import ScriptError
from ..core.messages import Message, Reasoning, ToolCall, Usage
from ..core.provider import Completion, ProviderError, ProviderHooks, StopKind, ToolSpec, thinking_hook
from .retry import call_with_retries


def load_script(path: Path) -> list[dict[str, Any]]:
    """Read and check a script file; raises ScriptError with a one-line reason."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScriptError(f"script file not found: {path}") from None
    except (OSError, ValueError) as exc:
        raise ScriptError(f"cannot read script file {path}: {exc}") from None
    replies = data.get("replies") if isinstance(data, dict) else data
    if not isinstance(replies, list) or not all(isinstance(r, dict) for r in replies):
        raise ScriptError(f"script file {path} must hold a JSON list of reply objects")
    return replies


class ScriptedProvider:
    """A ChatProvider whose answers come from a list of scripted replies, in order.

    `consumed` counts replies already used, so a resumed session can skip them.
    """

    name = "scripted"

    def __init__(self, replies: list[dict[str, Any]], model: str = "scripted", consumed: int = 0) -> None:
        self.model = model
        self._replies = replies
        self.consumed = consumed
        self._calls = 0

    def skip_replies(self, count: int) -> None:
        """Go on after the first `count` replies (a resumed session already used them)."""
        self.consumed = count

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                       hooks: ProviderHooks) -> Completion:
        return await call_with_retries(lambda: self._next(hooks), hooks)

    async def _next(self, hooks: ProviderHooks) -> Completion:
        if self.consumed >= len(self._replies):
            raise ProviderError("scripted provider: the script has no more replies")
        reply = self._replies[self.consumed]
        self.consumed += 1
        if reply.get("delay"):
            await asyncio.sleep(float(reply["delay"]))
        if "error" in reply:
            raise _scripted_error(reply["error"])
        return self._completion(reply, hooks)

    def _completion(self, reply: dict[str, Any], hooks: ProviderHooks) -> Completion:
        self._calls += 1
        thought = str(reply.get("thinking", ""))
        on_thinking = thinking_hook(hooks)
        if thought and on_thinking is not None:
            on_thinking(thought)
        reasoning = (Reasoning(kind="thinking", text=thought, signature=f"scripted-{self._calls}"),) if thought else None
        text = str(reply.get("text", ""))
        if text:
            hooks.on_text(text)
        calls = tuple(_tool_call(raw, self._calls, i) for i, raw in enumerate(reply.get("tool_calls", [])))
        usage = Usage(**reply.get("usage", {"input_tokens": 10, "output_tokens": 5}))
        stop: StopKind = reply.get("stop") or ("tool_calls" if calls else "end")
        message = Message(role="assistant", content=text, tool_calls=calls, usage=usage, reasoning=reasoning)
        return Completion(message=message, stop=stop, usage=usage, reason=stop)

    async def aclose(self) -> None:
        pass


def _tool_call(raw: dict[str, Any], step: int, index: int) -> ToolCall:
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return ToolCall(id=str(raw.get("id") or f"call_{step}_{index}"), name=str(raw.get("name", "")),
                    arguments=arguments)


def _scripted_error(spec: dict[str, Any]) -> ProviderError:
    status = int(spec.get("status", 500))
    retryable = status == 429 or status >= 500
    retry_after = spec.get("retry_after")
    return ProviderError(f"HTTP {status}: {spec.get('message', 'scripted error')}", status=status,
                         retryable=retryable, retry_after=float(retry_after) if retry_after else None)
