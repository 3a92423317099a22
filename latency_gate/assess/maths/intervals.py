"""95 % intervals on the gated numbers: percentiles (exact order statistics) and the error rate
(Clopper-Pearson).

A percentile's interval is distribution-free: it assumes only that the calls are independent
draws from one continuous distribution. Where n is too small for an order statistic to reach a
side, that side is None ("cannot be computed at this n"), never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.assess.maths.binomial import clopper_pearson, order_statistic_ranks
from latency_gate.formatting import fmt_percent

__all__ = [
    "LEVEL",
    "ErrorRateInterval",
    "Interval",
    "error_rate_interval",
    "linear_percentile",
    "percentile_interval",
]

LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A two-sided interval; a side is None when it cannot be computed at this n."""

    low: float | None
    high: float | None
    level: float = LEVEL
    method: str = ""

    def as_list(self) -> list[float | None]:
        """[low, high], the shape the JSON result carries."""
        return [self.low, self.high]


def linear_percentile(values: Sequence[float], q: float) -> float | None:
    """numpy's default ("linear") percentile, q in 0..100; None for no values.

    The one definition of the percentile every report states (latency_gate.assess.numbers.stats
    uses it as `percentile`).
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be between 0 and 100, got {q}")
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


def percentile_interval(values: Sequence[float], q: float, level: float = LEVEL) -> Interval:
    """Distribution-free `level` interval for the true q-th percentile (q in 0..100 exclusive).

    [x(l), x(u)] with the ranks of `order_statistic_ranks`; for the p95 at 95 % the upper side
    needs 72 values and the lower side 4, so 20 warm calls give [x(17), None].
    """
    ordered = sorted(values)
    lower, upper = order_statistic_ranks(len(ordered), q / 100, level) if ordered else (None, None)
    return Interval(
        low=ordered[lower - 1] if lower is not None else None,
        high=ordered[upper - 1] if upper is not None else None,
        level=level,
        method="exact order statistics (distribution-free)",
    )


@dataclass(frozen=True)
class ErrorRateInterval:
    """k of n calls failed, with the exact interval of the true failure share."""

    failed: int
    calls: int
    interval: Interval

    @property
    def rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0

    def describe(self) -> str:
        """ "1 of 31 calls failed (3.2 %); 95 % upper bound 16.7 %"."""
        high = self.interval.high
        bound = fmt_percent(high) if high is not None else "unknown"
        return (
            f"{self.failed} of {self.calls} calls failed ({fmt_percent(self.rate)}); "
            f"{self.interval.level * 100:g} % upper bound {bound}"
        )


def error_rate_interval(failed: int, calls: int, level: float = LEVEL) -> ErrorRateInterval:
    """Clopper-Pearson `level` interval of the failure share; [None, None] with no calls."""
    if calls == 0:
        return ErrorRateInterval(0, 0, Interval(None, None, level, "Clopper-Pearson (exact)"))
    low, high = clopper_pearson(failed, calls, level)
    return ErrorRateInterval(failed, calls, Interval(low, high, level, "Clopper-Pearson (exact)"))
