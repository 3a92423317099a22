"""A result file's calls at a rate judged again from its levels' own calls (a file is data, not a
verdict: assess/rejudge.py): each level replayed in the order its calls were due and ended, as
the engine looked at it, by the same `OpenLevel`; the rate held is then the highest that held
below the lowest that broke."""

from __future__ import annotations

import math
from dataclasses import dataclass

from latency_gate.assess.load.capacity_levels import LevelLimits
from latency_gate.assess.load.goodput_levels import OpenLevel, rate_bracket
from latency_gate.assess.load.goodput_verdict import goodput_checks
from latency_gate.config import Budget
from latency_gate.models import Check, Goodput, RateLevel, RunResult, Sample

__all__ = ["goodput_again", "goodput_rows_again"]


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
        if budget.max_concurrent_p95 is None:
            raise ValueError("its calls at a rate were judged without a concurrent p95 budget")
        limits = LevelLimits(
            concurrent_p95=budget.max_concurrent_p95,
            error_rate=budget.max_error_rate,
            ttft_p95=budget.max_ttft_p95,
            on_undecided=goodput.on_undecided,
        )
        goodput = goodput_again(goodput, limits)
    return goodput, goodput_checks(goodput, asked=asked, min_rate=min_rate, searched=searched)


def _rate(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and value > 0 else None
