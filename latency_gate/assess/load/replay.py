"""A result file's load searches judged again from their levels' own calls (a file is data, not
a verdict: assess/rejudge.py), each level by the same test as in the run:

- calls at once (`judged_again`): each level replayed burst by burst, level c0 first from the
  run's own concurrent calls at the run's looks;
- requests a second (`goodput_again`, `goodput_rows_again`): each level replayed in the order its
  calls were due and ended, as the engine looked at it, by the same `OpenLevel`.

Either figure is then the highest level that held below the lowest that broke.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.assess.budget.sampling import on_undecided_policy
from latency_gate.assess.load.at_once import level_record
from latency_gate.assess.load.levels import LevelCalls, LevelJudged, LevelLimits, judge_level
from latency_gate.assess.load.open_level import OpenLevel, rate_bracket
from latency_gate.assess.load.search import outcome_of
from latency_gate.assess.load.verdict import goodput_checks
from latency_gate.config import Budget
from latency_gate.config.plan.levels import LEVEL_CALLS
from latency_gate.config.plan.search import Bracket
from latency_gate.models import (
    Capacity,
    CapacityLevel,
    Check,
    Goodput,
    RateLevel,
    RunResult,
    Sample,
)

__all__ = ["goodput_again", "goodput_rows_again", "judged_again"]


@dataclass
class _Replayed:
    """A stored call, there once the replay's clock has passed its end."""

    due: float
    end: float
    stored: Sample
    clock: list[float]

    @property
    def sample(self) -> Sample | None:
        return self.stored if self.end <= self.clock[0] else None


def _end(sample: Sample, due: float) -> float:
    ended = sample.latency if sample.ok else sample.timings.last_byte
    return due + (sample.send_lag or 0.0) + (ended or 0.0)


def _level(level: RateLevel, goodput: Goodput, limits: LevelLimits) -> RateLevel:
    clock = [0.0]
    calls = sorted(
        (
            _Replayed(s.due, _end(s, s.due), s, clock)
            for s in level.samples
            if s.due is not None and math.isfinite(s.due)
        ),
        key=lambda a: a.due,
    )
    judge = OpenLevel(level.rate, limits, goodput.warmup, goodput.hold, math.inf)
    for moment in sorted({*(a.due for a in calls), *(a.end for a in calls)}):
        clock[0] = moment
        if judge.look(calls, moment):
            break
    clock[0] = math.inf
    again = judge.close(calls, level.seconds)
    # The client's lag is the run's: its floor is not in the file to judge it again.
    return again.model_copy(
        update={
            "client_behind": level.client_behind,
            "held": again.held and not level.client_behind,
            "near": again.near and not level.client_behind,
            "decided_by": "client" if level.client_behind else again.decided_by,
            "offered": level.offered,
        }
    )


def goodput_again(goodput: Goodput, limits: LevelLimits) -> Goodput:
    """`goodput` with every level judged again from its calls under `limits`."""
    levels = tuple(_level(level, goodput, limits) for level in goodput.levels)
    found, broke, upper = rate_bracket(levels)
    breaking = next((lv for lv in levels if not lv.client_behind and lv.rate == broke), None)
    return goodput.model_copy(
        update={
            "levels": levels,
            "found": found,
            "upper": upper,
            "breaking": broke,
            "breaking_p95": None if breaking is None else breaking.p95,
            "limit": limits.concurrent_p95,
            "ttft_limit": limits.ttft_p95,
            "error_limit": limits.error_rate,
            "calls": sum(lv.calls for lv in levels),
        }
    )


def goodput_rows_again(run: RunResult, budget: Budget) -> tuple[Goodput | None, list[Check]]:
    """A result file's calls at a rate judged again under its own budget, and their rows."""
    config = run.config
    goodput = run.goodput
    asked = _rate(config.get("rate"))
    min_rate = _rate(config.get("min_rate"))
    searched = config.get("goodput") is True
    if goodput is not None:
        limits = LevelLimits.of(
            budget,
            goodput.on_undecided,
            why="its calls at a rate were judged without a concurrent p95 budget",
        )
        goodput = goodput_again(goodput, limits)
    return goodput, goodput_checks(goodput, asked=asked, min_rate=min_rate, searched=searched)


def _rate(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


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
