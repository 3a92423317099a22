"""Regressions against a baseline run, tested on the number that is gated.

For a percentile (warm p95, concurrent p95, ...) the null hypothesis is "head is worse than base
by at most the limit": head_pq <= base_pq x (1 + max_relative) (and/or head_pq - base_pq <=
max_absolute; with both given, a regression must exceed both, as before).

The decision is an exact permutation test of the percentile itself, at the limit: head's calls
are brought back by the limit (divided by 1 + max_relative, or less max_absolute), both runs'
calls are pooled and dealt out again at random (seeded from the data, so a run is
reproducible), and the observed ln(pq(head)) - ln(pq(base)) is compared with the deals'.
REGRESSED when at most `alpha` of deals are as high, NOT_REGRESSED when at most `alpha` are as
low, UNDECIDED otherwise. `alpha` is one-sided per side and look: the caller divides the overall
alpha by the number of looks (Bonferroni; SamplingPlan.regression_alpha). The test is exact when
head is base scaled by the limit; docs/statistics.md measures it on other shapes.

The reported 95 % interval of the ratio comes from the same kind of deals with the medians
lined up (so a change in the tail alone stays in the spread), inverted as
[ln r - upper quantile, ln r - lower quantile]: approximate, shown for the reader; the decision
is the test above. (Lining up the percentiles instead would pin the pooled tail and shrink the
spread several times over; deciding from this interval was 4-5x over its level: both rejected.)
`method="bootstrap"` / `"bootstrap-basic"` decide from a bootstrap interval instead; they are
kept for bench/statsim.py's comparison and are not the default.

The error rate is compared by the exact conditional test for two counts (given the total number
of failures, head's share of them is binomial), inverted into an interval on the rate ratio.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from latency_gate.assess.binomial import clopper_pearson
from latency_gate.assess.intervals import LEVEL, Interval
from latency_gate.assess.resampling import (
    Method,
    bootstrap,
    deals,
    pq,
    seed_from,
    spread_bounds,
    statistic,
)

__all__ = [
    "DEFAULT_RELATIVE",
    "METHOD",
    "REGRESSION_ALPHA",
    "RESAMPLES",
    "ErrorRateRegression",
    "PercentileRegression",
    "Regression",
    "error_rate_regression",
    "percentile_regression",
]

DEFAULT_RELATIVE = 0.10
# Overall one-sided error per number and side; divided by the looks (sampling.MAX_LOOKS).
REGRESSION_ALPHA = 0.02
RESAMPLES = 999
METHOD: Method = "permutation"


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


def percentile_regression(
    head: Sequence[float],
    base: Sequence[float],
    q: float,
    *,
    max_relative: float | None = None,
    max_absolute: float | None = None,
    alpha: float = REGRESSION_ALPHA / 5,
    method: Method = METHOD,
    resamples: int = RESAMPLES,
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
    head_q, base_q = pq(head, q), pq(base, q)
    rng = random.Random(seed_from(head, base))
    tail95 = (1 - LEVEL) / 2

    def spread(*, log: bool) -> list[float]:
        if method != "permutation":
            return bootstrap(head, base, q, rng, resamples, log=log)
        # Line the bulk up (medians), not the percentiles: lining up the percentiles pins the
        # pooled tail and shrinks the spread several times over (tried, rejected for it).
        if log:
            scale = pq(head, 50) / pq(base, 50)
            pool = [*(v / scale for v in head), *base]
        else:
            shift = pq(head, 50) - pq(base, 50)
            pool = [*(v - shift for v in head), *base]
        return deals(pool, len(head), q, rng, resamples, log=log)

    ratio: float | None = None
    ratio_interval = Interval(None, None, method=f"{method} (undefined: a value is 0)")
    verdicts: list[tuple[bool, bool]] = []  # (beyond, within) per limit given
    positive = min(head) > 0 and min(base) > 0
    if positive:
        ratio = head_q / base_q
        values = spread(log=True)
        low95, high95 = spread_bounds(math.log(ratio), values, tail95, method)
        ratio_interval = Interval(math.exp(low95), math.exp(high95), method=method)
    if max_relative is not None:
        if ratio is None:
            verdicts.append((False, False))
        elif method == "permutation":
            verdicts.append(
                _boundary_test(
                    head, base, q, rng=rng, resamples=resamples, alpha=alpha, limit=1 + max_relative
                )
            )
        else:
            low, high = spread_bounds(math.log(ratio), values, alpha, method)
            limit = math.log(1 + max_relative)
            verdicts.append((low > limit, high <= limit))

    difference = head_q - base_q
    difference_interval = Interval(None, None, method=method)
    if max_absolute is not None or not positive:
        values = spread(log=False)
        low95, high95 = spread_bounds(difference, values, tail95, method)
        difference_interval = Interval(low95, high95, method=method)
    if max_absolute is not None:
        if method == "permutation":
            verdicts.append(
                _boundary_test(
                    head,
                    base,
                    q,
                    rng=rng,
                    resamples=resamples,
                    alpha=alpha,
                    limit=max_absolute,
                    relative=False,
                )
            )
        else:
            low, high = spread_bounds(difference, values, alpha, method)
            verdicts.append((low > max_absolute, high <= max_absolute))

    if verdicts and all(beyond for beyond, _ in verdicts):
        outcome = Regression.REGRESSED
    elif any(within for _, within in verdicts):
        outcome = Regression.NOT_REGRESSED
    else:
        outcome = Regression.UNDECIDED
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


def _boundary_test(
    head: Sequence[float],
    base: Sequence[float],
    q: float,
    *,
    rng: random.Random,
    resamples: int,
    alpha: float,
    limit: float,
    relative: bool = True,
) -> tuple[bool, bool]:
    """(beyond, within): the exact permutation test at the limit itself, both one-sided ways.

    Head's calls are brought back by the limit (divided by 1 + max_relative, or less
    max_absolute), so that under the boundary null "head is base worse by exactly the limit"
    the pool is exchangeable; p-values are (1 + deals at least as extreme) / (1 + deals).
    """
    shifted = [v / limit for v in head] if relative else [v - limit for v in head]
    observed = statistic(pq(shifted, q), pq(base, q), log=relative)
    null = deals([*shifted, *base], len(head), q, rng, resamples, log=relative)
    at_least = sum(d >= observed for d in null)
    at_most = sum(d <= observed for d in null)
    return (
        (1 + at_least) / (1 + resamples) <= alpha,
        (1 + at_most) / (1 + resamples) <= alpha,
    )


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
