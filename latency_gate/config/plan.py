"""What a budget's checks mean in calls: their hypotheses, the sampling plan's limits, and what a
run needs before it can decide.

Each gated statement ("warm p95 <= 3 s", "error rate <= 0.01") is decided by a sequential test
between a healthy and a failing share (assess/budget/checks.py, docs/statistics.md). Those shares
are part of what a budget means, so they are defined here, beside the plan's limits, and the edges
can hold a target's `max-calls` against what its checks need before the first call, without
loading the judging layer (start-up, docs/benchmarks.md).

- A percentile q "at or under the limit" means at most (100 - q) % of calls over the limit. The
  test weighs a share whose odds are PERCENTILE_ODDS times smaller (healthy: 1.98 % for the p95)
  against one whose odds are PERCENTILE_ODDS times larger (failing: 12.0 %).
- The error rate weighs ERROR_HEALTHY x budget (0.5 % for 0.01) against ERROR_FAILING x budget
  (3 %): a PASS rules out three times the budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from latency_gate.config.rate_plan import rate_warnings, rate_worst_calls
from latency_gate.config.search import worst_calls

if TYPE_CHECKING:
    from latency_gate.config.target import Budget

__all__ = [
    "DEFAULT_CAPACITY_MAX",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_CALLS",
    "DEFAULT_WARM_CALLS",
    "ERROR_ALPHA",
    "ERROR_BETA",
    "ERROR_CLUMP",
    "ERROR_FAILING",
    "ERROR_HEALTHY",
    "LEVEL_ALPHA",
    "LEVEL_BETA",
    "LEVEL_BROKEN_SHARE",
    "LEVEL_CALLS",
    "LEVEL_HELD_SHARE",
    "LEVEL_SHARE",
    "LOOK_WARM_CALLS",
    "MAX_LOOKS",
    "PERCENTILE_ALPHA",
    "PERCENTILE_BETA",
    "PERCENTILE_ODDS",
    "CallsNeeded",
    "calls_needed",
    "clean_calls_to_pass",
    "clean_calls_to_pass_errors",
    "effective_max_calls",
    "error_shares",
    "fit_first_look",
    "hold_calls",
    "level_bursts",
    "needs_of",
    "odds_shifted",
    "percentile_shares",
    "plan_problems",
    "plan_warnings",
    "search_least_calls",
    "search_worst_calls",
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

PERCENTILE_ODDS = 2.6
PERCENTILE_ALPHA = 0.01  # P(FAIL) for a healthy share, by Ville's inequality
PERCENTILE_BETA = 0.03  # P(PASS) for a failing share

ERROR_HEALTHY = 0.5
ERROR_FAILING = 3.0
ERROR_ALPHA = 0.02
ERROR_BETA = 0.04
# Failures come in clumps (a restart, a deploy, an outage): the error budget's test counts clumps
# (assess/budget/clumps.py), and until the calls show how long theirs are, a PASS allows for clumps
# of this many calls (docs/statistics.md, "Failures in clumps").
ERROR_CLUMP = 1
# The error budget's calls for its stated error rates near the budget: ERROR_ROOM / budget
# (500 for 0.01; docs/statistics.md, table d).
ERROR_ROOM = 5.0

# The capacity search (assess/load/capacity.py, docs/statistics.md "Capacity"): each level of
# concurrency takes bursts while its checks are undecided, and none once it has LEVEL_CALLS
# calls (whatever the concurrency: level 1 too); the search goes no higher than --capacity-max.
# A level holds when its calls rule out LEVEL_SHARE or more of them over the budget (its p95
# over it) and breaks when they rule out LEVEL_SHARE or fewer: one test from each side of that
# line, against LEVEL_HELD_SHARE and LEVEL_BROKEN_SHARE, wrong at most LEVEL_BETA and
# LEVEL_ALPHA of the time (Ville's bound). Between the two it is near the budget.
LEVEL_CALLS = 130
LEVEL_SHARE = 0.05
LEVEL_HELD_SHARE = 0.01
LEVEL_BROKEN_SHARE = 0.15
LEVEL_ALPHA = 0.01
LEVEL_BETA = 0.025
DEFAULT_CAPACITY_MAX = 64


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


def odds_shifted(share: float, factor: float) -> float:
    """The share whose odds are `factor` times those of `share` (factor < 1: a smaller share)."""
    odds = share / (1.0 - share) * factor
    return odds / (1.0 + odds)


def percentile_shares(q: float) -> tuple[float, float]:
    """(healthy, failing) shares of calls over the limit for the q-th percentile's check."""
    if not 0 < q < 100:
        raise ValueError(f"a budget check needs 0 < q < 100, got {q}")
    share = 1.0 - q / 100
    return odds_shifted(share, 1 / PERCENTILE_ODDS), odds_shifted(share, PERCENTILE_ODDS)


