"""The bundled price table and cost computation."""

from __future__ import annotations

import pytest

from recursive_cli.core.messages import Usage
from recursive_cli.core.pricing import PRICES, ModelPrice, Price, cost_usd, price_for


def test_plain_cost() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd("gpt-4o", usage) == pytest.approx(2.50 + 10.00)
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx(3.00 + 15.00)


def test_cached_reads_and_writes_have_their_own_price() -> None:
    # input_tokens counts the whole prompt: 200k plain + 700k read from cache + 100k written to it.
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=700_000,
                  cache_write_tokens=100_000)
    assert cost_usd("claude-sonnet-4", usage) == pytest.approx(0.2 * 3.00 + 0.7 * 0.30 + 0.1 * 3.75)
    openai_usage = Usage(input_tokens=1_000_000, cache_read_tokens=500_000)
    assert cost_usd("gpt-4.1", openai_usage) == pytest.approx(0.5 * 2.00 + 0.5 * 0.50)


@pytest.mark.parametrize("model", ["claude-sonnet-4-20250514", "claude-3-5-haiku-20241022",
                                   "claude-3-5-haiku-latest", "gpt-4o-mini-2024-07-18",
                                   "o3-2025-04-16", "gpt-5-mini-2025-08-07"])
def test_dated_names_match_their_model(model: str) -> None:
    assert price_for(model) is not None


def test_longest_name_wins() -> None:
    assert price_for("gpt-4o-mini") == PRICES["gpt-4o-mini"]
    assert price_for("gpt-4o-mini-2024-07-18") == PRICES["gpt-4o-mini"]
    assert price_for("claude-opus-4-1-20250805") == PRICES["claude-opus-4-1"]
    assert price_for("claude-opus-4-20250514") == PRICES["claude-opus-4"]


def test_router_spellings() -> None:
    assert price_for("openai/gpt-4o") == PRICES["gpt-4o"]
    assert price_for("anthropic/claude-sonnet-4.5") == PRICES["claude-sonnet-4-5"]


@pytest.mark.parametrize("model", ["llama3.1:8b", "deepseek-chat", "gpt-4o-audio-preview",
                                   "claude-opus-4-7", "", "scripted"])
def test_unknown_models_cost_none_not_zero(model: str) -> None:
    assert cost_usd(model, Usage(input_tokens=100, output_tokens=10)) is None


@pytest.mark.parametrize("family", ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini",
                                    "gpt-5", "gpt-5-mini", "claude-3-5-haiku", "claude-sonnet-4",
                                    "claude-opus-4", "claude-haiku-4-5"])
def test_common_models_are_priced(family: str) -> None:
    cost = cost_usd(family, Usage(input_tokens=1000, output_tokens=1000))
    assert cost is not None and cost > 0


def test_a_configured_price_wins_over_a_bundled_one_already_looked_up() -> None:
    own = ModelPrice(1.0, 2.0)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert price_for("gpt-4o-2024-08-06") == PRICES["gpt-4o"]  # (asked first: the bundled answer is kept)
    assert price_for("gpt-4o-2024-08-06", {"gpt-4o": own}) is own
    assert Price("gpt-4o-2024-08-06", {"GPT-4o": own})(usage) == pytest.approx(3.0)
    assert Price("gpt-4o-2024-08-06")(usage) == pytest.approx(12.5)
    assert price_for("llama3.1:8b") is None and price_for("llama3.1:8b", {"llama3.1:8b": own}) is own
