"""Budget checks: the SPRT on exceedances and failures, cold start, and the budget in words."""

from __future__ import annotations

import math

import pytest

from latency_gate.assess.binomial import binom_cdf
from latency_gate.assess.checks import (
    budget_meaning,
    cold_start_check,
    error_rate_check,
    error_rate_sprt,
    percentile_check,
    percentile_sprt,
)
from latency_gate.assess.sequential import Decision, Sprt, odds_shifted


def test_p95_test_weighs_two_percent_against_twelve() -> None:
    """The p95's shares are 5 % with its odds divided and multiplied by 2.6."""
    test = percentile_sprt(95)
    assert test.p0 == pytest.approx(0.0198413, abs=1e-6)
    assert test.p1 == pytest.approx(0.1203704, abs=1e-6)
    assert (test.alpha, test.beta) == (0.01, 0.05)
    assert odds_shifted(0.05, 1.0) == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("exceedances", "n", "decision"),
    [
        (0, 20, Decision.UNDECIDED),  # 0.88^20 = 0.077 > beta: 20 calls cannot pass a p95
        (0, 27, Decision.UNDECIDED),
        (0, 28, Decision.PASS),
        (1, 45, Decision.UNDECIDED),
        (1, 46, Decision.PASS),
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
    most 5 %, over 5 looks or 30, computed exactly."""
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


def test_error_budget_test_is_half_against_five_times_the_budget() -> None:
    """0.01 gives 0.5 % (healthy) against 5 % (failing): FAIL wrong at most 5 %, PASS 3 %."""
    assert error_rate_sprt(0.01) == Sprt(p0=0.005, p1=0.05, alpha=0.05, beta=0.03)
    assert error_rate_sprt(0.0) is None


@pytest.mark.parametrize(
    ("failed", "calls", "decision"),
    [
        (0, 31, Decision.UNDECIDED),
        (0, 75, Decision.UNDECIDED),
        (0, 76, Decision.PASS),
        (1, 31, Decision.UNDECIDED),
        (2, 31, Decision.FAIL),
        (2, 200, Decision.PASS),
    ],
)
def test_error_rate_decisions(failed: int, calls: int, decision: Decision) -> None:
    """One failure in 31 calls no longer fails the run by itself; two do."""
    assert error_rate_check(failed, calls, 0.01).decision is decision


def test_zero_error_budget_means_no_failure() -> None:
    """A budget of 0: any failure FAILs, none PASSes, both decided at once."""
    assert error_rate_check(1, 500, 0.0).decision is Decision.FAIL
    assert error_rate_check(0, 31, 0.0).decision is Decision.PASS


def test_budget_meaning_in_words() -> None:
    """The sentence the report carries for the default budget at the classic 31 calls."""
    assert budget_meaning(31, 0.01) == (
        "with 31 calls, a budget of 0.01 allows no failure (1 failure is 3.2 %); "
        "the gate passes after 76 calls with no failure and fails from 2 failures at this n"
    )
    assert budget_meaning(300, 0.01).startswith("with 300 calls, a budget of 0.01 allows 3")


def test_llr_is_the_binomial_log_likelihood_ratio() -> None:
    """LLR(k, n) = k ln(p1/p0) + (n-k) ln((1-p1)/(1-p0))."""
    test = Sprt(0.1, 0.3, 0.05, 0.05)
    assert test.llr(2, 10) == pytest.approx(2 * math.log(3) + 8 * math.log(0.7 / 0.9))


def test_calls_to_pass_counts_the_clean_calls_still_needed() -> None:
    """0 of 71 failed: 5 more clean calls pass (76); 1 of 71: 56 more (127); decided: 0."""
    assert error_rate_check(0, 71, 0.01).calls_to_pass == 5
    assert error_rate_check(1, 71, 0.01).calls_to_pass == 56
    assert error_rate_check(0, 80, 0.01).calls_to_pass == 0
    assert error_rate_check(0, 10, 0.0).calls_to_pass == 0
