"""The candidates for the regression test, side by side at the sizes an A/B run reaches.

Issue 21 asked for a test that sees the tail: "10 % of calls 3x slower" roughly doubles a p95
and leaves the median where it was. Each candidate below tests "head is worse than base by at
most the limit" (head's calls divided by 1.10 first, so the boundary null is exchangeable):

- P: the shipped test, a permutation test of the p95 itself
  (latency_gate/assess/compare/regression.py);
- E95, E90: exceedances of the pooled p95 (p90), an exact hypergeometric test of how many of
  head's calls are among the pool's slowest 5 % (10 %);
- R80, R90: an upper-tail weighted rank test, weights rising linearly over the pooled top 20 %
  (10 %), normal approximation of the linear rank statistic's permutation distribution.

Both arms have n calls (A/B in one run), one look at alpha 0.012 (what the last look of a run
gets). Lognormal calls; "p50 only" slows the lower half of the calls by 25 % and leaves the
tail alone (a p95 test must not call it a p95 regression).
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import NormalDist

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from latency_gate.assess.compare.regression import (  # noqa: E402
    Regression,
    look_alpha,
    percentile_regression,
)

ALPHA = look_alpha(8, last=True).regressed
LIMIT = 1.10
_NORMAL = NormalDist()

Test = Callable[[Sequence[float], Sequence[float]], bool]


def _hypergeometric_tail(k: int, total: int, marked: int, drawn: int) -> float:
    """P(X >= k) for X ~ Hypergeometric(total, marked, drawn)."""
    denominator = math.comb(total, drawn)
    upper = min(marked, drawn)
    return (
        sum(
            math.comb(marked, x) * math.comb(total - marked, drawn - x) for x in range(k, upper + 1)
        )
        / denominator
    )


def exceedances(q: float) -> Test:
    def test(head: Sequence[float], base: Sequence[float]) -> bool:
        scaled = [v / LIMIT for v in head]
        pool = sorted([*scaled, *base])
        slowest = max(1, len(pool) - math.floor(q * len(pool)))
        threshold = pool[len(pool) - slowest]
        in_head = sum(v >= threshold for v in scaled)
        marked = in_head + sum(v >= threshold for v in base)
        return _hypergeometric_tail(in_head, len(pool), marked, len(scaled)) <= ALPHA

    return test


def tail_ranks(start: float) -> Test:
    def test(head: Sequence[float], base: Sequence[float]) -> bool:
        pool = sorted([(v / LIMIT, 1) for v in head] + [(v, 0) for v in base])
        n = len(pool)
        weights = [max(0.0, (i + 1) / (n + 1) - start) for i in range(n)]
        mean_w = sum(weights) / n
        spread = sum((w - mean_w) ** 2 for w in weights)
        n_head = len(head)
        observed = sum(w for w, (_, arm) in zip(weights, pool, strict=True) if arm)
        variance = n_head * (n - n_head) / (n * (n - 1)) * spread
        z = (observed - n_head * mean_w) / math.sqrt(variance)
        return 1 - _NORMAL.cdf(z) <= ALPHA

    return test


def permutation(head: Sequence[float], base: Sequence[float]) -> bool:
    found = percentile_regression(
        head, base, 95, max_relative=LIMIT - 1, alpha=ALPHA, interval=False
    )
    return found is not None and found.outcome is Regression.REGRESSED


CANDIDATES: dict[str, Test] = {
    "P (shipped)": permutation,
    "E95": exceedances(0.95),
    "E90": exceedances(0.90),
    "R80": tail_ranks(0.80),
    "R90": tail_ranks(0.90),
}


def _draw(rng: random.Random, n: int, sigma: float, change: str) -> tuple[list[float], list[float]]:
    base = [math.exp(sigma * rng.gauss(0.0, 1.0)) for _ in range(n)]
    head = [math.exp(sigma * rng.gauss(0.0, 1.0)) for _ in range(n)]
    if change == "at the limit (x1.10)":
        head = [v * 1.10 for v in head]
    elif change == "every call +25 %":
        head = [v * 1.25 for v in head]
    elif change == "10 % of calls 3x slower":
        head = [v * 3.0 if rng.random() < 0.1 else v for v in head]
    elif change == "p50 only (+25 % below the median)":
        head = [v * 1.25 if v < 1.0 else max(v, 1.25) for v in head]
    return head, base


CHANGES = (
    "unchanged",
    "at the limit (x1.10)",
    "every call +25 %",
    "10 % of calls 3x slower",
    "p50 only (+25 % below the median)",
)


def table(runs: int) -> str:
    """Share of seeded pairs each candidate calls a regression."""
    names = list(CANDIDATES)
    rows = [
        "| head against base | n per arm | sigma | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for n in (100, 180):
        for sigma in (0.25, 0.5):
            for change in CHANGES:
                rng = random.Random(f"candidates/{n}/{sigma}/{change}")
                counts = dict.fromkeys(names, 0)
                for _ in range(runs):
                    head, base = _draw(rng, n, sigma, change)
                    for name, test in CANDIDATES.items():
                        counts[name] += test(head, base)
                shares = [f"{counts[name] / runs * 100:.1f} %" for name in names]
                rows.append(f"| {change} | {n} | {sigma:g} | " + " | ".join(shares) + " |")
                print(f"candidates {rows[-1]}", file=sys.stderr, flush=True)
    return "\n".join(rows)
