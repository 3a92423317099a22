"""How long one level of a load search lasts and what it costs in calls, worked out before the
first call.

- A level of calls at once (`--capacity`, assess/load/at_once.py, docs/statistics.md
  "Capacity") takes bursts while its checks are undecided, and none once it has LEVEL_CALLS
  calls (whatever the concurrency: level 1 too).
- A level at a rate r (`--rate`, `--goodput`): calls arrive open-loop (Poisson by default) for a
  while; each call's latency counts from when it was due. Its length is in units of the budget
  (`max-concurrent-p95`, the latency a queue is held to), because a queue's memory is as long as
  its latencies, not as long as a number of calls: the calls due in the first RATE_WARMUP
  budgets are made and not judged (the queue fills from idle), a level may hold only once its
  judged calls span RATE_HOLD budgets, and it lasts at most RATE_SPAN budgets (and
  RATE_LEVEL_CALLS calls), or what `--rate-for` says. A level's tests (the capacity levels' two,
  assess/load/levels.py) need about 90 calls to hold even when none is over the budget,
  so at rates too low for RATE_JUDGED (the capacity levels' 130) calls in RATE_SPAN budgets a
  level of the auto length lasts until about that many are due after its warm-up (at most
  RATE_LEVEL_CALLS calls); a level fitted to `--goodput-time` or set by `--rate-for` is not
  lengthened.

docs/statistics.md ("Goodput") has why these lengths and what they buy, from simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from latency_gate.config.plan.hypotheses import hold_calls

if TYPE_CHECKING:
    from latency_gate.config.target import Budget

__all__ = [
    "LEVEL_CALLS",
    "RATE_HOLD",
    "RATE_IN_FLIGHT",
    "RATE_JUDGED",
    "RATE_LEVEL_CALLS",
    "RATE_SPAN",
    "RATE_WARMUP",
    "LevelLength",
    "Rated",
    "level_bursts",
    "level_length",
]

LEVEL_CALLS = 130

RATE_WARMUP = 3.0  # budgets of arrivals made, not judged: the queue fills from idle
RATE_HOLD = 60.0  # budgets of judged arrivals before a level may hold
RATE_SPAN = 90.0  # budgets of judged arrivals at most
RATE_LEVEL_CALLS = 1000  # calls a level makes at most, its warm-up included
RATE_JUDGED = 130  # judged calls an auto-length level lasts for at least (LEVEL_CALLS)
RATE_IN_FLIGHT = 256  # calls in flight at once, at most (a connection each)


def level_bursts(concurrency: int) -> int:
    """The most bursts one level of the capacity search takes at this concurrency."""
    return max(1, math.ceil(LEVEL_CALLS / concurrency))


@runtime_checkable
class Rated(Protocol):
    """What the plan reads of a target's calls at a rate (config.Target; a result file's
    settings, read again, have none)."""

    @property
    def budget(self) -> Budget: ...
    @property
    def timeout(self) -> float: ...
    @property
    def rate(self) -> float | None: ...
    @property
    def rate_calls(self) -> int | None: ...
    @property
    def rate_seconds(self) -> float | None: ...
    @property
    def goodput(self) -> bool: ...
    @property
    def goodput_time(self) -> float | None: ...


@dataclass(frozen=True)
class LevelLength:
    """How long one level at a rate lasts at most, and how much of it is judged.

    `seconds`: the span of its arrivals (warm-up included); `calls`: the most calls it makes;
    `warmup`: seconds of arrivals made but not judged; `hold`: seconds of judged arrivals
    before it may hold; `drain`: the most its calls still in flight take once arrivals stop;
    `judged`: at rates too low for that many calls due after the warm-up in `seconds`, the span
    lasts until that many are (0: never lengthened).
    """

    seconds: float
    calls: int
    warmup: float
    hold: float
    drain: float
    judged: int = 0

    def seconds_at(self, rate: float) -> float:
        """The span of a level's arrivals at `rate`: `seconds`, or longer at a rate too low for
        `judged` calls after the warm-up."""
        if math.isinf(self.seconds) or not self.judged:
            return self.seconds
        return max(self.seconds, self.warmup + self.judged / rate)

    def calls_at(self, rate: float) -> int:
        """The most calls a level at `rate` makes."""
        seconds = self.seconds_at(rate)
        if math.isinf(seconds):
            return self.calls
        return max(1, min(self.calls, math.ceil(rate * seconds)))

    def judged_at(self, rate: float) -> float:
        """About how many calls a level at `rate` judges: those due after its warm-up, within
        its span and its most calls."""
        seconds = self.seconds_at(rate)
        made = self.calls if math.isinf(seconds) else min(self.calls, rate * seconds)
        return max(0.0, made - rate * self.warmup)

    def holds_at(self, rate: float) -> bool:
        """Whether a level at `rate` can hold: its judged calls, two Poisson standard deviations
        short of what it expects, still as many as a hold needs with none over the budget."""
        judged = self.judged_at(rate)
        return judged - 2 * math.sqrt(judged) >= hold_calls()

    def holding_rates(self) -> tuple[float, float]:
        """The rates at which a level can hold (`holds_at`): (lowest, highest), the lowest
        above the highest when none can; 0 and infinity where nothing bounds them."""
        need = (1 + math.sqrt(1 + hold_calls())) ** 2  # n - 2 sqrt(n) = hold_calls()
        span = self.seconds - self.warmup
        lowest = 0.0 if math.isinf(self.seconds) or self.judged >= need else need / span
        if span <= 0:
            lowest = math.inf
        highest = math.inf if self.warmup <= 0 else (self.calls - need) / self.warmup
        return lowest, highest

    @property
    def slowest(self) -> float | None:
        """The rate under which a level is lengthened (None: never)."""
        if math.isinf(self.seconds) or not self.judged or self.seconds <= self.warmup:
            return None
        return self.judged / (self.seconds - self.warmup)

    @property
    def worst_seconds(self) -> float:
        """A level's longest at rates of `slowest` or more (arrivals and drain)."""
        return self.seconds + self.drain


def level_length(target: Rated) -> LevelLength:
    """One level's length from the budget (or `--rate-for`), before any fitting."""
    budget = target.budget.max_concurrent_p95 or 1.0
    span = (RATE_WARMUP + RATE_SPAN) * budget
    calls = RATE_LEVEL_CALLS
    if target.rate_seconds is not None:
        span = target.rate_seconds
    if target.rate_calls is not None:
        calls = target.rate_calls
        span = math.inf if target.rate_seconds is None else span
    warmup = min(RATE_WARMUP * budget, span / 3)
    hold = min(RATE_HOLD * budget, span - warmup)
    auto = target.rate_seconds is None and target.rate_calls is None
    return LevelLength(
        span, calls, warmup, hold, drain=target.timeout, judged=RATE_JUDGED if auto else 0
    )
