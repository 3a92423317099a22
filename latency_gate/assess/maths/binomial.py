"""Exact binomial probabilities and the bounds built from them (pure Python, no scipy).

Everything distribution-free in the gate comes down to counting: how many calls failed, how many
took longer than a limit, how many fell below an unknown percentile. Those counts are binomial,
so these few functions carry the exact order-statistic and Clopper-Pearson bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["binom_cdf", "binom_sf", "clopper_pearson", "order_statistic_ranks"]


def _log_pmf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p); 0 for k < 0 and 1 for k >= n."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return min(1.0, _tail_sum(range(k, -1, -1), n, p))


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p); 1 for k <= 0 and 0 for k > n."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return min(1.0, _tail_sum(range(k, n + 1), n, p))


def _tail_sum(ks: range, n: int, p: float) -> float:
    """The sum of the pmf over `ks`, walked away from k: once past the mode the terms only
    shrink, so the walk stops when they no longer move the sum (O(spread), not O(n))."""
    mode = (n + 1) * p
    terms: list[float] = []
    total = 0.0
    for i in ks:
        term = math.exp(_log_pmf(i, n, p))
        terms.append(term)
        total += term
        past_mode = i > mode if ks.step > 0 else i < mode - 1
        if past_mode and term <= total * 1e-17:
            break
    return math.fsum(terms)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided `level` interval for a binomial share, k of n.

    Equal tails: the lower bound is the p where P(X >= k) = (1 - level) / 2 (0 when k = 0), the
    upper bound the p where P(X <= k) = (1 - level) / 2 (1 when k = n). For a one-sided bound at
    1 - a, pass level = 1 - 2a. Raises ValueError unless 0 <= k <= n and n >= 1.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    tail = (1.0 - level) / 2
    lower = 0.0 if k == 0 else _root(lambda p: binom_sf(k, n, p) - tail)
    upper = 1.0 if k == n else _root(lambda p: tail - binom_cdf(k, n, p))
    return lower, upper


def _root(fn: Callable[[float], float]) -> float:
    """The root in (0, 1) of an increasing function of p, by bisection to 1e-12."""
    lo, hi = 0.0, 1.0
    for _ in range(64):
        mid = (lo + hi) / 2
        if fn(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def order_statistic_ranks(n: int, q: float, level: float = 0.95) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) such that [x(l), x(u)] covers the q-th quantile (0 < q < 1) of a
    continuous distribution with probability at least `level`, each side missing at most
    (1 - level) / 2. Distribution-free: P(x(l) <= xi_q) = P(Binomial(n, q) >= l).

    A side that no order statistic reaches at this n is None (for the p95 at 95 %, the upper
    bound needs n >= 72: with fewer calls, even the slowest one may be under the true p95).
    """
    tail = (1.0 - level) / 2
    pmf = [math.exp(_log_pmf(i, n, q)) for i in range(n + 1)]
    # P(X >= rank), accumulated from the top: the largest rank still at or over 1 - tail.
    lower: int | None = None
    upper_tail = 0.0
    for rank in range(n, 0, -1):
        upper_tail += pmf[rank]
        if upper_tail >= 1.0 - tail:
            lower = rank
            break
    # P(X <= rank - 1), accumulated from the bottom: the smallest rank at or over 1 - tail.
    upper: int | None = None
    lower_tail = 0.0
    for rank in range(1, n + 1):
        lower_tail += pmf[rank - 1]
        if lower_tail >= 1.0 - tail:
            upper = rank
            break
    return lower, upper
