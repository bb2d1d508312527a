"""A bundled price table for common OpenAI and Anthropic models, and the cost of a Usage.

Prices are USD per million tokens, as published by the vendors (standard tier, prompts under
any long-context surcharge). Unknown models cost `None`, never 0: a wrong zero would let
`--max-cost` pass silently. `ModelPrice.cost` is the one pricing function; `cost_usd` looks a
model up and applies it, and `Price` binds the lookup to a model for the run's budget
(budget.py), which charges every request through it.

A user's own prices (`[prices."MODEL"]` tables in config.toml, read by settings.py) come first:
`Price(model, configured)` looks a model up there before the bundled table, so a local model
priced 0 has a known cost and a vendor's new price need not wait for a release.

`Usage.input_tokens` counts the whole prompt, cached tokens included; the cached reads and
cache writes inside it are priced at their own rates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

from .messages import Usage


@dataclass(frozen=True, slots=True)  # (pydantic validates the `[prices]` tables of the config into it)
class ModelPrice:
    """USD per million tokens; `None` cache prices mean "billed as plain input"."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """The USD cost of `usage` at these prices."""
        cached = usage.cache_read_tokens
        written = usage.cache_write_tokens
        uncached = max(usage.input_tokens - cached - written, 0)
        total = (uncached * self.input
                 + cached * _or(self.cached_input, self.input)
                 + written * _or(self.cache_write, self.input)
                 + usage.output_tokens * self.output)
        return total / 1_000_000

    def describe(self) -> str:
        """`input $2.5, output $10, cache read $1.25 per million tokens`, for `config show`."""
        parts = [f"input ${self.input:g}", f"output ${self.output:g}"]
        if self.cached_input is not None:
            parts.append(f"cache read ${self.cached_input:g}")
        if self.cache_write is not None:
            parts.append(f"cache write ${self.cache_write:g}")
        return ", ".join(parts) + " per million tokens"


PriceTable = Mapping[str, ModelPrice]
"""Model name → price: the bundled `PRICES`, or the user's configured prices."""


def _anthropic(input_price: float, output_price: float) -> ModelPrice:
    # Cache reads cost a tenth of input; five-minute cache writes cost 1.25 times input.
    return ModelPrice(input_price, output_price, round(input_price * 0.1, 4), round(input_price * 1.25, 4))


PRICES: dict[str, ModelPrice] = {
    # OpenAI
    "gpt-4o": ModelPrice(2.50, 10.00, 1.25),
    "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.075),
    "gpt-4.1": ModelPrice(2.00, 8.00, 0.50),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60, 0.10),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40, 0.025),
    "o1": ModelPrice(15.00, 60.00, 7.50),
    "o3": ModelPrice(2.00, 8.00, 0.50),
    "o3-mini": ModelPrice(1.10, 4.40, 0.55),
    "o3-pro": ModelPrice(20.00, 80.00),
    "o4-mini": ModelPrice(1.10, 4.40, 0.275),
    "gpt-5": ModelPrice(1.25, 10.00, 0.125),
    "gpt-5-chat-latest": ModelPrice(1.25, 10.00, 0.125),
    "gpt-5-codex": ModelPrice(1.25, 10.00, 0.125),
    "gpt-5-mini": ModelPrice(0.25, 2.00, 0.025),
    "gpt-5-nano": ModelPrice(0.05, 0.40, 0.005),
    "gpt-5-pro": ModelPrice(15.00, 120.00),
    "gpt-5.1": ModelPrice(1.25, 10.00, 0.125),
    # Anthropic
    "claude-3-haiku": _anthropic(0.25, 1.25),
    "claude-3-5-haiku": _anthropic(0.80, 4.00),
    "claude-3-5-sonnet": _anthropic(3.00, 15.00),
    "claude-3-7-sonnet": _anthropic(3.00, 15.00),
    "claude-3-opus": _anthropic(15.00, 75.00),
    "claude-sonnet-4": _anthropic(3.00, 15.00),
    "claude-sonnet-4-5": _anthropic(3.00, 15.00),
    "claude-opus-4": _anthropic(15.00, 75.00),
    "claude-opus-4-1": _anthropic(15.00, 75.00),
    "claude-opus-4-5": _anthropic(5.00, 25.00),
    "claude-haiku-4-5": _anthropic(1.00, 5.00),
}

# A table name, then optionally what may follow it in a real model id: a release date or an alias.
_DATED = re.compile(r"(?P<base>.+?)(?:-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest))?")


def price_for(model: str, configured: PriceTable | None = None) -> ModelPrice | None:
    """The price of `model`: a configured one first, else the bundled table's; None when neither
    has it. Dated ids (`claude-sonnet-4-20250514`) and router prefixes (`openai/gpt-4o`) match
    their model, in both tables.

    A name only matches when what follows it is a date or `-latest`, so a newer minor version
    (`claude-opus-4-7`) is reported unknown rather than priced as its older sibling.
    """
    if configured:
        key = configured_key(model, configured)
        if key is not None:
            return configured[key]
    key = _bundled_key(model)
    return None if key is None else PRICES[key]


def configured_key(model: str, configured: PriceTable) -> str | None:
    """The key of `configured` (as the user spelled it) that prices `model`, or None."""
    return _match(model, configured)


@lru_cache(maxsize=128)
def _bundled_key(model: str) -> str | None:
    """`_match` on the bundled table, remembered: a run's budget prices every request."""
    return _match(model, PRICES)


def _match(model: str, table: PriceTable) -> str | None:
    if model in table:
        return model
    keys = {_normalised(key): key for key in table}
    name = _normalised(model)
    if name in keys:
        return keys[name]
    match = _DATED.fullmatch(name)
    return keys.get(match.group("base")) if match else None


def cost_usd(model: str, usage: Usage, configured: PriceTable | None = None) -> float | None:
    """The USD cost of `usage` on `model`, or None when the model's price is unknown."""
    price = price_for(model, configured)
    return None if price is None else price.cost(usage)


@dataclass(frozen=True, slots=True)
class Price:
    """The price of one model, called on a Usage: its USD cost, or None when `model` is
    unknown or has no price. `configured` holds the user's own prices, which come first.
    `Price()` prices nothing (a runtime built without a model)."""

    model: str | None = None
    configured: PriceTable = field(default_factory=dict, hash=False)  # (hashed by model: a mapping)

    def __call__(self, usage: Usage) -> float | None:
        rate = self.rate
        return None if rate is None else rate.cost(usage)

    @property
    def rate(self) -> ModelPrice | None:
        """The model's prices, or None when it has none."""
        return None if self.model is None else price_for(self.model, self.configured)

    def of(self, model: str) -> Price:
        """Another model's price from the same tables (a judge on its own model)."""
        return replace(self, model=model)


def _normalised(model: str) -> str:
    name = model.strip().lower().rsplit("/", 1)[-1]
    if name.startswith("claude"):
        name = name.replace(".", "-")  # routers spell versions with dots: claude-sonnet-4.5
    return name


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
