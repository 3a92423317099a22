"""Exact binomial arithmetic, order-statistic intervals and Clopper-Pearson bounds.

Expected values were computed with scipy.stats (binom, beta) and by hand; scipy is used here
only to cross-check, never by latency_gate itself.
"""

from __future__ import annotations

import math

import pytest

from latency_gate.assess.maths.binomial import (
    binom_cdf,
    binom_sf,
    clopper_pearson,
    order_statistic_ranks,
)
from latency_gate.assess.maths.intervals import (
    error_rate_interval,
    linear_percentile,
    percentile_interval,
)


def test_binomial_tails_match_scipy() -> None:
    """P(X <= 0) for 31 calls at 1 % is 0.99^31; P(X >= 3) of Binomial(40, 0.05) is 0.32326."""
    assert binom_cdf(0, 31, 0.01) == pytest.approx(0.99**31, rel=1e-12)
    assert binom_sf(3, 40, 0.05) == pytest.approx(0.3232642392513527, rel=1e-9)
    assert binom_cdf(-1, 5, 0.5) == 0.0
    assert binom_sf(6, 5, 0.5) == 0.0


def test_clopper_pearson_one_failure_in_31() -> None:
    """1 of 31: [0.000816, 0.167], scipy.stats.beta.ppf(0.025, 1, 31) and ppf(0.975, 2, 30)."""
    low, high = clopper_pearson(1, 31)
    assert low == pytest.approx(0.000816370071846613, rel=1e-7)
    assert high == pytest.approx(0.16702111623022772, rel=1e-7)


def test_clopper_pearson_no_failure_has_closed_form_upper_bound() -> None:
    """0 of n: lower bound 0, upper bound 1 - 0.025^(1/n) (the rule of three's exact form)."""
    low, high = clopper_pearson(0, 31)
    assert (low, high) == pytest.approx((0.0, 1 - 0.025 ** (1 / 31)), rel=1e-9)
    low, high = clopper_pearson(31, 31)
    assert (low, high) == pytest.approx((0.025 ** (1 / 31), 1.0), rel=1e-9)


def test_clopper_pearson_refuses_impossible_counts() -> None:
    """k outside 0..n is a ValueError, not a silent bound."""
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(5, 4)


@pytest.mark.parametrize(
    ("n", "q", "ranks"),
    [
        (20, 0.95, (17, None)),  # 1 - 0.95^20 = 0.64 < 0.975: no upper bound at 20 calls
        (71, 0.95, (63, None)),
        (72, 0.95, (64, 72)),  # 1 - 0.95^72 = 0.9751: the first n with an upper bound
        (100, 0.95, (90, 100)),
        (20, 0.5, (6, 15)),  # the textbook 95 % interval of a median of 20
        (5, 0.5, (None, None)),  # 2 x 0.5^5 = 0.0625 > 0.05: even [min, max] is not 95 %
    ],
)
def test_order_statistic_ranks(n: int, q: float, ranks: tuple[int | None, int | None]) -> None:
    """The ranks of the distribution-free 95 % interval, checked against Binomial(n, q) tails."""
    assert order_statistic_ranks(n, q) == ranks


def test_order_statistic_ranks_cover_at_least_the_level() -> None:
    """Each side found misses the quantile with probability at most 2.5 %, and one rank
    further in would miss it more often (the ranks are the tightest)."""
    for n in (30, 59, 100, 250):
        low, high = order_statistic_ranks(n, 0.95)
        assert low is not None
        assert binom_cdf(low - 1, n, 0.95) <= 0.025 < binom_cdf(low, n, 0.95)
        if high is not None:
            assert binom_sf(high, n, 0.95) <= 0.025 < binom_sf(high - 1, n, 0.95)


def test_percentile_interval_of_twenty_calls() -> None:
    """1..20 seconds: p95 is 19.05 (numpy linear), its interval [17, unknown]."""
    values = [float(v) for v in range(20, 0, -1)]
    assert linear_percentile(values, 95) == pytest.approx(19.05)
    interval = percentile_interval(values, 95)
    assert interval.as_list() == [17.0, None]
    assert interval.level == 0.95


def test_percentile_interval_of_no_values_is_empty() -> None:
    """No calls: both sides None, no exception."""
    assert percentile_interval([], 95).as_list() == [None, None]


def test_error_rate_interval_says_k_of_n_and_the_upper_bound() -> None:
    """The sentence the reports show: counts, share, and the exact 95 % upper bound."""
    summary = error_rate_interval(1, 31)
    assert summary.describe() == "1 of 31 calls failed (3.2 %); 95 % upper bound 16.7 %"
    assert summary.rate == pytest.approx(1 / 31)
    assert error_rate_interval(0, 0).interval.as_list() == [None, None]


@pytest.mark.slow
def test_clopper_pearson_upper_bound_matches_beta_quantile_for_many_counts() -> None:
    """Against scipy's beta quantiles for k = 0..10 of 200 calls (both sides, 1e-7)."""
    beta = pytest.importorskip("scipy.stats").beta
    for k in range(11):
        low, high = clopper_pearson(k, 200)
        expected_low = 0.0 if k == 0 else float(beta.ppf(0.025, k, 200 - k + 1))
        assert low == pytest.approx(expected_low, abs=1e-9)
        assert high == pytest.approx(float(beta.ppf(0.975, k + 1, 200 - k)), rel=1e-7)
        assert not math.isnan(high)
