"""Anthropic's extended thinking: what a request asks for (`thinking_request`, from
`--thinking-budget` and `--effort`), and the thinking blocks of a reply, read (`read_block`)
and written back as they came (`reasoning_block`).

A budget is manual extended thinking, `thinking: {type: enabled, budget_tokens: N}`, with the
interleaved-thinking beta so the model thinks between tool calls too, and `max_tokens` above
the budget. An effort alone is adaptive thinking at that effort (`output_config.effort`),
except on the models from before adaptive thinking (a closed list), which get a budget for
the effort instead. A block is kept only with its signature: the API checks the signed blocks
of the last assistant turn of a tool-use loop, and refuses one without.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ..core.messages import Reasoning
from .http_base import as_text

# Manual extended thinking thinks between tool calls only with this beta (adaptive always does).
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
# The models from before adaptive thinking and `output_config.effort` (a closed list: every later
# model takes both): Claude 3.x, and the Claude 4 models up to 4.5, dated or aliased, as the
# Anthropic API, Bedrock (`anthropic.…-v1:0`) and Vertex (`…@date`) name them.
_BEFORE_ADAPTIVE = re.compile(r"claude-(?:3|(?:opus|sonnet|haiku)-4(?:-[015])?(?:-\d{8}|-v\d|@|$))")
_TAKES_EFFORT = re.compile(r"claude-opus-4-5")  # of those, the one that takes the effort parameter
# On those models, the thinking budget an effort stands for.
EFFORT_BUDGETS = {"low": 2048, "medium": 4096, "high": 10000, "max": 24000}
THINKING_HEADROOM = 4096  # `max_tokens` is at least this much above the thinking budget


class ThinkingRequest(NamedTuple):
    """What a request asks of the model's thinking: the `thinking` object, the effort, the
    smallest `max_tokens` it needs, and the beta headers it needs."""

    thinking: dict[str, Any] | None = None
    effort: str | None = None
    min_max_tokens: int = 0
    betas: tuple[str, ...] = ()


def thinking_request(model: str, budget: int | None, effort: str | None) -> ThinkingRequest:
    """The thinking a model is asked for, from `--thinking-budget` and `--effort`.

    A budget is manual extended thinking (interleaved, by its beta); an effort alone is adaptive
    thinking at that effort, or on a model from before adaptive thinking that effort's budget.
    """
    old = _BEFORE_ADAPTIVE.search(model) is not None
    sent_effort = effort if effort is not None and (not old or _TAKES_EFFORT.search(model)) else None
    if budget is None and effort is not None and not old:
        return ThinkingRequest({"type": "adaptive"}, sent_effort)
    if budget is None and effort is not None:
        budget = EFFORT_BUDGETS[effort]
    if budget is None:
        return ThinkingRequest()
    return ThinkingRequest({"type": "enabled", "budget_tokens": budget}, sent_effort,
                           budget + THINKING_HEADROOM, (INTERLEAVED_THINKING_BETA,))


def reasoning_block(item: Reasoning) -> dict[str, Any] | None:
    """A kept thinking block as it came (None for reasoning of another provider's)."""
    if item.kind == "thinking":
        return {"type": "thinking", "thinking": item.text, "signature": item.signature or ""}
    if item.kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": item.signature or ""}
    return None


def read_block(block: dict[str, Any]) -> Reasoning | None:
    """A `thinking` or `redacted_thinking` block of a reply, to keep; None for any other block,
    and for one without its signature (a reply cut off at the output limit while thinking):
    the API refuses such a block back, and a cut reply's thinking is not needed again."""
    if block.get("type") == "thinking" and (signature := as_text(block.get("signature"))):
        return Reasoning(kind="thinking", text=as_text(block.get("thinking")), signature=signature)
    if block.get("type") == "redacted_thinking" and (data := as_text(block.get("data"))):
        return Reasoning(kind="redacted_thinking", signature=data)
    return None
