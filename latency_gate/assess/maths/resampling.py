"""Permutation deals for the percentile regression test.

`deals` returns the sorted spread of the statistic pq(head*) vs pq(base*) (log ratio or
difference) over random splits of the pooled calls, exactly and fast in pure Python: it only
builds the few largest values a percentile reads, not whole samples. The splits are drawn once
for each pair of sizes, seeded by the sizes (`splits_for`): independent of the calls' values, as
a permutation test's splits must be, the same for the same data (a run is reproducible), and
drawn once for every test of those sizes (the looks test several numbers, and an interval tries
many limits, on the same sizes).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import operator
import random
import struct
from collections.abc import Sequence

from latency_gate.assess.maths.intervals import linear_percentile

__all__ = ["Splits", "deals", "pq", "seed_from", "splits_for", "statistic"]


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


class Splits:
    """`count` random splits of a pool of n calls into n_head and the rest, drawn once by the
    calls' positions in the pool, so that the same splits can deal the pool again after head's
    calls are scaled or shifted (inverting the test into an interval needs that: for a fixed
    split the statistic moves monotonically with the scale, so the p-value does too)."""

    def __init__(self, n: int, n_head: int, rng: random.Random, count: int) -> None:
        self.n, self.n_head = n, n_head
        self.members: list[bytearray] = [_split(n, n_head, rng) for _ in range(count)]


_BITS = bytes.maketrans(b"01", b"\x00\x01")


def _split(n: int, n_head: int, rng: random.Random) -> bytearray:
    """One uniformly random split of n positions into n_head (1) and the rest (0): n fair coin
    flips at once, then positions of the larger side, drawn at random, turned over until the
    count is n_head. The law of the result is the same under any permutation of the positions
    and every result has n_head ones, so every subset of n_head positions is equally likely.
    Ten times faster than drawing n_head positions one by one (the looks draw thousands)."""
    member = bytearray(format(rng.getrandbits(n), f"0{n}b").encode().translate(_BITS))
    ones = member.count(1)
    surplus, turn_from = (ones - n_head, 1) if ones > n_head else (n_head - ones, 0)
    draw = rng.random
    while surplus:
        position = int(draw() * n)  # uniform to within n / 2**53
        if member[position] == turn_from:
            member[position] = 1 - turn_from
            surplus -= 1
    return member


@functools.lru_cache(maxsize=128)
def splits_for(n: int, n_head: int, count: int) -> Splits:
    """`count` random splits of n calls into n_head and the rest, seeded by the three sizes."""
    return Splits(n, n_head, random.Random(f"splits/{n}/{n_head}/{count}"), count)


def deals(
    pool: Sequence[float], n_head: int, q: float, splits: Splits, *, log: bool
) -> list[float]:
    """Sorted pq(head*) vs pq(base*) over the `splits` of `pool` (head's calls first, as the
    splits were drawn for), each a uniformly random split into n_head and the rest.

    A split is walked from the pool's largest value down, stopped as soon as both sides hold the
    values their percentile reads (a few, for the p95).
    """
    n = len(pool)
    if (n, n_head) != (splits.n, splits.n_head):
        raise ValueError("the splits were drawn for another pool")
    order = sorted(range(n), key=lambda i: (-pool[i], i))
    n_base = n - n_head
    need_head, need_base = _needed(n_head, q), _needed(n_base, q)
    # The first `reach` places from the top hold what both percentiles read in nearly every
    # split; they are read at C speed (itemgetter, compress), the rare split that needs more
    # is walked to its end.
    reach = min(n, 3 * (need_head + need_base) + 8)
    ranked = [pool[i] for i in order]
    top, rest = ranked[:reach], ranked[reach:]
    places = operator.itemgetter(*order[:reach]) if reach > 1 else None
    out: list[float] = []
    for member in splits.members:
        bits = places(member) if places is not None else (member[order[0]],)
        head_top = list(itertools.compress(top, bits))
        base_top = list(itertools.compress(top, map(operator.not_, bits)))
        if len(head_top) < need_head or len(base_top) < need_base:
            for position, value in zip(order[reach:], rest, strict=True):
                (head_top if member[position] else base_top).append(value)
        out.append(
            statistic(
                _pq_descending(head_top, n_head, q), _pq_descending(base_top, n_base, q), log=log
            )
        )
    out.sort()
    return out
