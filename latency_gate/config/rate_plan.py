"""Calls at a rate (`--rate`, `--goodput`): what one level and the goodput search cost in calls
and seconds, worked out before the first call (the settings' parsers are config/parsing.py's).

A level at a rate r: calls arrive open-loop (Poisson by default) for a while; each call's
latency counts from when it was due. Its length is in units of the budget (`max-concurrent-p95`,
the latency a queue is held to), because a queue's memory is as long as its latencies, not as
long as a number of calls: the calls due in the first RATE_WARMUP budgets are made and not
judged (the queue fills from idle), a level may hold only once its judged calls span
RATE_HOLD budgets, and it lasts at most RATE_SPAN budgets (and RATE_LEVEL_CALLS calls), or what
`--rate-for` says. A level's tests (the capacity levels' two, assess/load/capacity_levels.py) need
about 90 calls to hold even when none is over the budget, so at rates too low for RATE_JUDGED
(the capacity levels' 130) calls in RATE_SPAN budgets a level of the auto length lasts until
about that many are due after its warm-up (at most RATE_LEVEL_CALLS calls); a level fitted to
`--goodput-time` or set by `--rate-for` is not lengthened. The search (`--goodput`): from the
start rate, doubled while levels hold (halved while they break or are near the budget), at most
RATE_STEPS times, then bisected (geometric middle) until the lowest rate that was near or broke
is within RATE_PRECISION of the highest that held: at most RATE_STEPS + 4 levels.

docs/statistics.md ("Goodput") has why these lengths and what they buy, from simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from latency_gate.formatting import fmt_rate, plural

if TYPE_CHECKING:
    from latency_gate.config.target import Budget

__all__ = [
    "RATE_HOLD",
    "RATE_IN_FLIGHT",
    "RATE_JUDGED",
    "RATE_LEVEL_CALLS",
    "RATE_PRECISION",
    "RATE_SPAN",
    "RATE_STEPS",
    "RATE_WARMUP",
    "GoodputPlan",
    "LevelLength",
    "goodput_plan",
    "goodput_problems",
    "hold_calls",
    "level_length",
    "rate_room",
    "rate_warnings",
    "rate_worst_calls",
    "search_levels",
]

RATE_WARMUP = 3.0  # budgets of arrivals made, not judged: the queue fills from idle
RATE_HOLD = 60.0  # budgets of judged arrivals before a level may hold
RATE_SPAN = 90.0  # budgets of judged arrivals at most
RATE_LEVEL_CALLS = 1000  # calls a level makes at most, its warm-up included
RATE_JUDGED = 130  # judged calls an auto-length level lasts for at least (LEVEL_CALLS)
RATE_STEPS = 6  # doublings (or halvings) from the start rate, at most
RATE_PRECISION = 1.1  # bisect until broke / held is at most this
RATE_IN_FLIGHT = 256  # calls in flight at once, at most (a connection each)


class _Rated(Protocol):
    """What the plan reads of a target (config.Target)."""

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


def level_length(target: _Rated) -> LevelLength:
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


def hold_calls() -> int:
    """The fewest judged calls, none over the budget, that hold a level (config/plan.py's)."""
    from latency_gate.config.plan import hold_calls as calls  # noqa: PLC0415 (plan imports this)

    return calls()


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


def goodput_plan(target: _Rated, room: int | None = None) -> GoodputPlan | None:
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


def rate_worst_calls(target: object) -> int:
    """The most calls a target's run at a rate or goodput search makes (0 without them): what
    `max-calls: auto` leaves room for, after the checks and the capacity search."""
    if getattr(target, "rate", None) is None and not getattr(target, "goodput", False):
        return 0
    plan = goodput_plan(target)  # type: ignore[arg-type]  # a Target, or a file's settings
    return 0 if plan is None else plan.worst_calls


def rate_room(target: object, max_calls: int) -> int | None:
    """The calls `max-calls` leaves to the calls at a rate (None when it was sized for them)."""
    if getattr(target, "max_calls", None) is None:
        return None
    from latency_gate.config.plan import needs_of  # noqa: PLC0415 (plan imports this module)

    needs = needs_of(target)  # type: ignore[arg-type]
    return max(max_calls - needs.minimum - needs.capacity, 0)


def rate_warnings(target: object, room: int) -> list[str]:
    """What the reports say before the calls at a rate: their worst case, and what fitted the
    levels to max-calls or goodput-time."""
    if getattr(target, "rate", None) is None and not getattr(target, "goodput", False):
        return []
    fit = None if getattr(target, "max_calls", None) is None else max(room, 0)
    plan = goodput_plan(target, fit)  # type: ignore[arg-type]
    if plan is None:
        return []
    what = "the goodput search" if plan.levels > 1 else "the run at a rate"
    length = plan.length
    said = (
        f"{what} can take up to {plan.worst_calls:,} calls and {_minutes(plan.worst_seconds)} "
        f"({plan.levels} level{'s' if plan.levels > 1 else ''} of at most {length.calls:,} calls"
        f" and {_minutes(length.seconds)} of arrivals, the first {_minutes(length.warmup)} of "
        "them not judged)"
    )
    slowest = length.slowest
    if slowest is not None:
        said += (
            f"; at rates under {fmt_rate(slowest)} a level lasts until about {length.judged} "
            "calls are due after its warm-up (the tests need about 90 to hold), longer than that"
        )
    if plan.fitted:
        said += f"; levels fitted to the caps: {plan.fitted}"
    return [said]


def _minutes(seconds: float) -> str:
    if math.isinf(seconds):
        return "no time limit"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def goodput_problems(target: _Rated) -> list[tuple[str, str]]:
    """(input, message) for rate settings no run can honour."""
    problems: list[tuple[str, str]] = []
    asked = target.rate is not None or target.goodput
    if asked and target.budget.max_concurrent_p95 is None:
        problems.append(
            (
                "rate" if target.rate is not None else "goodput",
                "a level at a rate is held to the budget under load, max-concurrent-p95, and it "
                "is off: give it a budget",
            )
        )
        return problems
    plan = goodput_plan(target)
    if plan is not None and target.rate is not None and not target.goodput:
        problems += _level_problems(target, target.rate, plan.length)
    if plan is None or target.goodput_time is None:
        return problems
    if plan.length.seconds - plan.length.warmup <= 0:
        least = search_levels() * (target.timeout + 1.0)
        problems.append(
            (
                "goodput-time",
                f"{target.goodput_time:g} s leaves no time for arrivals: each of the search's "
                f"{plan.levels} levels may take the --timeout ({target.timeout:g} s) to end its "
                f"calls. Give at least {least:.0f}s, or leave it out (auto)",
            )
        )
    return problems


CI_JOB_SECONDS = 6 * 3600.0  # GitHub stops a job at 6 hours


def _level_problems(target: _Rated, rate: float, length: LevelLength) -> list[tuple[str, str]]:
    """The level at `--rate` that no run could judge: no call due after its warm-up (a
    `--rate-for` too short, or what `--max-calls` leaves), or, at a rate too low, a level
    longer than a CI job runs. It would otherwise make its calls and judge none of them."""
    need = math.ceil((1 + math.sqrt(1 + hold_calls())) ** 2)  # judged calls a hold needs
    least_calls = math.ceil(rate * length.warmup) + need
    least_seconds = length.warmup + need / rate
    warmup = (
        f"its warm-up of {length.warmup:g} s (the first {RATE_WARMUP:g} budgets of arrivals: "
        "made, not judged)"
    )
    span = length.seconds_at(rate)
    if math.isinf(span):
        span = length.calls / rate
    if max(span, least_seconds if length.judged_at(rate) < 1 else 0.0) > CI_JOB_SECONDS:
        judged = max(length.judged, need)
        lowest = judged / (CI_JOB_SECONDS - length.warmup)
        return [
            (
                "rate",
                f"at {fmt_rate(rate)} a level lasts until about {judged} calls are due after "
                f"{warmup}: {max(span, least_seconds) / 3600:,.0f} h, longer than a CI job runs "
                f"(GitHub stops one at 6 h). Give a rate of at least {fmt_rate(lowest * 1.01)}",
            )
        ]
    least = (
        f"at least {least_calls:,} calls (or {least_seconds:.0f}s), enough for the {need} judged "
        "calls a level needs to hold"
    )
    if length.judged_at(rate) < 1:
        given = (
            plural(target.rate_calls, "call")
            if target.rate_calls is not None
            else f"{length.seconds_at(rate):g} s of arrivals"
        )
        return [
            (
                "rate-for",
                f"a level of {given} at {fmt_rate(rate)} has no call due after {warmup}, so it "
                f"would judge none. Give {least}, or leave it out (auto)",
            )
        ]
    fitted = getattr(target, "max_calls", None)
    if fitted is not None:
        room = rate_room(target, fitted)
        if room is not None and replace(length, calls=min(length.calls, room)).judged_at(rate) < 1:
            more = least_calls - min(length.calls, room)
            return [
                (
                    "max-calls",
                    f"{fitted:,} calls leave {room:,} to the level at {fmt_rate(rate)}, none of "
                    f"them due after {warmup}, so it would judge none. Raise it to at least "
                    f"{fitted + more:,}, or leave it out (it is then sized to fit)",
                )
            ]
    return []
