"""Regressions against a baseline run, tested on the number that is gated.

For a percentile (warm p95, concurrent p95, ...) the null hypothesis is "head is worse than base
by at most the limit": head_pq <= base_pq x (1 + max_relative) (and/or head_pq - base_pq <=
max_absolute; with both given, a regression must exceed both, as before). The test is a
permutation test of the percentile itself:

1. Estimate the ratio r = head_pq / base_pq (numpy-linear percentiles, the reported numbers).
2. Scale head's calls by base's median over head's (so the bulk of both samples lines up while
   a change in the tail alone stays in), pool them, and deal the pool out again at random many
   times (seeded from the data, so a run is reproducible); each deal gives
   ln(pq(head*)) - ln(pq(base*)): the spread the ratio shows from the luck of the draw alone,
   with the exact sample sizes and the same percentile rule (its small-sample bias included).
3. The interval on ln r is [ln r - upper quantile, ln r - lower quantile] of those deals; the
   absolute difference works the same way with a shift by the medians' difference.
   (Lining up the percentiles themselves instead of the medians would pin the pooled tail and
   shrink the spread several times over: tried, and rejected for it.)

Outcome: REGRESSED when the whole decision interval is beyond the limit, NOT_REGRESSED when it is
all within, UNDECIDED otherwise. Decisions use one-sided `alpha` per side and look (the caller
divides the overall alpha by the number of looks: Bonferroni); the reported interval is 95 %.

The error rate is compared by the exact conditional test for two counts (given the total number
of failures, head's share of them is binomial), inverted into an interval on the rate ratio.
"""

from __future__ import annotations

import hashlib
import math
import random
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from latency_gate.assess.binomial import clopper_pearson
from latency_gate.assess.intervals import LEVEL, Interval, linear_percentile

__all__ = [
    "DEFAULT_RELATIVE",
    "PERMUTATIONS",
    "REGRESSION_ALPHA",
    "ErrorRateRegression",
    "PercentileRegression",
    "Regression",
    "error_rate_regression",
    "percentile_regression",
]

DEFAULT_RELATIVE = 0.10
# Overall one-sided error per number and side; divided by the looks (sampling.MAX_LOOKS).
REGRESSION_ALPHA = 0.02
PERMUTATIONS = 999


class Regression(StrEnum):
    """A baseline comparison's outcome for one number."""

    REGRESSED = "regressed"
    NOT_REGRESSED = "not regressed"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class PercentileRegression:
    """The q-th percentile of head against base."""

    q: float
    base: float
    head: float
    ratio: float | None  # head / base; None when base's percentile is 0
    ratio_interval: Interval  # 95 %
    difference: float  # head - base, in seconds
    difference_interval: Interval  # 95 %
    outcome: Regression
    alpha: float  # one-sided, per side, at this look

    @property
    def decided(self) -> bool:
        return self.outcome is not Regression.UNDECIDED


def _seed(*samples: Sequence[float]) -> int:
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(struct.pack(f"<q{len(sample)}d", len(sample), *sample))
    return int.from_bytes(digest.digest()[:8], "little")


def _pq(values: Sequence[float], q: float) -> float:
    value = linear_percentile(values, q)
    if value is None:
        raise ValueError("no values")
    return value


def _median(values: Sequence[float]) -> float:
    return _pq(values, 50)


def _tail_index(count: int, share: float) -> int:
    """0-based index of the conservative `share` quantile among `count` sorted deals."""
    return max(0, min(count - 1, math.floor(share * (count + 1)) - 1))


def _deals(
    pool: list[float], n_head: int, q: float, rng: random.Random, permutations: int, *, log: bool
) -> list[float]:
    """Sorted statistic pq(head*) - pq(base*) (of logs when `log`) over random re-deals."""
    out: list[float] = []
    for _ in range(permutations):
        rng.shuffle(pool)
        head_q = _pq(pool[:n_head], q)
        base_q = _pq(pool[n_head:], q)
        out.append(math.log(head_q / base_q) if log else head_q - base_q)
    out.sort()
    return out


def _bounds(estimate: float, deals: list[float], tail: float) -> tuple[float, float]:
    """Inverted: [estimate - upper deal quantile, estimate - lower deal quantile]."""
    low = estimate - deals[len(deals) - 1 - _tail_index(len(deals), tail)]
    high = estimate - deals[_tail_index(len(deals), tail)]
    return low, high