def error_shares(budget: float) -> tuple[float, float] | None:
    """(healthy, failing) failure shares for an error budget; None for a budget of 0 (no
    failure allowed: decided by the first failure)."""
    if not 0 <= budget < 1:
        raise ValueError(f"an error budget must be in [0, 1), got {budget}")
    if budget == 0:
        return None
    return ERROR_HEALTHY * budget, min(ERROR_FAILING * budget, budget + (1 - budget) / 2)


def clean_calls_to_pass(healthy: float, failing: float, beta: float) -> int:
    """The fewest calls, none of them over the limit (or failed), that decide PASS."""
    return math.ceil(math.log(beta) / math.log((1 - failing) / (1 - healthy)) - 1e-9)


def hold_calls() -> int:
    """The fewest judged calls, none over the budget, that hold a level (its test of
    LEVEL_SHARE against LEVEL_HELD_SHARE of calls over the budget, assess/load/capacity_levels.py's
    HOLD_TEST)."""
    return clean_calls_to_pass(LEVEL_HELD_SHARE, LEVEL_SHARE, LEVEL_BETA)


def clean_calls_to_pass_errors(budget: float) -> int | None:
    """The fewest calls without a failure that PASS an error budget (None for a budget of 0):
    its test allows for failures in clumps of ERROR_CLUMP calls until the calls show theirs."""
    shares = error_shares(budget)
    if shares is None:
        return None
    healthy, failing = shares
    return clean_calls_to_pass(healthy / ERROR_CLUMP, failing / ERROR_CLUMP, ERROR_BETA)


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
    # Calls at a rate (--rate, --goodput; config/rate_plan.py): their worst case, after that.
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


class _Planned(Protocol):
    """What the plan reads of a target (config.Target)."""

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


class _Checked(_Planned, Protocol):
    """What the plan's problems read of a target besides: the capacity's floor."""

    @property
    def min_capacity(self) -> int | None: ...


def needs_of(target: _Planned) -> CallsNeeded:
    """What a target's checks need in calls (with --capacity, the search's worst case too)."""
    needs = calls_needed(
        target.budget, warm_calls=target.warm_calls, concurrency=target.concurrency
    )
    worst = search_worst_calls(target.concurrency, target.capacity_max) if target.capacity else 0
    rated = rate_worst_calls(target)
    if not worst and not rated:
        return needs
    return CallsNeeded(
        needs.minimum, needs.latency, needs.error, needs.why, capacity=worst, goodput=rated
    )


def effective_max_calls(target: _Planned) -> int:
    """The cap a run of `target` works under: its `max_calls`, or when none was given, the calls
    its checks can need (DEFAULT_MAX_CALLS at least, and never under what a perfect endpoint
    needs to have every check decided), plus the capacity search's worst case."""
    if target.max_calls is not None:
        return target.max_calls
    needs = needs_of(target)
    checks = max(DEFAULT_MAX_CALLS, needs.latency, needs.minimum)
    return min(LARGEST_CAP, checks + needs.capacity + needs.goodput)


def level_bursts(concurrency: int) -> int:
    """The most bursts one level of the capacity search takes at this concurrency."""
    return max(1, math.ceil(LEVEL_CALLS / concurrency))


def search_worst_calls(start: int, maximum: int) -> int:
    """The most calls the capacity search can make from a run at concurrency `start` up to
    `maximum`, every level taken to its cap down the costliest sequence of outcomes
    (config/search.py), the run's own level included (it takes bursts of its own when the
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
    of assess/capacity_levels.HOLD_TEST). (0, start) when the run's own level already reaches
    the floor (a lower bound: the run's level may take bursts of its own)."""
    clean = hold_calls()
    level, calls = min(start, maximum), 0
    while level < floor and level < maximum:
        level = min(2 * level, maximum)
        calls += level * min(level_bursts(level), math.ceil(clean / level))
    return calls, level


