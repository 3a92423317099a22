"""Regressions against a baseline, tested on the number that is gated.

For a percentile (warm p95, concurrent p95, ...) the null hypothesis is "head is worse than base
by at most the limit": head_pq <= base_pq x (1 + max_relative) (and/or head_pq - base_pq <=
max_absolute; with both given, a regression must exceed both).

The decision is an exact permutation test of the percentile itself, at the limit: head's calls
are brought back by the limit (divided by 1 + max_relative, or less max_absolute), both runs'
calls are pooled and dealt out again at random (splits seeded by the sizes, so a run is
reproducible), and the observed ln(pq(head)) - ln(pq(base)) is compared with the deals'.
REGRESSED when at most `alpha` of deals are as high, NOT_REGRESSED when at most `alpha` are as
low, UNDECIDED otherwise. The test is exact when head is base scaled by the limit;
docs/statistics.md measures it on other shapes and against tests of the tail alone, and says why
this one was kept (with both sides measured alike, as in an A/B run, it sees a slow tail best).

Looks. The test runs at each look of a run; `look_alpha` splits each side's overall one-sided
alpha the Haybittle-Peto way: a little at each look before the last, what is left at the last,
where the calls are most and so is the power (a union bound: the whole procedure is wrong at most
its overall alpha of the time). The two sides differ: "regressed" (REGRESSION_ALPHA, 0.02) fails
a deploy; "not regressed" (WITHIN_ALPHA, 0.10) only says "no regression beyond the limit, at
90 %" instead of warning that the calls could not tell, and stops sampling for that number.

The reported 95 % interval of the ratio (or the difference) is the same test inverted: every
limit r at which neither one-sided test at 2.5 % rejects (`ratio_interval`). It agrees with the
decision, covers at its level when head is base scaled (measured in docs/statistics.md), and
does not collapse on latencies quantised to whole milliseconds.

The error rate is compared by the exact conditional test for two counts (given the total number
of failures, head's share of them is binomial), inverted into an interval on the rate ratio.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from latency_gate.assess.maths.binomial import clopper_pearson
from latency_gate.assess.maths.intervals import LEVEL, Interval
from latency_gate.assess.maths.resampling import deals, pq, splits_for, statistic

__all__ = [
    "DEFAULT_RELATIVE",
    "INTERIM_ALPHA",
    "REGRESSION_ALPHA",
    "RESAMPLES",
    "WITHIN_ALPHA",
    "WITHIN_INTERIM_ALPHA",
    "Alphas",
    "ErrorRateRegression",
    "PercentileRegression",
    "Regression",
    "error_rate_regression",
    "look_alpha",
    "percentile_regression",
    "ratio_interval",
]

DEFAULT_RELATIVE = 0.10
# Overall one-sided errors per number over every look of a run: calling an endpoint regressed
# when it is worse by at most the limit, and calling it "not regressed" when it is worse by more.
REGRESSION_ALPHA = 0.02
WITHIN_ALPHA = 0.10
# Spent at each look before the last (Haybittle-Peto); the last gets what is left.
INTERIM_ALPHA = 0.001
WITHIN_INTERIM_ALPHA = 0.01
RESAMPLES = 999
# Brings head's calls (already brought back by the limit) and base's to the values the test
# compares: the identity, or their latencies at the same work (assess/numbers/work.py, `adjusted`).
Transform = Callable[[list[float]], tuple[list[float], list[float]]]
# Deals for each limit tried when the test is inverted into an interval, and the halvings of the
# search on each side (a width of 2 in log space to 1e-4).
INTERVAL_RESAMPLES = 499
_BISECTIONS = 14


@dataclass(frozen=True)
class Alphas:
    """The one-sided alphas of one look: for "regressed" and for "not regressed"."""

    regressed: float
    within: float


def look_alpha(looks_before: int, *, last: bool) -> Alphas:
    """The alphas of the regression test at a look: the interim ones at a look before the last;
    at the last, what `looks_before` interim looks left of each side's overall alpha."""
    if not last:
        return Alphas(INTERIM_ALPHA, WITHIN_INTERIM_ALPHA)
    return Alphas(
        max(INTERIM_ALPHA, REGRESSION_ALPHA - INTERIM_ALPHA * looks_before),
        max(WITHIN_INTERIM_ALPHA, WITHIN_ALPHA - WITHIN_INTERIM_ALPHA * looks_before),
    )


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
    # The test inverted at the decision's levels (low side at `alpha`, high at the "not
    # regressed" side's); sides None when not computed.
    ratio_interval: Interval
    difference: float  # head - base, in seconds
    difference_interval: Interval  # the same, of the difference (with an absolute limit)
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
    alpha: float = REGRESSION_ALPHA,
    alpha_within: float | None = None,
    resamples: int = RESAMPLES,
    interval: bool = True,
    relative_transform: Transform | None = None,
    absolute_transform: Transform | None = None,
) -> PercentileRegression | None:
    """Test "head's q-th percentile is worse than base's by at most the limit".

    `head` and `base` are successful calls' latencies (seconds) of the number's phase. With
    neither limit given, max_relative is DEFAULT_RELATIVE. Returns None when either side has
    fewer than 2 values (nothing to deal). `alpha` is the "regressed" side's, `alpha_within`
    the "not regressed" side's (`alpha` when None). `interval=False` skips the 95 % intervals
    (the looks need the decision only). Deterministic: the splits are seeded by the sizes.

    `relative_transform` and `absolute_transform`, when given, map head's calls brought back by
    the limit (divided by it, or less it) to the two samples compared: for a test at the same
    work, both arms' latencies over what their answers' lengths predict
    (assess/compare/same_work.py). `head` and `base` are then the raw latencies, and `ratio` and
    the interval are of the transformed samples' percentiles.
    """
    within = alpha if alpha_within is None else alpha_within
    if len(head) < 2 or len(base) < 2:
        return None
    # Enough deals for the smallest p-value to reach alpha: (1 + 0) / (1 + deals) <= alpha.
    resamples = max(resamples, math.ceil(1 / min(alpha, within) - 1e-9) - 1)
    if max_relative is None and max_absolute is None:
        max_relative = DEFAULT_RELATIVE
    head_q, base_q = pq(head, q), pq(base, q)
    positive = min(head) > 0 and min(base) > 0
    ratio = head_q / base_q if positive else None
    if relative_transform is not None and positive:
        head_t, base_t = relative_transform(list(head))
        ratio = pq(head_t, q) / pq(base_t, q)
    verdicts: list[tuple[bool, bool]] = []  # (beyond, within) per limit given
    if max_relative is not None:
        if ratio is None:
            verdicts.append((False, False))
        else:
            scaled = _Deals(
                head,
                base,
                q,
                relative=True,
                resamples=resamples,
                transform=relative_transform,
            )
            verdicts.append(scaled.at_limit(1 + max_relative, alpha, within))
    if max_absolute is not None:
        shifted = _Deals(
            head,
            base,
            q,
            relative=False,
            resamples=resamples,
            transform=absolute_transform,
        )
        verdicts.append(shifted.at_limit(max_absolute, alpha, within))
    if verdicts and all(beyond for beyond, _ in verdicts):
        outcome = Regression.REGRESSED
    elif any(within for _, within in verdicts):
        outcome = Regression.NOT_REGRESSED
    else:
        outcome = Regression.UNDECIDED
    method = "the permutation test inverted"
    ratio_bounds = Interval(None, None, method=method)
    difference_bounds = Interval(None, None, method=method)
    # The interval at the decision's own levels and deals (the same splits, seeded alike): its
    # low side is over the limit exactly when the test says regressed, its high side within it
    # exactly when the test says not regressed.
    tails = (alpha, within)
    if interval and ratio is not None:
        ratio_bounds = ratio_interval(
            head,
            base,
            q,
            relative=True,
            transform=relative_transform,
            tails=tails,
            resamples=resamples,
        )
    if interval and (max_absolute is not None or ratio is None):
        difference_bounds = ratio_interval(
            head,
            base,
            q,
            relative=False,
            transform=absolute_transform,
            tails=tails,
            resamples=resamples,
        )
    difference = head_q - base_q
    if absolute_transform is not None:
        head_t, base_t = absolute_transform(list(head))
        difference = pq(head_t, q) - pq(base_t, q)
    return PercentileRegression(
        q=q,
        base=base_q,
        head=head_q,
        ratio=ratio,
        ratio_interval=ratio_bounds,
        difference=difference,
        difference_interval=difference_bounds,
        outcome=outcome,
        alpha=alpha,
    )


