"""Capacity at the budget: the most calls at once whose concurrent p95 holds its budget.

After the run's looks, `--capacity` searches the concurrency. The run's own burst already judged
level c0 (its `concurrency`): its concurrent check's decision is reused, never measured again.

- c0 held: double (2 c0, 4 c0 ... at most `capacity_max`) until a level breaks, then halve the
  gap between the last level that held and the first that broke, to one call.
- c0 broke: level 1 first (if even one call at a time breaks, the capacity is 0), then halve the
  gap between 1 and c0.

Each level is a burst of c calls started together (the engine's burst, at concurrency c), judged
after each burst on that level's calls alone, with more bursts while undecided
(capacity_levels.py). `CapacitySearch` is the search alone (levels in, the next level out);
`CapacityRun` drives it with calls, burst by burst, for the engine's hook (wired in
latency_gate/run.py), under the calls `max-calls` leaves: when a burst no longer fits, the
search stops there and the capacity is "at least" the highest level that held.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from latency_gate.assess import stats
from latency_gate.assess.capacity_levels import (
    PERCENTILE_TEST,
    LevelCalls,
    LevelJudged,
    LevelLimits,
    judge_level,
    level_record,
)
from latency_gate.assess.gate import Gate
from latency_gate.assess.sampling import on_undecided_policy
from latency_gate.config import Target
from latency_gate.config.plan import level_bursts
from latency_gate.models import CallPhase, Capacity, CapacityLevel, Check, Sample

__all__ = ["CapacityRun", "CapacitySearch", "judged_again", "start_level", "start_search"]


@dataclass
class CapacitySearch:
    """The search alone: which level to try next, from the levels tried so far.

    From `start` (c0, whose outcome is recorded first): while every level held, the next is
    twice the last (at most `maximum`); once one broke, the middle of the gap between the
    highest level that held and the lowest that broke, until they are one call apart. After a
    broken start, level 1 comes first. The levels are assumed to break from some concurrency
    on (a level above one that broke would break too), as a queue or a batch does.
    """

    start: int
    maximum: int
    held: int = 0  # the highest level that held (0: none yet)
    broke: int | None = None  # the lowest level that broke
    tried: list[tuple[int, bool]] = field(default_factory=list)

    def record(self, level: int, held: bool) -> None:
        self.tried.append((level, held))
        if held:
            self.held = max(self.held, level)
        else:
            self.broke = level if self.broke is None else min(self.broke, level)

    def next_level(self) -> int | None:
        """The concurrency to try next, or None when the search is over."""
        if not self.tried:
            return self.start
        if self.broke is None:
            return None if self.held >= self.maximum else min(2 * self.held, self.maximum)
        if self.held == 0:
            tried = {level for level, _ in self.tried}
            return None if 1 in tried or self.broke <= 1 else 1
        return None if self.broke - self.held <= 1 else (self.held + self.broke) // 2

    @property
    def found(self) -> int:
        """The capacity: the highest level that held (0 when none did)."""
        return self.held


@dataclass
class _Level:
    """A level in progress: its concurrency, its calls, bursts and looks so far."""

    concurrency: int
    samples: list[Sample] = field(default_factory=list)
    calls: LevelCalls = field(default_factory=LevelCalls)
    looks: list[int] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class CapacityRun:
    """The search of one run, driven burst by burst by the engine's hook.

    `start_level` is level c0 as the run judged it; `room` the calls `max-calls` leaves after the
    looks. `next_burst()` says the concurrency of the next burst (None: the search is over);
    `add_burst(samples, seconds)` hands it the burst's calls; `capacity()` is the result.
    """

    limits: LevelLimits
    maximum: int
    room: int
    start_level: CapacityLevel
    search: CapacitySearch = field(init=False)
    levels: list[CapacityLevel] = field(default_factory=list)
    current: _Level | None = None
    calls: int = 0
    seconds: float = 0.0
    stopped: str = ""
    cut_by_cap: bool = False

    def __post_init__(self) -> None:
        self.search = CapacitySearch(start=self.start_level.concurrency, maximum=self.maximum)
        self.search.record(self.start_level.concurrency, self.start_level.held)
        self.levels.append(self.start_level)

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
        self.calls += len(samples)
        self.seconds += seconds
        bursts = len(level.looks)
        last = bursts >= level_bursts(level.concurrency)
        judged = judge_level(level.calls, self.limits, looks=level.looks, last=last)
        if judged.held is not None:
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
            held = bool(judged.held)
            self._close(
                level, LevelJudged(held, "max-calls", judged.broke_on, judged.wrong_at_most)
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
        self.search.record(level.concurrency, held)
        self.levels.append(
            level_record(
                level.concurrency,
                level.calls,
                held=held,
                by=judged.by,
                broke_on=judged.broke_on,
                bursts=len(level.looks),
                seconds=level.seconds,
                wrong_at_most=judged.wrong_at_most,
                samples=tuple(level.samples),
            )
        )

    def _finished(self) -> str:
        if self.search.broke is None:
            return f"every level held up to --capacity-max {self.maximum}, the most searched"
        if self.search.held == 0:
            return "even one call at a time broke the budget"
        return f"{self.search.held} held and {self.search.held + 1} broke"

    def capacity(self) -> Capacity:
        """The result: the levels in the order tried, the capacity found and what it cost."""
        found = self.search.found
        breaking = min(
            (lv for lv in self.levels if not lv.held),
            key=lambda lv: lv.concurrency,
            default=None,
        )
        incomplete = self.cut_by_cap or (
            bool(self.stopped) and self.search.next_level() is not None
        )
        return Capacity(
            found=found,
            complete=not incomplete,
            reached_max=found >= self.maximum,
            stopped_by_cap=self.cut_by_cap,
            breaking=None if breaking is None else breaking.concurrency,
            breaking_p95=None if breaking is None else breaking.p95,
            limit=self.limits.concurrent_p95,
            ttft_limit=self.limits.ttft_p95,
            error_limit=self.limits.error_rate,
            on_undecided=on_undecided_policy(self.limits.on_undecided),
            start=self.start_level.concurrency,
            maximum=self.maximum,
            calls=self.calls,
            seconds=self.seconds,
            stopped=self.stopped,
            levels=tuple(self.levels),
        )


def start_level(
    samples: Sequence[Sample],
    limits: LevelLimits,
    *,
    concurrency: int,
    looks: Sequence[int],
    run_check: Check | None,
) -> CapacityLevel:
    """Level c0 as the run judged it: its concurrent calls (`samples`, the run's concurrent
    phase), the concurrent p95 check's own decision when the run reached one (decided, or
    resolved by `on-undecided`), and the error rate and first-token p95 of those calls.
    `looks`: the calls behind the concurrent check at each of the run's looks."""
    calls = LevelCalls.of(samples)
    judged = judge_level(calls, limits, looks=looks, last=True)
    broke = judged.broke_on
    wrong = judged.wrong_at_most
    if run_check is not None and run_check.passed is not None:
        broke = tuple(name for name in broke if name != "concurrent_p95")
        if not run_check.passed:
            broke = ("concurrent_p95", *broke)
        if run_check.decided:
            wrong = PERCENTILE_TEST.beta if not broke else PERCENTILE_TEST.alpha
    bursts = max(1, math.ceil(len(samples) / concurrency)) if samples else 0
    return level_record(
        concurrency,
        calls,
        held=not broke,
        by="the run",
        broke_on=broke,
        bursts=bursts,
        seconds=None,
        wrong_at_most=wrong,
    )


