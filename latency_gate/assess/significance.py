"""The significance tests behind a regression: is head's sample larger than base's beyond noise?

Two one-sided tests, as pure functions of numbers (no I/O, no models): the Mann-Whitney U test
on two samples of latencies, and Fisher's exact test on two counts of failed calls.

Pure Python (no scipy): the exact U distribution is counted once per pair of sample sizes and
cached; with ties, or large samples, the normal approximation with tie and continuity
corrections is used.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

__all__ = ["fisher_greater", "mann_whitney_greater", "min_p_value"]

# Exact U distributions are counted up to this many pairs (n1 x n2); beyond, the normal
# approximation is within a hair of exact and far cheaper.
_EXACT_PAIRS = 900


@functools.cache
def _u_upper_tail(n1: int, n2: int) -> tuple[float, ...]:
    """P(U >= u) for u = 0..n1*n2 under the null, U counting (head, base) pairs head wins.

    Counts arrangements by the largest element: a head element there beats all j base ones.
    """
    top = n1 * n2
    previous = [[1] + [0] * top for _ in range(n2 + 1)]  # i = 0 head elements: U is 0
    for _i in range(1, n1 + 1):
        current = [[1] + [0] * top]
        for j in range(1, n2 + 1):
            above, left = previous[j], current[j - 1]
            current.append([left[u] + (above[u - j] if u >= j else 0) for u in range(top + 1)])
        previous = current
    counts = previous[n2]
    total = math.comb(n1 + n2, n1)
    tail: list[float] = [0.0] * (top + 1)
    running = 0
    for u in range(top, -1, -1):
        running += counts[u]
        tail[u] = running / total
    return tuple(tail)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (from 1) of `values`, and the sizes of tied groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_greater(head: Sequence[float], base: Sequence[float]) -> float | None:
    """One-sided p-value that `head` tends to be larger than `base`; None with an empty side.

    Exact (counted) without ties for up to 900 pairs; otherwise the normal approximation with
    tie and continuity corrections.
    """
    n1, n2 = len(head), len(base)
    if not n1 or not n2:
        return None
    ranks, ties = _ranks([*head, *base])
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    if not ties and n1 * n2 <= _EXACT_PAIRS:
        return _u_upper_tail(n1, n2)[round(u)]
    n = n1 + n2
    mean = n1 * n2 / 2
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1))
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:
        return 1.0
    z = (u - mean - 0.5) / math.sqrt(variance)
    return 0.5 * math.erfc(z / math.sqrt(2))


def fisher_greater(head_failed: int, head_calls: int, base_failed: int, base_calls: int) -> float:
    """One-sided Fisher exact p-value that head's failure share is larger than base's."""
    failed = head_failed + base_failed
    total = head_calls + base_calls
    denominator = math.comb(total, head_calls)
    return (
        sum(
            math.comb(failed, k) * math.comb(total - failed, head_calls - k)
            for k in range(head_failed, min(failed, head_calls) + 1)
        )
        / denominator
    )


def min_p_value(n1: int, n2: int) -> float:
    """The smallest p-value the U test can give for these sizes."""
    return 1 / math.comb(n1 + n2, n1) if n1 and n2 else 1.0
