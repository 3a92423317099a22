"""Budget checks: the SPRT on exceedances and failures, cold start, and the budget in words."""

from __future__ import annotations

import math

import pytest

from latency_gate.assess.budget.checks import (
    budget_meaning,
    cold_start_check,
    error_rate_check,
    error_rate_sprt,
    percentile_check,
    percentile_sprt,
)
from latency_gate.assess.maths.binomial import binom_cdf
from latency_gate.assess.maths.sequential import Decision, Sprt, odds_shifted


def test_p95_test_weighs_two_percent_against_twelve() -> None:
    """The p95's shares are 5 % with its odds divided and multiplied by 2.6; FAIL wrong at most
    1 %, PASS at most 3 %."""
    test = percentile_sprt(95)
    assert test.p0 == pytest.approx(0.0198413, abs=1e-6)
    assert test.p1 == pytest.approx(0.1203704, abs=1e-6)
    assert (test.alpha, test.beta) == (0.01, 0.03)
    assert odds_shifted(0.05, 1.0) == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("exceedances", "n", "decision"),
    [
        (0, 20, Decision.UNDECIDED),  # 0.88^20 = 0.077 > beta: 20 calls cannot pass a p95
        (0, 32, Decision.UNDECIDED),  # 32 ln(0.8796 / 0.9802) = -3.465 > ln(0.03) = -3.507
        (0, 33, Decision.PASS),
        (1, 50, Decision.UNDECIDED),  # 1.8028 - 49 x 0.10829 = -3.503
        (1, 51, Decision.PASS),  # 1.8028 - 50 x 0.10829 = -3.612
        (3, 20, Decision.UNDECIDED),
        (4, 20, Decision.FAIL),
        (3, 3, Decision.FAIL),
        (9, 100, Decision.FAIL),
        (8, 100, Decision.UNDECIDED),
    ],
)
def test_p95_decisions_by_count(exceedances: int, n: int, decision: Decision) -> None:
    """Where the p95 check passes and fails, counted by hand from the log likelihood ratio."""
    assert percentile_sprt(95).decide(exceedances, n) is decision


def _ever_crosses(test: Sprt, p: float, looks: list[int], side: Decision) -> float:
    """Exact P(the test reaches `side` at one of `looks`) for true share p (dynamic program)."""
    alive = {0: 1.0}
    previous = 0
    crossed = 0.0
    for n in looks:
        step = n - previous
        grown: dict[int, float] = {}
        for k, weight in alive.items():
            for j in range(step + 1):
                pmf = binom_cdf(j, step, p) - binom_cdf(j - 1, step, p)
                grown[k + j] = grown.get(k + j, 0.0) + weight * pmf
        alive = {}
        for k, weight in grown.items():
            decision = test.decide(k, n)
            if decision is side:
                crossed += weight
            elif decision is Decision.UNDECIDED:
                alive[k] = weight
        previous = n
    return crossed


def test_error_rates_hold_across_looks() -> None:
    """Ville's bound: at p0 the p95 check FAILs at most 1 % of the time and at p1 PASSes at
    most 3 %, over 5 looks or 30, computed exactly."""
    test = percentile_sprt(95)
    for looks in ([20, 40, 60, 80, 100], list(range(10, 310, 10))):
        assert _ever_crosses(test, test.p0, looks, Decision.FAIL) <= test.alpha
        assert _ever_crosses(test, test.p1, looks, Decision.PASS) <= test.beta


def test_percentile_check_counts_calls_over_the_limit() -> None:
    """Calls at the limit are within it; only those over count, and the value is numpy's."""
    values = [1.0] * 36 + [3.0] * 2 + [3.5, 4.0]
    check = percentile_check(values, 95, 3.0)
    assert (check.n, check.exceedances, check.decision) == (40, 2, Decision.UNDECIDED)
    assert check.value == pytest.approx(3.025)
    assert check.interval.as_list() == [1.0, None]  # x(36) of 40: ranks (36, None)
    assert not check.decided


def test_percentile_check_without_values_fails() -> None:
    """No successful call in the phase: FAIL, decided, as "no data" is today."""
    check = percentile_check([], 95, 3.0)
    assert check.decision is Decision.FAIL
    assert check.value is None


def test_cold_start_is_decided_on_its_one_call() -> None:
    """Cold start passes at or under its limit, fails over it or without data; no interval."""
    assert cold_start_check(2.0, 2.0).decision is Decision.PASS
    assert cold_start_check(2.1, 2.0).decision is Decision.FAIL
    assert cold_start_check(None, 2.0).decision is Decision.FAIL
    assert cold_start_check(1.0, 2.0).interval.as_list() == [None, None]