def start_search(target: Target, gate: Gate, samples: Sequence[Sample]) -> CapacityRun:
    """The search of `target`'s run, after its looks (`gate` took them on `samples`): level c0
    is the run's own concurrent calls as its concurrent check judged them, and the search may
    spend what `max-calls` leaves."""
    budget = target.budget
    if budget.max_concurrent_p95 is None:  # refused by the config (build.capacity_problems)
        raise ValueError("a capacity search needs a concurrent p95 budget")
    limits = LevelLimits(
        concurrent_p95=budget.max_concurrent_p95,
        error_rate=budget.max_error_rate,
        ttft_p95=budget.max_ttft_p95,
        on_undecided=target.on_undecided,
    )
    checks = gate.checks(samples, stats.numbers(samples))
    concurrent = [s for s in samples if s.phase is CallPhase.CONCURRENT]
    first = start_level(
        concurrent,
        limits,
        concurrency=target.concurrency,
        looks=gate.history.get("concurrent_p95") or [len(concurrent)],
        run_check=next((c for c in checks if c.number == "concurrent_p95"), None),
    )
    return CapacityRun(
        limits,
        maximum=target.capacity_max,
        room=gate.plan.max_calls - len(samples),
        start_level=first,
    )


def judged_again(
    capacity: Capacity,
    limits: LevelLimits,
    *,
    concurrent: Sequence[Sample],
    looks: Sequence[int],
    run_check: Check | None,
) -> Capacity:
    """A result file's capacity judged again from its levels' own calls (a file is data, not a
    verdict: assess/rejudge.py): each level replayed burst by burst (`concurrency` calls a
    burst), level c0 from the run's `concurrent` calls and its re-judged `run_check`; the
    capacity is then the highest level that held below the lowest that broke."""
    levels: list[CapacityLevel] = []
    for level in capacity.levels:
        if level.decided_by == "the run":
            levels.append(
                start_level(
                    concurrent,
                    limits,
                    concurrency=level.concurrency,
                    looks=looks,
                    run_check=run_check,
                )
            )
        else:
            levels.append(_replayed(level, limits))
    broke = min((lv.concurrency for lv in levels if not lv.held), default=None)
    found = max(
        (lv.concurrency for lv in levels if lv.held and (broke is None or lv.concurrency < broke)),
        default=0,
    )
    breaking = next((lv for lv in levels if lv.concurrency == broke), None)
    return capacity.model_copy(
        update={
            "levels": tuple(levels),
            "found": found,
            "breaking": broke,
            "breaking_p95": None if breaking is None else breaking.p95,
            "reached_max": found >= capacity.maximum,
            "limit": limits.concurrent_p95,
            "ttft_limit": limits.ttft_p95,
            "error_limit": limits.error_rate,
            "on_undecided": on_undecided_policy(limits.on_undecided),
            "calls": sum(lv.calls for lv in levels if lv.decided_by != "the run"),
        }
    )


def _replayed(level: CapacityLevel, limits: LevelLimits) -> CapacityLevel:
    """One searched level judged again from its calls, a burst of `concurrency` at a time."""
    samples = level.samples
    calls = LevelCalls()
    looks: list[int] = []
    judged = LevelJudged(None)
    bursts = max(1, math.ceil(len(samples) / level.concurrency))
    for burst in range(bursts):
        chunk = samples[burst * level.concurrency : (burst + 1) * level.concurrency]
        calls += LevelCalls.of(chunk)
        looks.append(calls.calls)
        judged = judge_level(calls, limits, looks=looks, last=burst == bursts - 1)
        if judged.held is not None:
            break
    by = "max-calls" if level.decided_by == "max-calls" and judged.by != "test" else judged.by
    return level_record(
        level.concurrency,
        calls,
        held=bool(judged.held),
        by=by,
        broke_on=judged.broke_on,
        bursts=len(looks),
        seconds=level.seconds,
        wrong_at_most=judged.wrong_at_most,
        samples=samples,
    )
