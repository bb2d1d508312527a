"""Budgets shared by every turn of a run: steps per turn, cost, wall clock and transcript size.

One `Budget` per runtime holds the limits (`Limits`), what has been spent (`Spent`), the price
of the run's model (`Price`) and the run's one clock. Every model request — a step, a
compaction summary, a judge's verdict — is charged through `Budget.charge`, which prices it.
The kernel asks `check_step` before each model call and hands the provider the run's
`deadline`, which no request, retry or wait before one outlives; drivers ask
`check_iteration` between turns. A resumed session starts from what it had spent
(`Spent.recorded`).

A limit that could not be checked is refused before the run starts (`unenforceable_budget`):
`--max-cost` on a model with no price would otherwise never stop anything.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from .events import FinishReason
from .messages import Usage
from .pricing import Price

if TYPE_CHECKING:
    from .settings import LoadedSettings


@dataclass(frozen=True, slots=True)
class Limits:
    """What a run may use: model calls per turn, USD, seconds, transcript messages (None: no limit)."""

    max_steps: int = 100
    max_cost: float | None = None
    max_duration: float | None = None
    max_messages: int = 50_000


@dataclass(frozen=True, slots=True)
class Spent:
    """What has been used so far; `cost` covers only the priced requests when `cost_known` is False."""

    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    cost_known: bool = True

    @classmethod
    def recorded(cls, usage: Usage, cost_usd: float | None, steps: int) -> Spent:
        """What a saved session had spent: its cost is unknown only if a step ran unpriced."""
        return cls(usage=usage, cost=cost_usd or 0.0, cost_known=cost_usd is not None or steps == 0)

    def plus(self, usage: Usage, cost: float | None) -> Spent:
        """This plus more requests (`cost` None: a model with no price, so the total is unknown)."""
        return Spent(usage=self.usage + usage, cost=self.cost + (cost or 0.0),
                     cost_known=self.cost_known and cost is not None)

    @property
    def total_cost(self) -> float | None:
        return self.cost if self.cost_known else None


class Exceeded(NamedTuple):
    """The limit that ends the run, as its finish reason and the detail shown to the user."""

    reason: FinishReason
    detail: str


@dataclass(slots=True)
class Budget:
    """Limits, the running totals they are checked against, the price, and the run's clock
    (`started`: its `time.monotonic()`, by default when the budget is made)."""

    limits: Limits = field(default_factory=Limits)
    spent: Spent = field(default_factory=Spent)
    price: Price = field(default_factory=Price)
    started: float = field(default_factory=time.monotonic)
    # this process's requests per model (not restored on resume): `modelUsage`
    by_model: dict[str, Usage] = field(default_factory=dict)

    def charge(self, usage: Usage, model: str | None = None) -> None:
        """Add one request's usage at the run's price, or at `model`'s (a judge on its own model),
        looked up in the same tables (the user's configured prices first)."""
        price = self.price if model is None else self.price.of(model)
        self.spent = self.spent.plus(usage, price(usage))
        name = price.model or ""
        self.by_model[name] = self.by_model.get(name, Usage()) + usage

    def resumed(self, spent: Spent) -> Budget:
        """This budget (limits, price, clock) starting from what a saved session had spent."""
        return replace(self, spent=spent)

    @property
    def usage(self) -> Usage:
        return self.spent.usage

    @property
    def total_cost(self) -> float | None:
        return self.spent.total_cost

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def remaining_duration(self) -> float | None:
        """Seconds left of --max-duration (negative once over), None without a limit."""
        limit = self.limits.max_duration
        return None if limit is None else limit - self.elapsed()

    def deadline(self) -> float | None:
        """The `time.monotonic()` at which --max-duration runs out, None without a limit: every
        model request of the run (its retries and their waits too) must end by it."""
        limit = self.limits.max_duration
        return None if limit is None else self.started + limit

    def out_of_time(self, why: str) -> Exceeded:
        """The end of a run whose model request met the deadline (`why`: how it met it)."""
        limit = self.limits.max_duration
        return Exceeded(FinishReason.MAX_DURATION, f"ran out of the --max-duration of {limit or 0:g} s: {why}")

    def check_step(self, steps: int, messages: int) -> Exceeded | None:
        """The limit that forbids another model call in a turn that has made `steps` of them."""
        if steps >= self.limits.max_steps:
            return Exceeded(FinishReason.MAX_STEPS, f"reached --max-steps {self.limits.max_steps}")
        return self.check_iteration(messages)

    def check_iteration(self, messages: int) -> Exceeded | None:
        """The limit (cost, wall clock, transcript) that forbids another turn of a driver."""
        limits = self.limits
        if limits.max_cost is not None and self.spent.cost >= limits.max_cost:
            return Exceeded(FinishReason.MAX_COST,
                            f"spent ${self.spent.cost:.4f} of --max-cost ${limits.max_cost:g}")
        if limits.max_duration is not None and self.elapsed() >= limits.max_duration:
            return Exceeded(FinishReason.MAX_DURATION,
                            f"ran for the --max-duration of {limits.max_duration:g} s")
        if messages >= limits.max_messages:
            return Exceeded(FinishReason.TRANSCRIPT_LIMIT, f"the transcript reached {messages} messages")
        return None


def unenforceable_budget(loaded: LoadedSettings, judge_model: str | None = None) -> str | None:
    """Why the settings' `--max-cost` cannot be enforced — the run's model (or the goal judge's
    own model) has no price — as one line telling how to set one; None when it can be."""
    settings = loaded.settings
    if settings.max_cost is None:
        return None
    price = Price(settings.effective_model, settings.prices)
    models = [settings.effective_model] + ([judge_model] if judge_model else [])
    unpriced = next((model for model in models if price.of(model).rate is None), None)
    if unpriced is None:
        return None
    source = loaded.sources.get("max_cost", "flag")
    limit = (f"--max-cost {settings.max_cost:g}" if source == "flag"
             else f"max-cost {settings.max_cost:g} ({source})")
    whose = "the judge model" if unpriced != settings.effective_model else "model"
    return (f"{limit} cannot be enforced: {whose} {unpriced!r} has no price; add a "
            f'[prices."{unpriced}"] table with input and output (USD per million tokens, 0 for a '
            f"local model) to {loaded.home / 'config.toml'} or the workspace's .recursive/config.toml")
