"""Resampling for the percentile regression test: permutation deals and bootstrap draws.

Both return the sorted spread of the statistic pq(head*) vs pq(base*) (log ratio or difference)
and are exact and fast in pure Python: they only build the few largest values a percentile
reads, not whole samples. Seeded from the data, so a run is reproducible.
"""

from __future__ import annotations

import hashlib
import math
import random
import struct
from collections.abc import Sequence
from typing import Literal

from latency_gate.assess.intervals import linear_percentile

__all__ = ["Method", "bootstrap", "deals", "pq", "seed_from", "spread_bounds", "statistic"]

Method = Literal["permutation", "bootstrap", "bootstrap-basic"]


def seed_from(*samples: Sequence[float]) -> int:
    """A seed fixed by the samples' values: the same data always gives the same interval."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(struct.pack(f"<q{len(sample)}d", len(sample), *sample))
    return int.from_bytes(digest.digest()[:8], "little")


def pq(values: Sequence[float], q: float) -> float:
    """numpy-linear percentile of a non-empty sample."""
    value = linear_percentile(values, q)
    if value is None:
        raise ValueError("no values")
    return value


def _pq_descending(top: list[float], n: int, q: float) -> float:
    """numpy-linear q-th percentile of n values whose largest ones are `top`, descending."""
    rank = (n - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    at_low, at_high = top[n - 1 - low], top[n - 1 - high]
    return at_low + (rank - low) * (at_high - at_low)


def _needed(n: int, q: float) -> int:
    """How many of the largest values the q-th percentile of n values reads."""
    return n - math.floor((n - 1) * q / 100)


def statistic(head_q: float, base_q: float, *, log: bool) -> float:
    return math.log(head_q / base_q) if log else head_q - base_q


def deals(
    pool: list[float], n_head: int, q: float, rng: random.Random, count: int, *, log: bool
) -> list[float]:
    """Sorted pq(head*) vs pq(base*) over `count` random splits of `pool` into n_head and rest.

    A split walks the pool from its largest value down, giving each value to head with
    probability (head places left) / (values left): a uniformly random split, stopped as soon
    as both sides hold the values their percentile reads (a few, for the p95).
    """
    descending = sorted(pool, reverse=True)
    n = len(descending)
    n_base = n - n_head
    need_head, need_base = _needed(n_head, q), _needed(n_base, q)
    out: list[float] = []
    for _ in range(count):
        head_top: list[float] = []
        base_top: list[float] = []
        head_left, left = n_head, n
        for value in descending:
            if rng.random() * left < head_left:
                head_top.append(value)
                head_left -= 1
            else:
                base_top.append(value)
            left -= 1
            if len(head_top) >= need_head and len(base_top) >= need_base:
                break
        out.append(
            statistic(
                _pq_descending(head_top, n_head, q), _pq_descending(base_top, n_base, q), log=log
            )
        )
    out.sort()
    return out


def _resample_pq(ascending: list[float], q: float, rng: random.Random) -> float:
    """pq of one bootstrap resample: its largest draws come from the descending order
    statistics of n uniforms, U(n) = V^(1/n), U(k-1) = U(k) V^(1/(k-1))."""
    n = len(ascending)
    top: list[float] = []
    u = 1.0
    for i in range(_needed(n, q)):
        u *= rng.random() ** (1.0 / (n - i))
        top.append(ascending[min(n - 1, int(u * n))])
    return _pq_descending(top, n, q)


def bootstrap(
    head: Sequence[float],
    base: Sequence[float],
    q: float,
    rng: random.Random,
    count: int,
    *,
    log: bool,
) -> list[float]:
    """Sorted pq(head*) vs pq(base*) over `count` independent resamples of each side."""
    head_sorted, base_sorted = sorted(head), sorted(base)
    out = [
        statistic(_resample_pq(head_sorted, q, rng), _resample_pq(base_sorted, q, rng), log=log)
        for _ in range(count)
    ]
    out.sort()
    return out


def _tail_index(count: int, share: float) -> int:
    """0-based index of the conservative `share` quantile among `count` sorted values."""
    return max(0, min(count - 1, math.floor(share * (count + 1)) - 1))


def spread_bounds(
    estimate: float, spread: list[float], tail: float, method: Method
) -> tuple[float, float]:
    """Two-sided bounds, `tail` missed on each side, from the sorted resampled statistic.

    permutation: spread is the null spread of the statistic (centred near 0); inverted as
    [estimate - upper, estimate - lower]. bootstrap-basic: the same with spread - estimate.
    bootstrap (percentile method): the spread's own quantiles.
    """
    lower = spread[_tail_index(len(spread), tail)]
    upper = spread[len(spread) - 1 - _tail_index(len(spread), tail)]
    if method == "bootstrap":
        return lower, upper
    if method == "bootstrap-basic":
        return 2 * estimate - upper, 2 * estimate - lower
    return estimate - upper, estimate - lower
