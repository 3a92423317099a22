"""Token timing of one streamed call: when each visible delta came, kept as a bounded summary.

A `GapRecorder` is told of every socket read that delivered visible deltas (answer or reasoning:
a user sees both arrive) with the read's stamp. It keeps the first, second and last stamps, the
longest gap and where it ended, and the first `MAX_KEPT_GAPS` gaps for the percentiles, so a
long answer costs at most that many floats. Deltas of one read share its stamp: 0 apart.
Pure code: the stamps come from the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["MAX_KEPT_GAPS", "GapRecorder", "GapSummary"]

MAX_KEPT_GAPS = 4096
"""Gaps kept per call for p50/p95 (32 KiB of floats); count and max cover every gap."""


@dataclass(frozen=True)
class GapSummary:
    """Gaps in nanoseconds; p50 and p95 over the kept ones (linear interpolation, as stats)."""

    count: int
    kept: int
    p50_ns: float
    p95_ns: float
    max_ns: int
    max_end_ns: int
    mean_ns: float


@dataclass
class GapRecorder:
    """Stamps of the visible deltas of one call, as reads deliver them."""

    deltas: int = 0
    first_ns: int | None = None
    second_ns: int | None = None
    last_ns: int | None = None
    max_ns: int = 0
    max_end_ns: int = 0
    gaps: list[int] = field(default_factory=list)
    count: int = 0

    def add(self, stamp_ns: int, deltas: int) -> None:
        """`deltas` visible deltas (at least 1) arrived in a read stamped `stamp_ns`."""
        if deltas <= 0:
            return
        if self.last_ns is None:
            self.first_ns = stamp_ns
            new_gaps = [0] * (deltas - 1)
        else:
            gap = max(stamp_ns - self.last_ns, 0)
            new_gaps = [gap] + [0] * (deltas - 1)
            if gap > self.max_ns:
                self.max_ns, self.max_end_ns = gap, stamp_ns
        if self.second_ns is None and self.deltas + deltas >= 2:
            self.second_ns = stamp_ns
        self.deltas += deltas
        self.last_ns = stamp_ns
        self.count += len(new_gaps)
        room = MAX_KEPT_GAPS - len(self.gaps)
        if room > 0:
            self.gaps += new_gaps[:room]

    def summary(self) -> GapSummary | None:
        """The gaps' summary, or None with fewer than two visible deltas."""
        if self.count == 0 or not self.gaps or self.first_ns is None or self.last_ns is None:
            return None
        ordered = sorted(self.gaps)
        return GapSummary(
            count=self.count,
            kept=len(ordered),
            p50_ns=_percentile(ordered, 50),
            p95_ns=_percentile(ordered, 95),
            max_ns=self.max_ns,
            max_end_ns=self.max_end_ns or self.last_ns,
            mean_ns=(self.last_ns - self.first_ns) / self.count,
        )


def _percentile(ordered: list[int], q: float) -> float:
    """The same method as latency_gate.assess.numbers.stats.percentile, on sorted values."""
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])
