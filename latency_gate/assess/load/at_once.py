"""Calls at once: the load search's strategy for the most calls started together whose concurrent
p95 holds its budget (the capacity at the budget).

After the run's looks, `--capacity` searches the concurrency. Level c0 (the run's
`concurrency`) starts from the run's own concurrent calls, judged by the level's tests; when
they cannot tell, it takes bursts of its own like any level. Which level comes next is
config/search.py's rule (double while levels hold, then halve the gaps around the levels that
were near the budget or broke).

Each level is a burst of c calls started together (the engine's burst, at concurrency c), judged
after each burst on that level's calls alone, with more bursts while undecided, up to
LEVEL_CALLS calls (levels.py): it holds, breaks, or is near the budget. The capacity is
the highest level that held below the lowest that broke; when levels between them were near
the budget it is said as an interval ("between 12 and 16"). `CapacitySearch` is the search
alone (search.LoadSearch: levels in, the next level out); `CapacityRun` drives it with calls,
burst by burst, for
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
from latency_gate.assess.load.levels import (
    P95,
    Decided,
    LevelCalls,
    LevelJudged,
    LevelLimits,
    judge_level,
)
from latency_gate.assess.load.search import LoadRun, LoadSearch, outcome_of
from latency_gate.assess.maths.intervals import linear_percentile
from latency_gate.config import Target
from latency_gate.config.plan.levels import LEVEL_CALLS
from latency_gate.config.plan.search import Bracket, LevelOutcome, next_level
from latency_gate.models import CallPhase, Capacity, CapacityLevel, Sample

__all__ = [
    "CapacityRun",
    "CapacitySearch",
    "RunLevel",
    "level_record",
    "start_search",
]


@dataclass
class CapacitySearch(LoadSearch[int]):
    """The search alone: which level to try next, from the levels tried so far
    (config/search.py's rule, from `start` up to `maximum`)."""

    start: int
    maximum: int
    tried: list[tuple[int, LevelOutcome]] = field(default_factory=list)

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
class CapacityRun(LoadRun[CapacityLevel, _Level]):
    """The search of one run, driven burst by burst by the engine's hook.

    `start` is level c0 as the run left it; `room` the calls `max-calls` leaves after the
    looks. `next_burst()` says the concurrency of the next burst (None: the search is over);
    `add_burst(samples, seconds)` hands it the burst's calls; `capacity()` is the result.
    """

    maximum: int
    room: int
    start: RunLevel
    search: CapacitySearch = field(init=False)

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
        own_only = level.own and level.bursts == 0
        record = level_record(
            level.concurrency,
            level.calls,
            held=bool(judged.held),
            by="the run" if own_only else judged.by,
            broke_on=judged.broke_on,
            bursts=_bursts(level),
            seconds=None if own_only else level.seconds,
            wrong_at_most=judged.wrong_at_most,
            samples=tuple(level.samples),
            near=judged.near,
        )
        self.search.record(level.concurrency, outcome_of(record))
        self.levels.append(record)

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
        incomplete = self.left_open(self.search)
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
    limits = LevelLimits.of(  # a search without one is refused by build.capacity_problems
        target.budget,
        target.on_undecided,
        why="a capacity search needs a concurrent p95 budget",
    )
    concurrent = [s for s in samples if s.phase is CallPhase.CONCURRENT]
    looks = gate.history.get("concurrent_p95") or [len(concurrent)]
    return CapacityRun(
        limits,
        maximum=target.capacity_max,
        room=gate.plan.max_calls - len(samples),
        start=RunLevel(target.concurrency, LevelCalls.of(concurrent), tuple(looks)),
    )


def level_record(
    concurrency: int,
    calls: LevelCalls,
    *,
    held: bool,
    by: Decided,
    broke_on: tuple[str, ...] = (),
    bursts: int,
    seconds: float | None,
    wrong_at_most: float | None,
    samples: tuple[Sample, ...] = (),
    near: bool = False,
) -> CapacityLevel:
    """A judged level as the result file keeps it."""
    return CapacityLevel(
        concurrency=concurrency,
        calls=calls.calls,
        bursts=bursts,
        p95=linear_percentile(calls.latencies, P95),
        errors=calls.failed,
        ttft_p95=linear_percentile(calls.first_tokens, P95) if calls.first_tokens else None,
        held=held,
        decided_by=by,
        broke_on=broke_on,
        wrong_at_most=wrong_at_most,
        seconds=seconds,
        samples=samples,
        near=near,
    )
