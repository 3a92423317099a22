"""The calls a run needs: its first look, what its checks can need over the plan's looks, and the
cap it works under (`max-calls`, or sized to fit when it is auto), the load searches' worst case
included.

The sampling plan (assess/budget/sampling.py) makes a first look of 1 cold call, the warm calls
and one burst, then looks that add LOOK_WARM_CALLS warm calls, or as many calls in bursts, to the
checks still undecided, at most MAX_LOOKS in all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from latency_gate.config.plan.hypotheses import (
    PERCENTILE_BETA,
    clean_calls_to_pass,
    clean_calls_to_pass_errors,
    percentile_shares,
)
from latency_gate.config.plan.levels import Rated
from latency_gate.config.plan.search import rate_worst_calls, search_worst_calls

if TYPE_CHECKING:
    from latency_gate.config.target import Budget

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_CALLS",
    "DEFAULT_WARM_CALLS",
    "LARGEST_CAP",
    "LOOK_WARM_CALLS",
    "MAX_LOOKS",
    "CallsNeeded",
    "Planned",
    "calls_needed",
    "effective_max_calls",
    "fit_first_look",
    "needs_of",
    "rate_room",
]

# The first look's calls when none are given: 1 cold, DEFAULT_WARM_CALLS warm calls and a burst
# of DEFAULT_CONCURRENCY. A max-calls under that fits the counts not given to it (fit_first_look).
DEFAULT_WARM_CALLS = 20
DEFAULT_CONCURRENCY = 10
# The least a first look fitted to max-calls takes: the cold call, one warm call, a burst of 2.
_LEAST_WARM = 1
_LEAST_BURST = 2

# The sampling plan (assess/budget/sampling.py): looks after the first add LOOK_WARM_CALLS warm
# calls, or as many calls in bursts, to the checks still undecided.
MAX_LOOKS = 9
LOOK_WARM_CALLS = 20
# What the default checks can need, with the error budget's room (docs/statistics.md, table d).
DEFAULT_MAX_CALLS = 500
# A cap above this is not a CI run any more.
LARGEST_CAP = 100_000
# The error budget's calls for its stated error rates near the budget: ERROR_ROOM / budget
# (500 for 0.01; docs/statistics.md, table d).
ERROR_ROOM = 5.0


def fit_first_look(
    max_calls: int,
    warm_calls: int | None,
    concurrency: int | None,
    spelled: Callable[[str], str] = str,
) -> tuple[int, int]:
    """(warm calls, concurrency) of a first look within `max_calls` calls (cold call included).

    `warm_calls` and `concurrency` are the counts given (None: not given, the defaults'). A cap
    at or over the first look leaves it as it is; under it, the counts not given are made
    smaller, the burst a third of the calls after the cold one (as 10 of the default 30),
    down to one warm call and a burst of 2. Raises ValueError, saying the least it takes, when
    the counts given (or that least) do not fit: max-calls is a cap, never spent past.
    `spelled` names an input as the user wrote it.
    """
    warm = DEFAULT_WARM_CALLS if warm_calls is None else warm_calls
    burst = DEFAULT_CONCURRENCY if concurrency is None else concurrency
    if 1 + warm + burst <= max_calls:
        return warm, burst
    if concurrency is None:
        room = max_calls - 1 - (warm if warm_calls is not None else _LEAST_WARM)
        third = (max_calls - 1) // 3
        burst = max(_LEAST_BURST, min(burst, room if warm_calls is not None else third))
    if warm_calls is None:
        warm = max(_LEAST_WARM, min(warm, max_calls - 1 - burst))
    least = 1 + warm + burst
    if least <= max_calls:
        return warm, burst
    given = [
        spelled(text)
        for text, count in (("warm-calls", warm_calls), ("concurrency", concurrency))
        if count is not None
    ]
    asked = f" ({' and '.join(given)} as given)" if given else ""
    plural = "s" if warm != 1 else ""
    raise ValueError(
        f"{max_calls:,} call{'s' if max_calls != 1 else ''} cannot hold the first look: it takes "
        f"at least {least:,}, a cold call, {warm:,} warm call{plural} and a burst of "
        f"{burst:,}{asked}. Give at least {least:,}"
        + (f", or lower {' and '.join(given)}" if given else "")
    )


def _first_at_least(first: int, step: int, need: int) -> int:
    """The first of first, first + step, ... that is at least `need`."""
    return first if need <= first else first + step * math.ceil((need - first) / step)


@dataclass(frozen=True)
class CallsNeeded:
    """What a target's gated checks need in calls.

    `minimum`: the calls after which a perfect endpoint (nothing over a limit, no failure) has
    every check decided: a smaller cap leaves a check undecided whatever the endpoint does.
    `latency`: the calls the latency checks can take over the plan's looks. `error`: the cap
    under which the error budget's stated error rates near it hold (docs/statistics.md).
    `why`: what sets the minimum, in words.
    """

    minimum: int
    latency: int
    error: int
    why: str
    # The capacity search's worst case (0 without --capacity): added on top, since the search
    # runs after the looks, on what the cap leaves.
    capacity: int = 0
    # Calls at a rate (--rate, --goodput; search.py): their worst case, after that.
    goodput: int = 0

    @property
    def design(self) -> int:
        """The cap under which every stated error rate holds."""
        return max(self.minimum, self.latency, self.error) + self.capacity + self.goodput


def calls_needed(budget: Budget, *, warm_calls: int, concurrency: int) -> CallsNeeded:
    """The calls `budget`'s checks need with these counts (first look: 1 + warm + one burst)."""
    bursts = math.ceil(LOOK_WARM_CALLS / concurrency) * concurrency
    warm_need = 0
    for limit, q in (
        (budget.max_warm_p50, 50),
        (budget.max_warm_p95, 95),
        (budget.max_tpot_p95, 95),
    ):
        if limit is not None:
            need = clean_calls_to_pass(*percentile_shares(q), PERCENTILE_BETA)
            warm_need = max(warm_need, need)
    warm = _first_at_least(warm_calls, LOOK_WARM_CALLS, warm_need) if warm_need else warm_calls
    concurrent = concurrency
    if budget.max_concurrent_p95 is not None:
        p95 = clean_calls_to_pass(*percentile_shares(95), PERCENTILE_BETA)
        concurrent = _first_at_least(concurrency, bursts, p95)
    minimum = 1 + warm + concurrent
    why = "the latency checks"
    rate = budget.max_error_rate
    clean = None if rate is None else clean_calls_to_pass_errors(rate)
    error_design = 0
    if clean is not None and budget.max_error_rate is not None:
        if clean > minimum:
            minimum = _first_at_least(minimum, concurrency, clean)
            why = (
                f"the error budget {budget.max_error_rate:g} passes after {clean:,} calls "
                "without a failure"
            )
        error_design = math.ceil(ERROR_ROOM / budget.max_error_rate)
    looks_more = MAX_LOOKS - 1
    latency = (
        1
        + warm_calls
        + (looks_more * LOOK_WARM_CALLS if warm_need else 0)
        + concurrency
        + (looks_more * bursts if budget.max_concurrent_p95 is not None else 0)
    )
    return CallsNeeded(minimum=minimum, latency=latency, error=error_design, why=why)


class Planned(Protocol):
    """What the plan reads of a target (config.Target, or a result file's settings read again)."""

    @property
    def budget(self) -> Budget: ...
    @property
    def warm_calls(self) -> int: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def max_calls(self) -> int | None: ...
    @property
    def on_undecided(self) -> str: ...
    @property
    def capacity(self) -> bool: ...
    @property
    def capacity_max(self) -> int: ...


def needs_of(target: Planned) -> CallsNeeded:
    """What a target's checks need in calls (with --capacity, the search's worst case too)."""
    needs = calls_needed(
        target.budget, warm_calls=target.warm_calls, concurrency=target.concurrency
    )
    worst = search_worst_calls(target.concurrency, target.capacity_max) if target.capacity else 0
    rated = rate_worst_calls(target) if isinstance(target, Rated) else 0
    if not worst and not rated:
        return needs
    return CallsNeeded(
        needs.minimum, needs.latency, needs.error, needs.why, capacity=worst, goodput=rated
    )


def effective_max_calls(target: Planned) -> int:
    """The cap a run of `target` works under: its `max_calls`, or when none was given, the calls
    its checks can need (DEFAULT_MAX_CALLS at least, and never under what a perfect endpoint
    needs to have every check decided), plus the capacity search's worst case."""
    if target.max_calls is not None:
        return target.max_calls
    needs = needs_of(target)
    checks = max(DEFAULT_MAX_CALLS, needs.latency, needs.minimum)
    return min(LARGEST_CAP, checks + needs.capacity + needs.goodput)


def rate_room(target: Planned, max_calls: int) -> int | None:
    """The calls `max-calls` leaves to the calls at a rate (None when it was sized for them)."""
    if target.max_calls is None:
        return None
    needs = needs_of(target)
    return max(max_calls - needs.minimum - needs.capacity, 0)
