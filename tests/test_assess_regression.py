"""Baseline regressions tested on the gated percentile, and the error rate against base's."""

from __future__ import annotations

import math
import random

import pytest

from latency_gate.assess.regression import (
    Regression,
    error_rate_regression,
    percentile_regression,
)
from latency_gate.assess.resampling import bootstrap, deals, seed_from


def _lognormal(seed: int, n: int, sigma: float = 0.25, scale: float = 1.0) -> list[float]:
    rng = random.Random(seed)
    return [scale * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


def test_same_data_gives_the_same_interval() -> None:
    """The resampling is seeded from the values: two calls agree to the last digit."""
    head, base = _lognormal(1, 60), _lognormal(2, 40)
    first = percentile_regression(head, base, 95)
    assert first is not None
    assert first == percentile_regression(list(head), list(base), 95)
    assert seed_from(head, base) != seed_from(base, head)


def test_three_times_slower_everywhere_is_regressed() -> None:
    """head = 3 x base, 100 calls each: ratio exactly 3, its interval holds 3 and clears 1.1."""
    base = _lognormal(3, 100)
    result = percentile_regression([3 * v for v in base], base, 95)
    assert result is not None
    assert result.ratio == pytest.approx(3.0)
    low, high = result.ratio_interval.as_list()
    assert low is not None
    assert high is not None
    assert 1.1 < low < 3.0 < high
    assert result.outcome is Regression.REGRESSED


def test_unchanged_with_many_calls_is_not_regressed() -> None:
    """The same endpoint, 100 calls a side at sigma 0.1: shown within the 10 % limit."""
    result = percentile_regression(_lognormal(4, 100, 0.1), _lognormal(5, 100, 0.1), 95)
    assert result is not None
    assert result.outcome is Regression.NOT_REGRESSED
    assert result.decided


def test_a_small_sample_leaves_a_large_change_undecided() -> None:
    """+30 % with 20 calls a side at sigma 0.5 cannot be told either way."""
    result = percentile_regression(_lognormal(6, 20, 0.5, 1.3), _lognormal(7, 20, 0.5), 95)
    assert result is not None
    assert result.outcome is Regression.UNDECIDED


def test_both_limits_must_be_exceeded() -> None:
    """+50 % but only +30 ms: beyond 10 % yet within 200 ms, so not regressed."""
    base = _lognormal(8, 100, 0.1, 0.05)
    head = [1.5 * v for v in base]
    relative_only = percentile_regression(head, base, 95, max_relative=0.10)
    both = percentile_regression(head, base, 95, max_relative=0.10, max_absolute=0.2)
    assert relative_only is not None
    assert both is not None
    assert relative_only.outcome is Regression.REGRESSED
    assert both.outcome is Regression.NOT_REGRESSED
    assert both.difference_interval.low is not None


def test_too_few_calls_is_none() -> None:
    """One call on a side: nothing to resample."""
    assert percentile_regression([1.0], [1.0, 2.0], 95) is None


def test_permutation_deals_match_a_full_shuffle() -> None:
    """The walk-from-the-top split has the same distribution as numpy's full permutations."""
    np = pytest.importorskip("numpy")
    pool = _lognormal(9, 120)
    fast = deals(list(pool), 100, 95, random.Random(1), 4000, log=True)
    rng = np.random.default_rng(1)
    values = np.array(pool)
    full = sorted(
        math.log(np.percentile(p[:100], 95) / np.percentile(p[100:], 95))
        for p in (rng.permutation(values) for _ in range(4000))
    )
    for share in (0.025, 0.5, 0.975):
        index = int(share * 4000)
        assert fast[index] == pytest.approx(full[index], abs=0.02)


def test_bootstrap_draws_match_numpy_resampling() -> None:
    """The order-statistic bootstrap of the p95 matches resampling whole samples with numpy."""
    np = pytest.importorskip("numpy")
    head, base = _lognormal(10, 40), _lognormal(11, 30)
    fast = bootstrap(head, base, 95, random.Random(2), 4000, log=True)
    rng = np.random.default_rng(2)
    h, b = np.array(head), np.array(base)
    full = sorted(
        math.log(
            np.percentile(rng.choice(h, h.size), 95) / np.percentile(rng.choice(b, b.size), 95)
        )
        for _ in range(4000)
    )
    for share in (0.025, 0.5, 0.975):
        index = int(share * 4000)
        assert fast[index] == pytest.approx(full[index], abs=0.03)


def test_error_rate_with_no_failure_anywhere_is_not_regressed() -> None:
    """0 and 0 failures: nothing to compare, said in a note."""
    result = error_rate_regression(0, 100, 0, 100)
    assert result.outcome is Regression.NOT_REGRESSED
    assert result.note == "no failure on either side"
    assert result.ratio_interval.as_list() == [None, None]


def test_error_rate_ratio_interval_is_exact() -> None:
    """20 of 100 against 0 of 100: head holds all 20 failures, so the 95 % lower bound of
    head's share is 0.025^(1/20) and of the ratio that over its complement; no upper bound."""
    result = error_rate_regression(20, 100, 0, 100)
    share = 0.025 ** (1 / 20)
    assert result.ratio_interval.low == pytest.approx(share / (1 - share), rel=1e-6)
    assert result.ratio_interval.high is None
    assert result.outcome is Regression.REGRESSED


def test_error_rate_one_failure_each_is_undecided() -> None:
    """1 of 100 against 1 of 100: the ratio could be anything from 0.03 to 39."""
    assert error_rate_regression(1, 100, 1, 100).outcome is Regression.UNDECIDED
