"""The order in which the load searches try levels, and what the worst order costs, worked out
before the first call.

Pure rules, without the judging layer: assess/load/ drives the searches with them, and the plan
(needs.py) sizes `max-calls: auto` from their worst case before the first call.

Calls at once (`--capacity`, up to `--capacity-max`). Each level tried ends held (its p95 shown
within the budget), broke (shown over it) or near (its calls could not tell). The levels are
assumed to break from some concurrency on, as a queue or a batch does, so what was tried is a
bracket: `low`, the highest level that held below every level that broke; `top`, the lowest level
that broke; and the near levels between them, from `near_low` to `near_high`. The capacity is
`low` when no level between `low` and `top` was near and they are one call apart, and otherwise
somewhere from `low` to the level below the first one shown to break.

- While every level held: double (2 c0, 4 c0 ... at most `maximum`).
- Else, first the gap below the lowest near or broken level: its middle, until `low` is the
  level just below it (from a start that did not hold, `low` is 0: the middle of 0 and c0).
- Then the gap above the highest near level: doubling while nothing above it broke, then the
  middle, until the lowest level that broke is within an eighth of it (one call, for levels
  under 16): the figure is exact where the levels were told apart, and an interval's upper end
  is said to within 12.5 %.

Requests a second (`--goodput`): from the start rate, doubled while levels hold (halved while
they break or are near the budget), at most RATE_STEPS times, then bisected (geometric middle)
until the lowest rate that was near or broke is within RATE_PRECISION of the highest that held:
at most RATE_STEPS + 4 levels, each fitted to what `max-calls` and `goodput-time` leave.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

from latency_gate.config.plan.hypotheses import hold_calls
from latency_gate.config.plan.levels import LevelLength, Rated, level_bursts, level_length

__all__ = [
    "DEFAULT_CAPACITY_MAX",
    "RATE_PRECISION",
    "RATE_STEPS",
    "Bracket",
    "GoodputPlan",
    "LevelOutcome",
    "goodput_plan",
    "next_level",
    "rate_worst_calls",
    "search_least_calls",
    "search_levels",
    "search_worst_calls",
    "worst_calls",
]

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


DEFAULT_CAPACITY_MAX = 64
RATE_STEPS = 6  # doublings (or halvings) from the start rate, at most
RATE_PRECISION = 1.1  # bisect until broke / held is at most this


def search_worst_calls(start: int, maximum: int) -> int:
    """The most calls the capacity search can make from a run at concurrency `start` up to
    `maximum`, every level taken to its cap down the costliest sequence of outcomes
    (`worst_calls`), the run's own level included (it takes bursts of its own when the
    run's calls leave it near the budget)."""

    def cost(level: int) -> int:
        return level * level_bursts(level)

    return cost(min(start, maximum)) + worst_calls(start, maximum, cost)


def search_least_calls(start: int, floor: int, maximum: int) -> tuple[int, int]:
    """(calls, level): the fewest calls the capacity search takes to hold a level of at least
    `floor` calls at once for a perfect endpoint (every call within the budget), from a run at
    concurrency `start` (whose own burst decided that level), and that level. The search
    doubles while levels hold; each level holds once its p95 test passes (or at its last
    burst): a clean level holds once its calls rule out LEVEL_SHARE over the budget (the test
    of assess/load/levels.py's HOLD_TEST, `hold_calls`). (0, start) when the run's own
    level already reaches the floor (a lower bound: the run's level may take bursts of its
    own)."""
    clean = hold_calls()
    level, calls = min(start, maximum), 0
    while level < floor and level < maximum:
        level = min(2 * level, maximum)
        calls += level * min(level_bursts(level), math.ceil(clean / level))
    return calls, level


def search_levels() -> int:
    """The most levels the search tries: the start, RATE_STEPS doublings (or halvings), and
    the bisections that take a gap of two down to RATE_PRECISION."""
    bisections = math.ceil(math.log2(math.log(2) / math.log(RATE_PRECISION)))
    return 1 + RATE_STEPS + bisections


@dataclass(frozen=True)
class GoodputPlan:
    """The levels of a run at a rate (`levels` 1) or of the goodput search, worked out before
    the first call: each level's length, fitted to `max-calls` and `goodput-time`, and what the
    whole can take at most. `fitted` says what shortened the levels ("" when nothing did)."""

    levels: int
    length: LevelLength
    worst_calls: int
    worst_seconds: float
    fitted: str = ""


def goodput_plan(target: Rated, room: int | None = None) -> GoodputPlan | None:
    """What the rate run or the goodput search of `target` can take, its levels fitted so that
    every level fits in `room` calls (what max-calls leaves; None: no cap) and in the
    `goodput-time`; None without `--rate` or `--goodput`."""
    if target.rate is None and not target.goodput:
        return None
    levels = search_levels() if target.goodput else 1
    length = level_length(target)
    fitted: list[str] = []
    if room is not None and length.calls * levels > room:
        calls = max(1, room // levels)
        fitted.append(f"max-calls leaves {room:,} calls: at most {calls:,} a level")
        length = replace(length, calls=calls)
    if target.goodput_time is not None and length.worst_seconds * levels > target.goodput_time:
        span = max(target.goodput_time / levels - length.drain, 0.0)
        warmup = min(length.warmup, span / 3)
        fitted.append(
            f"goodput-time {target.goodput_time:g} s: at most {span:.0f} s of arrivals a level"
        )
        length = replace(  # the time cap is kept: no level lengthened past it (judged 0)
            length, seconds=span, warmup=warmup, hold=min(length.hold, span - warmup), judged=0
        )
    worst_calls = length.calls * levels
    worst_seconds = length.worst_seconds * levels
    return GoodputPlan(levels, length, worst_calls, worst_seconds, "; ".join(fitted))


def rate_worst_calls(target: Rated) -> int:
    """The most calls a target's run at a rate or goodput search makes (0 without them): what
    `max-calls: auto` leaves room for, after the checks and the capacity search."""
    plan = goodput_plan(target)
    return 0 if plan is None else plan.worst_calls