def percentile_regression(
    head: Sequence[float],
    base: Sequence[float],
    q: float,
    *,
    max_relative: float | None = None,
    max_absolute: float | None = None,
    alpha: float = REGRESSION_ALPHA / 5,
    permutations: int = PERMUTATIONS,
) -> PercentileRegression | None:
    """Test "head's q-th percentile is worse than base's by at most the limit".

    `head` and `base` are successful calls' latencies (seconds) of the number's phase. With
    neither limit given, max_relative is DEFAULT_RELATIVE. Returns None when either side has
    fewer than 2 values (nothing to deal). Deterministic: the shuffles are seeded from the data.
    """
    if len(head) < 2 or len(base) < 2:
        return None
    if max_relative is None and max_absolute is None:
        max_relative = DEFAULT_RELATIVE
    head_q = _pq(head, q)
    base_q = _pq(base, q)
    rng = random.Random(_seed(head, base))
    tail95 = (1 - LEVEL) / 2

    ratio: float | None = None
    ratio_interval = Interval(None, None, method="permutation (ratio undefined: base is 0)")
    ratio_bounds: tuple[float, float] | None = None
    if base_q > 0 and head_q > 0 and min(head) > 0 and min(base) > 0:
        ratio = head_q / base_q
        scale = _median(head) / _median(base)
        pool = [*(v / scale for v in head), *base]
        deals = _deals(pool, len(head), q, rng, permutations, log=True)
        low95, high95 = _bounds(math.log(ratio), deals, tail95)
        ratio_interval = Interval(math.exp(low95), math.exp(high95), method="permutation")
        low, high = _bounds(math.log(ratio), deals, alpha)
        ratio_bounds = (math.exp(low), math.exp(high))

    difference = head_q - base_q
    difference_bounds: tuple[float, float] | None = None
    difference_interval = Interval(None, None, method="permutation")
    if max_absolute is not None or ratio_bounds is None:
        shift = _median(head) - _median(base)
        pool = [*(v - shift for v in head), *base]
        deals = _deals(pool, len(head), q, rng, permutations, log=False)
        low95, high95 = _bounds(difference, deals, tail95)
        difference_interval = Interval(low95, high95, method="permutation")
        difference_bounds = _bounds(difference, deals, alpha)

    outcome = _outcome(ratio_bounds, difference_bounds, max_relative, max_absolute)
    return PercentileRegression(
        q=q,
        base=base_q,
        head=head_q,
        ratio=ratio,
        ratio_interval=ratio_interval,
        difference=difference,
        difference_interval=difference_interval,
        outcome=outcome,
        alpha=alpha,
    )


def _outcome(
    ratio: tuple[float, float] | None,
    difference: tuple[float, float] | None,
    max_relative: float | None,
    max_absolute: float | None,
) -> Regression:
    beyond: list[bool] = []
    within: list[bool] = []
    if max_relative is not None:
        if ratio is None:
            return Regression.UNDECIDED
        beyond.append(ratio[0] > 1 + max_relative)
        within.append(ratio[1] <= 1 + max_relative)
    if max_absolute is not None and difference is not None:
        beyond.append(difference[0] > max_absolute)
        within.append(difference[1] <= max_absolute)
    if beyond and all(beyond):
        return Regression.REGRESSED
    if any(within):
        return Regression.NOT_REGRESSED
    return Regression.UNDECIDED


@dataclass(frozen=True)
class ErrorRateRegression:
    """Head's failure share against base's: k of n each, and the rate ratio head / base."""

    head_failed: int
    head_calls: int
    base_failed: int
    base_calls: int
    ratio_interval: Interval  # 95 %; None sides when there is no failure at all
    outcome: Regression
    note: str = ""


def error_rate_regression(
    head_failed: int,
    head_calls: int,
    base_failed: int,
    base_calls: int,
    *,
    max_relative: float = DEFAULT_RELATIVE,
    alpha: float = REGRESSION_ALPHA / 5,
) -> ErrorRateRegression:
    """Test "head's failure share <= base's x (1 + max_relative)".

    Given m failures in all, head's count is Binomial(m, pi) with pi = rho n_h / (rho n_h + n_b)
    for a rate ratio rho (exact in the Poisson limit of rare failures); the Clopper-Pearson
    interval of pi maps to one on rho. With no failure on either side there is nothing to compare:
    NOT_REGRESSED with a note (the error budget guards the level itself).
    """
    if head_calls <= 0 or base_calls <= 0:
        raise ValueError("both runs need at least one call")
    total = head_failed + base_failed
    if total == 0:
        return ErrorRateRegression(
            head_failed,
            head_calls,
            base_failed,
            base_calls,
            Interval(None, None, method="exact conditional (no failure on either side)"),
            Regression.NOT_REGRESSED,
            note="no failure on either side",
        )

    def to_ratio(share: float) -> float | None:
        if share >= 1.0:
            return None
        return share * base_calls / ((1.0 - share) * head_calls)

    low95, high95 = clopper_pearson(head_failed, total, LEVEL)
    interval = Interval(to_ratio(low95), to_ratio(high95), method="exact conditional")
    low, high = clopper_pearson(head_failed, total, 1 - 2 * alpha)
    ratio_low, ratio_high = to_ratio(low), to_ratio(high)
    limit = 1 + max_relative
    if ratio_low is not None and ratio_low > limit:
        outcome = Regression.REGRESSED
    elif ratio_high is not None and ratio_high <= limit:
        outcome = Regression.NOT_REGRESSED
    else:
        outcome = Regression.UNDECIDED
    return ErrorRateRegression(head_failed, head_calls, base_failed, base_calls, interval, outcome)
