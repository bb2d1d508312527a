"""The run's Budget: charging (one pricing path), each limit and its message, resume, the clock."""

from __future__ import annotations

import time

import pytest

from recursive_cli.core.budget import Budget, Exceeded, Limits, Spent
from recursive_cli.core.events import FinishReason
from recursive_cli.core.messages import Usage
from recursive_cli.core.pricing import Price, cost_usd

MILLION_IN = Usage(input_tokens=1_000_000)  # $2.50 on gpt-4o, $0.15 on gpt-4o-mini


def test_charge_prices_usage_at_the_runs_model() -> None:
    budget = Budget(price=Price("gpt-4o"))
    budget.charge(MILLION_IN)
    budget.charge(Usage(output_tokens=1_000_000))
    assert budget.usage == Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert budget.total_cost == pytest.approx(2.50 + 10.00)


def test_charge_uses_the_one_pricing_function() -> None:
    usage = Usage(input_tokens=5_000, output_tokens=700, cache_read_tokens=2_000, cache_write_tokens=1_000)
    budget = Budget(price=Price("claude-sonnet-4-20250514"))
    budget.charge(usage)
    assert budget.total_cost == cost_usd("claude-sonnet-4-20250514", usage)


def test_an_unpriced_model_makes_the_cost_unknown_for_good() -> None:
    budget = Budget(price=Price("gpt-4o"))
    budget.charge(MILLION_IN)
    budget.charge(MILLION_IN, model="some-local-model")
    budget.charge(MILLION_IN)
    assert budget.total_cost is None
    assert budget.spent.cost == pytest.approx(5.00)  # what is known still counts toward --max-cost
    assert budget.usage.input_tokens == 3_000_000


def test_a_budget_without_a_price_knows_usage_but_not_cost() -> None:
    budget = Budget()
    assert budget.total_cost == 0.0  # nothing charged yet: known to be zero
    budget.charge(MILLION_IN)
    assert budget.total_cost is None and budget.usage == MILLION_IN


def test_a_judge_on_its_own_model_is_priced_at_that_model() -> None:
    budget = Budget(price=Price("gpt-4o"))
    budget.charge(MILLION_IN, model="gpt-4o-mini")
    assert budget.total_cost == pytest.approx(0.15)


def test_each_limit_and_its_message() -> None:
    assert Budget(Limits(max_steps=3)).check_step(3, 1) == Exceeded(
        FinishReason.MAX_STEPS, "reached --max-steps 3")

    costly = Budget(Limits(max_cost=2), price=Price("gpt-4o"))
    costly.charge(MILLION_IN)
    assert costly.check_step(0, 1) == Exceeded(FinishReason.MAX_COST, "spent $2.5000 of --max-cost $2")

    late = Budget(Limits(max_duration=1.5), started=time.monotonic() - 2)
    assert late.check_step(0, 1) == Exceeded(FinishReason.MAX_DURATION, "ran for the --max-duration of 1.5 s")

    long = Budget(Limits(max_messages=10))
    assert long.check_step(0, 10) == Exceeded(FinishReason.TRANSCRIPT_LIMIT, "the transcript reached 10 messages")


def test_below_every_limit_nothing_is_exceeded() -> None:
    budget = Budget(Limits(max_steps=3, max_cost=2, max_duration=60, max_messages=10), price=Price("gpt-4o"))
    budget.charge(Usage(input_tokens=100_000))
    assert budget.check_step(2, 9) is None
    assert budget.check_iteration(9) is None


def test_an_exceeded_limit_unpacks_as_reason_and_detail() -> None:
    reason, detail = Budget(Limits(max_steps=1)).check_step(1, 1) or ("", "")
    assert reason is FinishReason.MAX_STEPS and detail == "reached --max-steps 1"


def test_steps_count_per_turn_only_between_turns_they_do_not() -> None:
    budget = Budget(Limits(max_steps=1))
    assert budget.check_step(1, 1) is not None
    assert budget.check_iteration(1) is None  # a driver may start another turn


def test_check_iteration_sees_cost_clock_and_transcript() -> None:
    costly = Budget(Limits(max_cost=1), price=Price("gpt-4o"))
    costly.charge(MILLION_IN)
    assert costly.check_iteration(1) == Exceeded(FinishReason.MAX_COST, "spent $2.5000 of --max-cost $1")
    late = Budget(Limits(max_duration=1), started=time.monotonic() - 1)
    assert late.check_iteration(1) == Exceeded(FinishReason.MAX_DURATION, "ran for the --max-duration of 1 s")
    assert Budget(Limits(max_messages=5)).check_iteration(7) == Exceeded(
        FinishReason.TRANSCRIPT_LIMIT, "the transcript reached 7 messages")


def test_cost_is_checked_before_the_clock_and_the_transcript() -> None:
    budget = Budget(Limits(max_cost=1, max_duration=1, max_messages=1), price=Price("gpt-4o"),
                    started=time.monotonic() - 5)
    budget.charge(MILLION_IN)
    assert budget.check_iteration(3) == Exceeded(FinishReason.MAX_COST, "spent $2.5000 of --max-cost $1")


def test_resume_restores_what_the_session_spent() -> None:
    budget = Budget(Limits(max_cost=1), price=Price("gpt-4o"), started=123.0)
    resumed = budget.resumed(Spent.recorded(Usage(input_tokens=400_000), 1.0, steps=4))
    assert resumed.limits == budget.limits and resumed.price == budget.price
    assert resumed.started == 123.0  # the same clock
    assert resumed.total_cost == 1.0 and resumed.usage.input_tokens == 400_000
    assert resumed.check_iteration(1) == Exceeded(FinishReason.MAX_COST, "spent $1.0000 of --max-cost $1")
    resumed.charge(Usage(input_tokens=100_000))
    assert resumed.total_cost == pytest.approx(1.25)


def test_a_session_whose_cost_was_unknown_stays_unknown() -> None:
    spent = Spent.recorded(Usage(input_tokens=10), None, steps=2)
    assert spent.total_cost is None
    budget = Budget(price=Price("gpt-4o")).resumed(spent)
    budget.charge(MILLION_IN)
    assert budget.total_cost is None


def test_a_session_with_no_steps_has_a_known_cost() -> None:
    assert Spent.recorded(Usage(), None, steps=0).total_cost == 0.0


def test_elapsed_and_remaining_come_from_one_start() -> None:
    budget = Budget(Limits(max_duration=60), started=time.monotonic() - 10)
    assert 10 <= budget.elapsed() < 11
    remaining = budget.remaining_duration()
    assert remaining is not None and 49 < remaining <= 50
    assert Budget().remaining_duration() is None  # no --max-duration
    over = Budget(Limits(max_duration=1), started=time.monotonic() - 3).remaining_duration()
    assert over is not None and over < 0  # over the limit: negative, callers clamp


def test_limits_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Limits().max_steps = 5  # type: ignore[misc]


def test_price_prices_nothing_without_a_model() -> None:
    assert Price()(MILLION_IN) is None
    assert Price("gpt-4o")(MILLION_IN) == pytest.approx(2.50)
    assert Price("not-a-model")(MILLION_IN) is None
