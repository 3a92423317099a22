"""Capacity at the budget: the most calls at once whose concurrent p95 holds its budget.

After the run's looks, `--capacity` searches the concurrency. Level c0 (the run's
`concurrency`) starts from the run's own concurrent calls, judged by the level's tests; when
they cannot tell, it takes bursts of its own like any level. Which level comes next is
config/search.py's rule (double while levels hold, then halve the gaps around the levels that
were near the budget or broke).

Each level is a burst of c calls started together (the engine's burst, at concurrency c), judged
after each burst on that level's calls alone, with more bursts while undecided, up to
LEVEL_CALLS calls (capacity_levels.py): it holds, breaks, or is near the budget. The capacity is
the highest level that held below the lowest that broke; when levels between them were near
the budget it is said as an interval ("between 12 and 16"). `CapacitySearch` is the search
alone (levels in, the next level out); `CapacityRun` drives it with calls, burst by burst, for
the engine's hook (wired in latency_gate/run.py), under the calls `max-calls` leaves: when a
burst no longer fits, the search stops there and the capacity is "at least" the highest level
that held.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from latency_gate.assess.budget.gate import Gate
from latency_gate.assess.budget.sampling import on_undecided_policy
from latency_gate.assess.load.capacity_levels import (
    LevelCalls,
    LevelJudged,
    LevelLimits,
    judge_level,
    level_record,
)
from latency_gate.config import Target
from latency_gate.config.plan.levels import LEVEL_CALLS
from latency_gate.config.plan.search import Bracket, LevelOutcome, next_level
from latency_gate.models import CallPhase, Capacity, CapacityLevel, Sample

__all__ = [
    "CapacityRun",
    "CapacitySearch",
    "RunLevel",
    "judged_again",
    "outcome_of",
    "start_search",
]


def outcome_of(level: CapacityLevel) -> LevelOutcome:
    """A judged level's outcome: held, near (the budget) or broke."""
    return "held" if level.held else "near" if level.near else "broke"


@dataclass
class CapacitySearch:
    """The search alone: which level to try next, from the levels tried so far
    (config/search.py's rule, from `start` up to `maximum`)."""

    start: int
    maximum: int
    tried: list[tuple[int, LevelOutcome]] = field(default_factory=list)

    def record(self, level: int, outcome: LevelOutcome) -> None:
        self.tried.append((level, outcome))

    @property
    def bracket(self) -> Bracket:
        return Bracket.of(self.tried)

    def next_level(self) -> int | None:
        """The concurrency to try next, or None when the search is over."""
        return next_level(self.start, self.maximum, self.bracket if self.tried else None)

    @property
    def found(self) -> int:
        """The capacity: the highest level that held below the lowest that broke (0: none)."""
        return self.bracket.low


@dataclass
class _Level:
    """A level in progress: its concurrency, its calls, bursts and looks so far. `own`: level
    c0, whose first calls are the run's (`samples` holds only the bursts it added)."""

    concurrency: int
    samples: list[Sample] = field(default_factory=list)
    calls: LevelCalls = field(default_factory=LevelCalls)
    looks: list[int] = field(default_factory=list)
    seconds: float = 0.0
    own: bool = False
    bursts: int = 0


@dataclass(frozen=True)
class RunLevel:
    """Level c0 as the run left it: its concurrency, the run's concurrent calls and the calls
    behind its concurrent check at each of the run's looks."""

    concurrency: int
    calls: LevelCalls
    looks: tuple[int, ...]


