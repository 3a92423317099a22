"""The order in which the capacity search tries levels, and what the worst order costs.

Pure rules, without the judging layer: assess/load/capacity.py drives the search with them, and the
plan (config/plan.py) sizes `max-calls: auto` from `worst_calls` before the first call.

Each level tried ends held (its p95 shown within the budget), broke (shown over it) or near (its
calls could not tell). The levels are assumed to break from some concurrency on, as a queue or
a batch does, so what was tried is a bracket: `low`, the highest level that held below every
level that broke; `top`, the lowest level that broke; and the near levels between them, from
`near_low` to `near_high`. The capacity is `low` when no level between `low` and `top` was
near and they are one call apart, and otherwise somewhere from `low` to the level below the
first one shown to break.

- While every level held: double (2 c0, 4 c0 ... at most `maximum`).
- Else, first the gap below the lowest near or broken level: its middle, until `low` is the
  level just below it (from a start that did not hold, `low` is 0: the middle of 0 and c0).
- Then the gap above the highest near level: doubling while nothing above it broke, then the
  middle, until the lowest level that broke is within an eighth of it (one call, for levels
  under 16): the figure is exact where the levels were told apart, and an interval's upper end
  is said to within 12.5 %.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Bracket", "LevelOutcome", "next_level", "worst_calls"]

LevelOutcome = Literal["held", "near", "broke"]
# The gap above the highest near level is halved until it is at most 1 / UPPER_PRECISION of that
# level (and one call at least): the upper end of an interval to within 12.5 %, without a level
# for every call of a wide zone near the budget.
UPPER_PRECISION = 8


@dataclass(frozen=True)
class Bracket:
    """What the levels tried so far say: the highest level that held below the lowest that
    broke (`low`, 0 for none), the lowest that broke (`top`, None for none), and the lowest and
    highest near levels between them (None for none)."""

    low: int = 0
    top: int | None = None
    near_low: int | None = None
    near_high: int | None = None

    @classmethod
    def of(cls, tried: Iterable[tuple[int, LevelOutcome]]) -> Bracket:
        levels = list(tried)
        broke = [c for c, outcome in levels if outcome == "broke"]
        top = min(broke) if broke else None
        low = max(
            (c for c, outcome in levels if outcome == "held" and (top is None or c < top)),
            default=0,
        )
        near = [
            c for c, outcome in levels if outcome == "near" and c > low and (top is None or c < top)
        ]
        return cls(low, top, min(near, default=None), max(near, default=None))

    def after(self, level: int, outcome: LevelOutcome) -> Bracket:
        """The bracket once `level` has ended so (levels outside it change nothing kept)."""
        low, top, near_low, near_high = self.low, self.top, self.near_low, self.near_high
        if outcome == "broke" and (top is None or level < top):
            top = level
            low = low if low < level else 0  # a level that held above one that broke: dropped
        elif outcome == "held" and level > low and (top is None or level < top):
            low = level
        elif outcome == "near" and level > low and (top is None or level < top):
            near_low = level if near_low is None else min(near_low, level)
            near_high = level if near_high is None else max(near_high, level)
        inside = [
            c
            for c in (near_low, near_high)
            if c is not None and c > low and (top is None or c < top)
        ]
        return Bracket(low, top, min(inside, default=None), max(inside, default=None))

    @property
    def upper(self) -> int | None:
        """The highest level the capacity can be: below the lowest that broke (None when none
        did: up to what the search reached)."""
        return None if self.top is None else self.top - 1

    @property
    def exact(self) -> bool:
        """The levels around the capacity were told apart: `low` held and `low` + 1 broke."""
        return self.near_low is None and self.top is not None and self.top == self.low + 1


def next_level(start: int, maximum: int, bracket: Bracket | None) -> int | None:
    """The concurrency to try next (`bracket` None: nothing tried yet), or None when the search
    is over."""
    if bracket is None:
        return min(start, maximum)
    low, top = bracket.low, bracket.top
    if top is None and bracket.near_high is None:
        return None if low >= maximum or low == 0 else min(2 * low, maximum)
    first = bracket.near_low if bracket.near_low is not None else top
    if first is not None and first - low > 1:
        return (low + first) // 2
    last = bracket.near_high
    if last is None:
        return None
    if top is None:
        return None if last >= maximum else min(2 * last, maximum)
    return (last + top) // 2 if top - last > max(1, last // UPPER_PRECISION) else None


def worst_calls(start: int, maximum: int, cost: Callable[[int], int]) -> int:
    """The most calls a search from `start` (whose own level costs nothing: the run measured
    it) up to `maximum` can take, every level taking `cost(level)` calls, down the costliest
    sequence of outcomes."""

    @functools.cache
    def worst(bracket: Bracket) -> int:
        level = next_level(start, maximum, bracket)
        if level is None:
            return 0
        outcomes: tuple[LevelOutcome, ...] = ("held", "near", "broke")
        return cost(level) + max(worst(bracket.after(level, outcome)) for outcome in outcomes)

    first = min(start, maximum)
    outcomes: tuple[LevelOutcome, ...] = ("held", "near", "broke")
    return max(worst(Bracket().after(first, outcome)) for outcome in outcomes)