def plan_problems(target: _Checked) -> list[tuple[str, str]]:
    """(input, message) for each setting no run can decide: an error budget whose test needs more
    calls than any CI run makes, and, with on-undecided fail, a max-calls under what a perfect
    endpoint needs (every run would fail by policy)."""
    needs = needs_of(target)
    problems: list[tuple[str, str]] = []
    rate = target.budget.max_error_rate
    if needs.minimum > LARGEST_CAP and rate is not None and rate > 0:
        smallest = _smallest_decidable_budget()
        problems.append(
            (
                "max-error-rate",
                f"a budget of {rate:g} cannot be decided: {needs.why}, more than the "
                f"{LARGEST_CAP:,} calls a run may make. Use at least {smallest:g}, 0 for no "
                "failure allowed, or off",
            )
        )
    elif (
        target.max_calls is not None
        and target.max_calls < needs.minimum
        and target.on_undecided == "fail"
    ):
        problems.append(
            (
                "max-calls",
                f"{target.max_calls:,} calls cannot decide every check even for a perfect "
                f"endpoint ({needs.why}; it needs {needs.minimum:,} calls), so with "
                "on-undecided fail every run would fail. Raise it to at least "
                f"{needs.minimum:,}, leave it out (it is then sized to fit), or choose "
                "on-undecided estimate",
            )
        )
    floor = target.min_capacity
    if floor is not None and target.max_calls is not None and floor <= target.capacity_max:
        search, level = search_least_calls(target.concurrency, floor, target.capacity_max)
        least = needs.minimum + search
        if target.max_calls < least:
            problems.append(
                (
                    "max-calls",
                    f"{target.max_calls:,} calls cannot reach the {floor} calls at once that "
                    f"min-capacity asks for, even for a perfect endpoint: the checks take "
                    f"{needs.minimum:,} ({needs.why}) and the search {search:,} more to hold "
                    f"{level} at once, so no run could decide it. Raise it to at least "
                    f"{least:,}, or leave it out (it is then sized to fit)",
                )
            )
    return problems


def plan_warnings(target: _Planned) -> list[str]:
    """What the reports must say about the cap: sized up to fit the checks, or under what they
    can need (error rates near a budget then over the stated ones)."""
    needs = needs_of(target)
    cap = effective_max_calls(target)
    warnings: list[str] = []
    default_look = 1 + DEFAULT_WARM_CALLS + DEFAULT_CONCURRENCY
    if target.max_calls is not None and getattr(target, "first_look_fitted", False):
        warm = target.warm_calls
        warnings.append(
            f"max-calls {target.max_calls:,} is under the {default_look} calls of the default "
            f"first look, fitted to it: 1 cold call, {warm:,} warm call{'s' if warm != 1 else ''} "
            f"and a burst of {target.concurrency:,}, and its checks rest on {target.max_calls:,} "
            "calls at most"
        )
    if target.max_calls is None and (needs.capacity or needs.goodput):
        checks = cap - needs.capacity - needs.goodput
        parts = [f"{checks:,} for the checks"]
        if needs.capacity:
            parts.append(f"up to {needs.capacity:,} for the capacity search")
        if needs.goodput:
            parts.append(f"up to {needs.goodput:,} for the calls at a rate")
        listed = ", ".join(parts[:-1]) + " and " + parts[-1]
        warnings.append(f"max-calls sized to {cap:,}: {listed}")
    elif target.max_calls is None and cap > DEFAULT_MAX_CALLS:
        what = needs.why if cap == needs.minimum else f"the calls of {MAX_LOOKS} looks"
        warnings.append(f"max-calls sized to {cap:,} to fit the checks ({what})")
    checks = needs.design - needs.capacity - needs.goodput
    if needs.capacity and cap < needs.design - needs.goodput:
        warnings.append(
            f"max-calls {cap:,} may stop the capacity search before it ends (after the checks' "
            f"{checks:,} calls it can take up to {needs.capacity:,}): its figure is then the "
            "highest level that held, said as 'at least'"
        )
    warnings += rate_warnings(target, cap - checks - needs.capacity)
    if cap < checks:
        how = {
            "fail": "fail there, undecided",
            "pass": "pass there, undecided",
        }.get(target.on_undecided, "be decided there by its value")
        warnings.append(
            f"max-calls {cap:,} is under the {checks:,} calls the checks can need: a "
            f"check near its budget may {how}, with error rates over the stated ones (each "
            "check's line says the ones of this run)"
        )
    return warnings


def _smallest_decidable_budget() -> float:
    """The smallest error budget whose test passes within LARGEST_CAP calls, rounded up to one
    significant digit."""
    budget = 1e-6
    while True:
        clean = clean_calls_to_pass_errors(budget)
        if clean is not None and clean <= LARGEST_CAP:
            break
        budget *= 1.01
    exponent = math.floor(math.log10(budget))
    return float(math.ceil(budget / 10**exponent) * 10**exponent)