def test_error_budget_test_is_half_against_three_times_the_budget() -> None:
    """0.01 gives 0.5 % (healthy) against 3 % (failing): FAIL wrong at most 2 %, PASS 4 %."""
    assert error_rate_sprt(0.01) == Sprt(p0=0.005, p1=0.03, alpha=0.02, beta=0.04)
    assert error_rate_sprt(0.0) is None


@pytest.mark.parametrize(
    ("failed", "calls", "decision"),
    [
        (0, 31, Decision.UNDECIDED),
        (0, 126, Decision.UNDECIDED),  # 126 ln(0.97 / 0.995) = -3.206 > ln(0.04) = -3.219
        (0, 127, Decision.PASS),
        (2, 31, Decision.UNDECIDED),
        (3, 31, Decision.FAIL),  # 3 x 1.7918 - 28 x 0.025447 = 4.663 >= ln(1 / 0.02) = 3.912
        (1, 200, Decision.PASS),
        (2, 200, Decision.UNDECIDED),  # 1 % is no PASS at this n: 3 % is not ruled out yet
    ],
)
def test_error_rate_decisions(failed: int, calls: int, decision: Decision) -> None:
    """Two failures in 31 calls no longer fail the run by themselves; three do; a PASS needs
    127 clean calls."""
    assert error_rate_check(failed, calls, 0.01).decision is decision


def test_zero_error_budget_means_no_failure() -> None:
    """A budget of 0: any failure FAILs, none PASSes, both decided at once."""
    assert error_rate_check(1, 500, 0.0).decision is Decision.FAIL
    assert error_rate_check(0, 31, 0.0).decision is Decision.PASS


def test_budget_meaning_in_words() -> None:
    """The sentence the report carries describes the rule that is used, at this n."""
    assert budget_meaning(31, 0.01) == (
        "error budget 1.0 %: at 31 calls, 3 failures not in a row fail the run; with fewer, it "
        "passes once enough calls rule out 3.0 % failing or more (127 calls without a failure, "
        "more with some)"
    )
    assert budget_meaning(300, 0.01).startswith(
        "error budget 1.0 %: at 300 calls, 7 failures not in a row fail the run;"
    )
    assert budget_meaning(1, 0.01).startswith(
        "error budget 1.0 %: at 1 call, no count of failures fails the run yet; it passes once"
    )
    assert budget_meaning(31, 0.0) == "a budget of 0 allows no failure: one failure fails the run"


def test_budget_meaning_of_a_tiny_budget_is_quick() -> None:
    """A budget of 1e-9 (a thousand million clean calls) is worded without counting them one by
    one (it took forever, and ended in a traceback)."""
    assert "(1,287,550,337 calls without a failure" in budget_meaning(31, 1e-9)


def test_llr_is_the_binomial_log_likelihood_ratio() -> None:
    """LLR(k, n) = k ln(p1/p0) + (n-k) ln((1-p1)/(1-p0))."""
    test = Sprt(0.1, 0.3, 0.05, 0.05)
    assert test.llr(2, 10) == pytest.approx(2 * math.log(3) + 8 * math.log(0.7 / 0.9))


def test_calls_to_pass_counts_the_clean_calls_still_needed() -> None:
    """0 of 71 failed: 56 more clean calls pass (127); 1 of 71: 127 more (198); decided: 0."""
    assert error_rate_check(0, 71, 0.01).calls_to_pass == 56
    assert error_rate_check(1, 71, 0.01).calls_to_pass == 127
    assert error_rate_check(0, 127, 0.01).calls_to_pass == 0
    assert error_rate_check(0, 10, 0.0).calls_to_pass == 0
    assert error_rate_check(0, 31, 1e-9).calls_to_pass == 1_287_550_337 - 31


@pytest.mark.slow
def test_event_bounds_match_the_decisions() -> None:
    """The closed-form bounds agree with deciding count by count, at every n to 600."""
    for test in (percentile_sprt(95), percentile_sprt(50), error_rate_sprt(0.01)):
        assert test is not None
        for n in range(1, 601):
            passing = [k for k in range(n + 1) if test.decide(k, n) is Decision.PASS]
            failing = [k for k in range(n + 1) if test.decide(k, n) is Decision.FAIL]
            assert test.max_events_to_pass(n) == (max(passing) if passing else None)
            assert test.min_events_to_fail(n) == (min(failing) if failing else None)