@dataclass
class CapacityRun:
    """The search of one run, driven burst by burst by the engine's hook.

    `start` is level c0 as the run left it; `room` the calls `max-calls` leaves after the
    looks. `next_burst()` says the concurrency of the next burst (None: the search is over);
    `add_burst(samples, seconds)` hands it the burst's calls; `capacity()` is the result.
    """

    limits: LevelLimits
    maximum: int
    room: int
    start: RunLevel
    search: CapacitySearch = field(init=False)
    levels: list[CapacityLevel] = field(default_factory=list)
    current: _Level | None = None
    calls: int = 0
    seconds: float = 0.0
    stopped: str = ""
    cut_by_cap: bool = False

    def __post_init__(self) -> None:
        self.search = CapacitySearch(start=self.start.concurrency, maximum=self.maximum)
        own = _Level(
            self.start.concurrency,
            calls=self.start.calls,
            looks=list(self.start.looks),
            own=True,
        )
        last = own.calls.calls >= LEVEL_CALLS
        judged = judge_level(own.calls, self.limits, looks=own.looks, last=last)
        if judged.held is not None or judged.near:
            self._close(own, judged)
        else:
            self.current = own

    def next_burst(self) -> int | None:
        """The concurrency of the next burst, or None when the search is over (said in
        `stopped`)."""
        if self.stopped:
            return None
        if self.current is None:
            level = self.search.next_level()
            if level is None:
                self.stopped = self._finished()
                return None
            self.current = _Level(level)
        if self.current.concurrency > self.room - self.calls:
            self._stop_for_cap()
            return None
        return self.current.concurrency

    def add_burst(self, samples: Sequence[Sample], seconds: float) -> None:
        """The calls of the burst `next_burst` asked for, and how long it took."""
        level = self.current
        if level is None:
            raise RuntimeError("no level in progress: ask next_burst() first")
        indexed = [
            s.model_copy(update={"index": len(level.samples) + i}) for i, s in enumerate(samples)
        ]
        level.samples += indexed
        level.calls += LevelCalls.of(indexed)
        level.looks.append(level.calls.calls)
        level.seconds += seconds
        level.bursts += 1
        self.calls += len(samples)
        self.seconds += seconds
        last = level.calls.calls >= LEVEL_CALLS
        judged = judge_level(level.calls, self.limits, looks=level.looks, last=last)
        if judged.held is not None or judged.near:
            self._close(level, judged)

    def interrupt(self, why: str = "the run was interrupted") -> None:
        """Stop where the search is: a level in progress is dropped (not judged)."""
        if not self.stopped:
            self.stopped = why
            self.current = None

    def _stop_for_cap(self) -> None:
        level = self.current
        self.cut_by_cap = True
        self.current = None
        if level is not None and level.looks:
            judged = judge_level(level.calls, self.limits, looks=level.looks, last=True)
            self._close(
                level,
                LevelJudged(
                    judged.held,
                    "max-calls",
                    judged.broke_on,
                    judged.wrong_at_most,
                    near=judged.near,
                ),
            )
        following = self.search.next_level()
        if following is None:  # the cut level settled the search after all
            self.cut_by_cap = False
            self.stopped = self._finished()
            return
        self.stopped = (
            f"max-calls stopped the search: the next burst, {following} calls at once, did not "
            f"fit in the {max(0, self.room - self.calls):,} calls left"
        )

    def _close(self, level: _Level, judged: LevelJudged) -> None:
        self.current = None
        held = bool(judged.held)
        outcome: LevelOutcome = "held" if held else "near" if judged.near else "broke"
        self.search.record(level.concurrency, outcome)
        own_only = level.own and level.bursts == 0
        self.levels.append(
            level_record(
                level.concurrency,
                level.calls,
                held=held,
                by="the run" if own_only else judged.by,
                broke_on=judged.broke_on,
                bursts=_bursts(level),
                seconds=None if own_only else level.seconds,
                wrong_at_most=judged.wrong_at_most,
                samples=tuple(level.samples),
                near=judged.near,
            )
        )

    def _finished(self) -> str:
        bracket = self.search.bracket
        if bracket.near_low is not None:
            upper = bracket.upper if bracket.upper is not None else self.maximum
            return (
                f"{bracket.low} held and {_from_to(bracket.near_low, bracket.near_high)} near "
                f"the budget: between {bracket.low} and {upper}"
            )
        if bracket.top is None:
            return f"every level held up to --capacity-max {self.maximum}, the most searched"
        if bracket.low == 0:
            return "even one call at a time broke the budget"
        return f"{bracket.low} held and {bracket.low + 1} broke"

    def capacity(self) -> Capacity:
        """The result: the levels in the order tried, the capacity found and what it cost."""
        bracket = self.search.bracket
        found = bracket.low
        breaking = next(
            (
                lv
                for lv in self.levels
                if outcome_of(lv) == "broke" and lv.concurrency == bracket.top
            ),
            None,
        )
        incomplete = self.cut_by_cap or (
            bool(self.stopped) and self.search.next_level() is not None
        )
        upper = None
        if bracket.near_low is not None:
            upper = bracket.upper if bracket.upper is not None else self.maximum
        return Capacity(
            found=found,
            upper=upper,
            complete=not incomplete,
            reached_max=found >= self.maximum,
            stopped_by_cap=self.cut_by_cap,
            breaking=None if breaking is None else breaking.concurrency,
            breaking_p95=None if breaking is None else breaking.p95,
            limit=self.limits.concurrent_p95,
            ttft_limit=self.limits.ttft_p95,
            error_limit=self.limits.error_rate,
            on_undecided=on_undecided_policy(self.limits.on_undecided),
            start=self.start.concurrency,
            maximum=self.maximum,
            calls=self.calls,
            seconds=self.seconds,
            stopped=self.stopped,
            levels=tuple(self.levels),
        )


