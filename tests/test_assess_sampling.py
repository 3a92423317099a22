"""The sampling plan: what the engine takes after each look, and the policy at the cap."""

from __future__ import annotations

import pytest

from latency_gate.assess.budget.sampling import (
    DEFAULT_PLAN,
    NextStep,
    Phase,
    SamplingPlan,
    next_step,
    resolve,
)
from latency_gate.assess.maths.sequential import Decision


def test_defaults() -> None:
    """9 looks, 500 calls, 20 warm calls or 2 bursts of 10 a look, an undecided check decided
    by its value, an undecided regression not called one."""
    assert (
        SamplingPlan(
            max_calls=500,
            max_looks=9,
            warm_batch=20,
            concurrency=10,
            on_undecided="estimate",
            on_undecided_regression="pass",
        )
        == DEFAULT_PLAN
    )
    assert DEFAULT_PLAN.bursts_per_look == 2


def test_everything_decided_stops() -> None:
    """No undecided check: stop, and say why."""
    step = next_step(DEFAULT_PLAN, looks_done=1, calls_made=31, undecided=[])
    assert step == NextStep(0, 0, "every gated check is decided")
    assert step.stop


def test_undecided_warm_check_takes_warm_calls_only() -> None:
    """An undecided warm p95 adds 20 sequential calls and no burst."""
    step = next_step(
        DEFAULT_PLAN, looks_done=1, calls_made=31, undecided=[("warm_p95", Phase.WARM)]
    )
    assert (step.warm_calls, step.bursts, step.reason) == (20, 0, "undecided: warm_p95")


def test_undecided_concurrent_and_warm_take_both() -> None:
    """Both phases undecided: 20 warm calls and 2 bursts."""
    step = next_step(
        DEFAULT_PLAN,
        looks_done=2,
        calls_made=71,
        undecided=[("warm_p95", Phase.WARM), ("concurrent_p95 regression", Phase.CONCURRENT)],
    )
    assert (step.warm_calls, step.bursts) == (20, 2)


def test_error_rate_alone_spreads_the_calls_left_over_the_looks_left() -> None:
    """After look 2 at 71 calls, 429 calls remain for 7 looks: 6 bursts of 10 now."""
    step = next_step(
        DEFAULT_PLAN, looks_done=2, calls_made=71, undecided=[("error_rate", Phase.ALL)]
    )
    assert (step.warm_calls, step.bursts) == (0, 6)


def test_error_rate_alone_takes_only_what_could_decide_it() -> None:
    """5 more clean calls would pass it: one burst; 47 would: 5 bursts, under 6."""
    pending = [("error_rate", Phase.ALL)]
    step = next_step(
        DEFAULT_PLAN, looks_done=2, calls_made=71, undecided=pending, error_calls_to_pass=5
    )
    assert (step.warm_calls, step.bursts) == (0, 1)
    step = next_step(
        DEFAULT_PLAN, looks_done=2, calls_made=71, undecided=pending, error_calls_to_pass=47
    )
    assert (step.warm_calls, step.bursts) == (0, 5)


def test_the_looks_warm_calls_count_toward_the_error_rate() -> None:
    """Warm p95 and the error rate undecided, 41 clean calls to pass it: the look's 20 warm calls
    count in the error rate too, so 4 bursts of 5 and one more warm call for the other 21, not
    9 bursts for all 41."""
    plan = SamplingPlan(concurrency=5)
    pending = [("warm_p95", Phase.WARM), ("error_rate", Phase.ALL)]
    step = next_step(plan, looks_done=2, calls_made=86, undecided=pending, error_calls_to_pass=41)
    assert (step.warm_calls, step.bursts) == (21, 4)


def test_a_burst_mostly_past_the_error_rates_need_is_a_few_warm_calls() -> None:
    """The error rate alone undecided, 21 clean calls to pass it: 2 bursts of 10 and one warm
    call, not 3 bursts (9 calls past the need); 26: 3 bursts (6 of the last one needed)."""
    pending = [("error_rate", Phase.ALL)]
    step = next_step(
        DEFAULT_PLAN, looks_done=2, calls_made=106, undecided=pending, error_calls_to_pass=21
    )
    assert (step.warm_calls, step.bursts) == (1, 2)
    step = next_step(
        DEFAULT_PLAN, looks_done=2, calls_made=101, undecided=pending, error_calls_to_pass=26
    )
    assert (step.warm_calls, step.bursts) == (0, 3)


def test_the_last_look_stops_undecided() -> None:
    """After 9 looks nothing more is taken, and the reason names what is undecided."""
    step = next_step(
        DEFAULT_PLAN, looks_done=9, calls_made=351, undecided=[("warm_p95", Phase.WARM)]
    )
    assert step.stop
    assert step.reason == "undecided at the cap of 9 looks: warm_p95"


def test_a_step_is_trimmed_to_the_call_cap() -> None:
    """15 calls left: 15 warm calls, no burst; none left: stop at the cap."""
    plan = SamplingPlan(max_calls=100)
    pending = [("warm_p95", Phase.WARM), ("concurrent_p95", Phase.CONCURRENT)]
    step = next_step(plan, looks_done=2, calls_made=85, undecided=pending)
    assert (step.warm_calls, step.bursts) == (15, 0)
    step = next_step(plan, looks_done=2, calls_made=100, undecided=pending)
    assert step.stop
    assert step.reason.startswith("undecided at the cap of 100 calls")


def test_resolve_follows_the_policy_only_when_undecided() -> None:
    """Decided checks keep their outcome; undecided ones follow on_undecided, flagged: by
    default by their value (within the limit or not), else fail or pass whatever it is."""
    lenient = SamplingPlan(on_undecided="pass")
    strict = SamplingPlan(on_undecided="fail")
    assert resolve(Decision.PASS, DEFAULT_PLAN, within=False) == (True, False)
    assert resolve(Decision.FAIL, lenient, within=True) == (False, False)
    assert resolve(Decision.UNDECIDED, DEFAULT_PLAN, within=True) == (True, True)
    assert resolve(Decision.UNDECIDED, DEFAULT_PLAN, within=False) == (False, True)
    assert resolve(Decision.UNDECIDED, strict, within=True) == (False, True)
    assert resolve(Decision.UNDECIDED, lenient, within=False) == (True, True)


def test_bad_plan_is_refused() -> None:
    """A plan without looks is a ValueError."""
    with pytest.raises(ValueError, match="at least 1"):
        SamplingPlan(max_looks=0)