class _Deals:
    """One comparison's calls, dealt at any limit by the same random splits (drawn once, seeded
    by the sizes): for a fixed split the statistic moves monotonically with the limit, so the
    p-values do too and the test inverts into an interval."""

    def __init__(
        self,
        head: Sequence[float],
        base: Sequence[float],
        q: float,
        *,
        relative: bool,
        resamples: int,
        transform: Transform | None = None,
    ) -> None:
        self.head, self.base, self.q, self.relative = head, base, q, relative
        self.resamples = resamples
        self.transform = transform
        self.splits = splits_for(len(head) + len(base), len(head), resamples)

    def p_values(self, limit: float) -> tuple[float, float]:
        """One-sided permutation p-values of "head is base worse by exactly `limit`": (that
        head is worse still, that it is better). Head's calls are brought back by the limit
        (divided, or less it), so that under that null the pool is exchangeable;
        p = (1 + deals at least as extreme) / (1 + deals)."""
        relative = self.relative
        shifted = [v / limit for v in self.head] if relative else [v - limit for v in self.head]
        base = list(self.base)
        if self.transform is not None:
            shifted, base = self.transform(shifted)
        observed = statistic(pq(shifted, self.q), pq(base, self.q), log=relative)
        pool = [*shifted, *base]
        null = deals(pool, len(self.head), self.q, self.splits, log=relative)
        at_least = sum(d >= observed for d in null)
        at_most = sum(d <= observed for d in null)
        return (1 + at_least) / (1 + self.resamples), (1 + at_most) / (1 + self.resamples)

    def at_limit(self, limit: float, alpha: float, within: float) -> tuple[bool, bool]:
        """(beyond, within): the exact permutation test at the limit, both one-sided ways, at
        `alpha` and `within` each."""
        worse, better = self.p_values(limit)
        return worse <= alpha, better <= within