def _bursts(level: _Level) -> int:
    """The bursts behind a level: the run's (one per look's worth of calls) and its own."""
    run_bursts = (
        max(1, math.ceil((level.calls.calls - len(level.samples)) / level.concurrency))
        if level.own
        else 0
    )
    return run_bursts + level.bursts


def _from_to(first: int | None, last: int | None) -> str:
    return f"{first}" if first == last else f"{first} to {last}"


def start_search(target: Target, gate: Gate, samples: Sequence[Sample]) -> CapacityRun:
    """The search of `target`'s run, after its looks (`gate` took them on `samples`): level c0
    starts from the run's own concurrent calls, and the search may spend what `max-calls`
    leaves."""
    budget = target.budget
    if budget.max_concurrent_p95 is None:  # refused by the config (build.capacity_problems)
        raise ValueError("a capacity search needs a concurrent p95 budget")
    limits = LevelLimits(
        concurrent_p95=budget.max_concurrent_p95,
        error_rate=budget.max_error_rate,
        ttft_p95=budget.max_ttft_p95,
        on_undecided=target.on_undecided,
    )
    concurrent = [s for s in samples if s.phase is CallPhase.CONCURRENT]
    looks = gate.history.get("concurrent_p95") or [len(concurrent)]
    return CapacityRun(
        limits,
        maximum=target.capacity_max,
        room=gate.plan.max_calls - len(samples),
        start=RunLevel(target.concurrency, LevelCalls.of(concurrent), tuple(looks)),
    )


def judged_again(
    capacity: Capacity,
    limits: LevelLimits,
    *,
    concurrent: Sequence[Sample],
    looks: Sequence[int],
) -> Capacity:
    """A result file's capacity judged again from its levels' own calls (a file is data, not a
    verdict: assess/rejudge.py): each level replayed burst by burst (`concurrency` calls a
    burst), level c0 (the first) from the run's `concurrent` calls at the run's `looks` and
    then its own bursts; the capacity is then the highest level that held below the lowest
    that broke, with the near levels between them."""
    levels: list[CapacityLevel] = []
    for position, level in enumerate(capacity.levels):
        own = position == 0 and level.concurrency == capacity.start
        levels.append(_replayed(level, limits, concurrent if own else (), looks if own else ()))
    bracket = Bracket.of((lv.concurrency, outcome_of(lv)) for lv in levels)
    breaking = next(
        (lv for lv in levels if outcome_of(lv) == "broke" and lv.concurrency == bracket.top), None
    )
    upper = None
    if bracket.near_low is not None:
        upper = bracket.upper if bracket.upper is not None else capacity.maximum
    return capacity.model_copy(
        update={
            "levels": tuple(levels),
            "found": bracket.low,
            "upper": upper,
            "breaking": bracket.top,
            "breaking_p95": None if breaking is None else breaking.p95,
            "reached_max": bracket.low >= capacity.maximum,
            "limit": limits.concurrent_p95,
            "ttft_limit": limits.ttft_p95,
            "error_limit": limits.error_rate,
            "on_undecided": on_undecided_policy(limits.on_undecided),
            "calls": sum(len(lv.samples) for lv in levels),
        }
    )


def _replayed(
    level: CapacityLevel,
    limits: LevelLimits,
    run_calls: Sequence[Sample],
    run_looks: Sequence[int],
) -> CapacityLevel:
    """One level judged again from its calls: first the run's (for level c0, at the run's
    looks), then its own, a burst of `concurrency` at a time."""
    calls = LevelCalls.of(run_calls)
    looks = list(run_looks) if run_calls else []
    judged = LevelJudged(None)
    if run_calls:
        last = calls.calls >= LEVEL_CALLS or not level.samples
        judged = judge_level(calls, limits, looks=looks, last=last)
    samples = level.samples
    bursts = math.ceil(len(samples) / level.concurrency)
    taken = 0
    for burst in range(bursts):
        if judged.held is not None or judged.near:
            break
        chunk = samples[burst * level.concurrency : (burst + 1) * level.concurrency]
        calls += LevelCalls.of(chunk)
        looks.append(calls.calls)
        taken += 1
        last = burst == bursts - 1 or calls.calls >= LEVEL_CALLS
        judged = judge_level(calls, limits, looks=looks, last=last)
    if judged.held is None and not judged.near:  # no calls at all
        judged = judge_level(calls, limits, looks=looks or [0], last=True)
    own_only = bool(run_calls) and taken == 0
    by = "max-calls" if level.decided_by == "max-calls" and judged.by != "test" else judged.by
    return level_record(
        level.concurrency,
        calls,
        held=bool(judged.held),
        by="the run" if own_only else by,
        broke_on=judged.broke_on,
        bursts=level.bursts,
        seconds=level.seconds,
        wrong_at_most=judged.wrong_at_most,
        samples=samples,
        near=judged.near,
    )
