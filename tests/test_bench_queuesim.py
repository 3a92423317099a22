"""bench/queuesim.py's queue is a real first-in-first-out queue, and its truth is issue 40's."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import queuesim


def _services(seed: str, count: int, sigma: float) -> list[float]:
    rng = random.Random(seed)
    return [queuesim.SERVICE * math.exp(rng.gauss(0.0, sigma)) for _ in range(count)]


def test_one_slot_serves_the_burst_one_call_after_another() -> None:
    """With one slot, call i ends when the i calls before it and its own service have run."""
    latencies = queuesim.fifo_burst(5, 1, 0.6, random.Random("q"))
    services = _services("q", 5, 0.6)
    assert latencies == pytest.approx([sum(services[: i + 1]) for i in range(5)])


def test_a_call_waits_for_the_first_slot_to_free() -> None:
    """With two slots, the third call starts when the shorter of the first two ends."""
    latencies = queuesim.fifo_burst(3, 2, 0.6, random.Random("w"))
    first, second, third = _services("w", 3, 0.6)
    assert latencies == pytest.approx([first, second, min(first, second) + third])


def test_a_call_does_not_depend_on_the_calls_behind_it() -> None:
    """The first c calls of a burst of 64 are a burst of c (what the truth rests on)."""
    longer = queuesim.fifo_burst(64, 3, 0.6, random.Random("p"))
    assert queuesim.fifo_burst(14, 3, 0.6, random.Random("p")) == longer[:14]


def test_the_truth_is_the_largest_burst_within_five_per_cent() -> None:
    """share(c) is the mean over the first c positions; the truth the largest c at most 5 %."""
    share = queuesim.shares([0.0, 0.02, 0.1, 0.2, 0.01])
    assert share == pytest.approx([0.0, 0.01, 0.04, 0.08, 0.066])
    assert queuesim.truth_of(share) == 3
    assert queuesim.truth_of([0.06, 0.01]) == 0


def test_issue_40_s_cell_has_a_truth_of_14() -> None:
    """3 slots, sigma 0.6, budget 6.71 s: 14 calls at once within 5 %, 15 over it."""
    budget = queuesim.budget_of(0.6, 2)
    assert f"{budget:.2f}" == "6.71"
    (by_position,) = queuesim.over_by_position(3, 0.6, [budget], bursts=5_000)
    share = queuesim.shares(by_position)
    assert queuesim.truth_of(share) == 14
    assert share[13] < 0.045
    assert share[14] > 0.05