def ratio_interval(
    head: Sequence[float],
    base: Sequence[float],
    q: float,
    *,
    relative: bool = True,
    level: float = LEVEL,
    resamples: int = INTERVAL_RESAMPLES,
    transform: Transform | None = None,
    tails: tuple[float, float] | None = None,
) -> Interval:
    """The `level` interval of head_pq / base_pq (or head_pq - base_pq when not `relative`):
    every limit at which neither one-sided permutation test at (1 - level) / 2 rejects, found
    by bisection (in log space for a ratio) to about 0.02 % of the search's width. With a
    `transform`, of the transformed samples (see `percentile_regression`). `tails`, when given,
    is each side's one-sided error instead of (1 - level) / 2: (low side, high side)."""
    low_tail, high_tail = tails if tails is not None else ((1 - level) / 2, (1 - level) / 2)
    dealt = _Deals(
        head,
        base,
        q,
        relative=relative,
        resamples=resamples,
        transform=transform,
    )
    head_q, base_q = pq(head, q), pq(base, q)
    if transform is not None:
        head_t, base_t = transform(list(head))
        head_q, base_q = pq(head_t, q), pq(base_t, q)
    spread = max(head) - min(base) + max(base) - min(head) or 1.0

    def worse(limit: float) -> float:
        return dealt.p_values(limit)[0]

    def better(limit: float) -> float:
        return dealt.p_values(limit)[1]

    if relative:
        centre, width = math.log(head_q / base_q), math.log(max(head) / min(head)) + 1.0
        to_limit = math.exp
    else:
        centre, width = head_q - base_q, spread
        to_limit = float
    # The lower side: the smallest limit whose "worse still" test does not reject; the upper:
    # the largest whose "better" test does not.
    lower = _edge(lambda x: worse(to_limit(x)) > low_tail, inside=centre, outside=centre - width)
    upper = _edge(lambda x: better(to_limit(x)) > high_tail, inside=centre, outside=centre + width)
    return Interval(
        to_limit(lower),
        to_limit(upper),
        level=1 - low_tail - high_tail,
        method="the permutation test inverted",
    )


def _edge(kept: Callable[[float], bool], *, inside: float, outside: float) -> float:
    """The last point from `inside` towards `outside` at which `kept` still holds, by bisection
    (`kept` holds at `inside` and not beyond the edge)."""
    for _ in range(_BISECTIONS):
        middle = (inside + outside) / 2
        if kept(middle):
            inside = middle
        else:
            outside = middle
    return inside


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
    # The decision's own interval: low side at its "regressed" alpha, high side at its "not
    # regressed" one; None when there is no failure at all.
    decision_interval: tuple[float | None, float | None] | None = None


def error_rate_regression(
    head_failed: int,
    head_calls: int,
    base_failed: int,
    base_calls: int,
    *,
    max_relative: float = DEFAULT_RELATIVE,
    alpha: float = REGRESSION_ALPHA,
    alpha_within: float | None = None,
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
    low, _ = clopper_pearson(head_failed, total, 1 - 2 * alpha)
    within = alpha if alpha_within is None else alpha_within
    _, high = clopper_pearson(head_failed, total, 1 - 2 * within)
    ratio_low, ratio_high = to_ratio(low), to_ratio(high)
    limit = 1 + max_relative
    if ratio_low is not None and ratio_low > limit:
        outcome = Regression.REGRESSED
    elif ratio_high is not None and ratio_high <= limit:
        outcome = Regression.NOT_REGRESSED
    else:
        outcome = Regression.UNDECIDED
    return ErrorRateRegression(
        head_failed,
        head_calls,
        base_failed,
        base_calls,
        interval,
        outcome,
        decision_interval=(ratio_low, ratio_high),
    )
