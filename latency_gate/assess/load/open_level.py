"""One level at a rate (requests a second, open loop), judged from its calls as they end.

A level is judged by the levels' test (`levels.judge_level`, issue 29):
it holds when its calls rule out a p95 over `max-concurrent-p95` (5 % against 1 % of calls over
it), breaks when they rule out one within it (5 % against 15 %), the same for the first-token
p95 when budgeted, and the error rate by its own test. Calls over the budget are counted in
clumps (runs of consecutive ones, `clumped_decision`), as failures are: a queue's slow calls
come in runs, and one by one a run of them broke levels whose p95 was within the budget (in
simulation the interval said missed the truth in up to a fifth of one-slot runs, against 5 %
since). A level still undecided at its end (its length, or max-calls) is near the budget:
neither held nor broken, the goodput then an interval (per_second.py). It is judged on the calls
due after its warm-up, with every latency counted from the moment its call was due. Open-loop
calls end out of order and a slow one would be missing from a judgement made when it is not
back: the judged calls are therefore always a prefix of the arrivals (in the order they were
due), and a call still in flight that has already waited longer than the budget is in it, over
the budget (it cannot come back within it). The tests look each time that prefix has LOOK_EVERY
more calls; a level may hold only once the calls it judged span the plan's `hold` seconds (a
queue's latencies are correlated over its own memory: a short stretch of quiet calls is weaker
evidence than their count says); it may break at any look.

The client: each call's send lag (its t0 less when it was due) is the client's own. When a level
breaks (or is near the budget) on its latencies from due but its endpoint latencies alone (from
t0) would not have broken it (or would have held it), and the lag is over what the gate can
resolve (CLIENT_FLOOR_TIMES its floor) and a material share of the budget (CLIENT_BUDGET_SHARE,
a tenth), the client fell behind, not the endpoint: the level is said so and says nothing about
the endpoint. A smaller lag cannot carry a call from well within the budget to over it; it only
moves a level that sat on the budget's edge from held to near, and blaming the client for that
stopped searches on loaded machines (a 5 ms lag against a 250 ms budget, three test processes
on two cores): such a level stays near, counted from due, which can only lower the figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Literal, Protocol

from latency_gate.assess.budget.clumps import clumps_of
from latency_gate.assess.load.levels import (
    P95,
    LevelCalls,
    LevelJudged,
    LevelLimits,
    judge_level,
)
from latency_gate.assess.maths.intervals import linear_percentile
from latency_gate.models import RateLevel, Sample

__all__ = [
    "CLIENT_BUDGET_SHARE",
    "CLIENT_FLOOR_TIMES",
    "LOOK_EVERY",
    "Arrived",
    "OpenLevel",
    "judged_calls",
    "near_between",
    "near_rates",
    "rate_bracket",
]

LOOK_EVERY = 10
CLIENT_FLOOR_TIMES = 10.0
CLIENT_BUDGET_SHARE = 0.1


class Arrived(Protocol):
    """A call of a level as the engine hands it (measure.arrivals.Arrival)."""

    @property
    def due(self) -> float: ...
    @property
    def sample(self) -> Sample | None: ...


def _from_due(sample: Sample, value: float | None, *, endpoint: bool) -> float | None:
    if value is None:
        return None
    return value if endpoint else value + (sample.send_lag or 0.0)


def judged_calls(
    arrivals: Sequence[Arrived],
    now: float,
    limits: LevelLimits,
    *,
    warmup: float,
    endpoint: bool = False,
) -> tuple[LevelCalls, float]:
    """The judged prefix of a level's calls at `now` (seconds from its start), latencies from
    when each call was due (`endpoint`: from its t0, the endpoint's alone), and the due time of
    the last call in it (-1 when it is empty). Calls due in the warm-up are left out."""
    prefix = _Prefix()
    prefix.extend(arrivals, now, limits, warmup, endpoint=endpoint)
    return prefix.calls, prefix.last_due


def rate_bracket(levels: Sequence[RateLevel]) -> tuple[float, float | None, float | None]:
    """What judged levels say of the goodput: the highest rate that held below the lowest that
    broke (0 when none did), that lowest rate (None when none broke), and the upper end of the
    interval: the lowest rate that broke when levels between the two were near the budget (None
    when none was: the levels around the figure were told apart; None too when levels above the
    figure were near and none broke: the goodput is then "at least" the figure). A near level
    showed nothing, so only a broken rate bounds the goodput from above. Levels the client fell
    behind at say nothing of the endpoint and are left out."""
    judged = [lv for lv in levels if not lv.client_behind]
    broke = min((lv.rate for lv in judged if not lv.held and not lv.near), default=None)
    found = max(
        (lv.rate for lv in judged if lv.held and (broke is None or lv.rate < broke)), default=0.0
    )
    near = near_rates(levels, found, broke)
    return found, broke, broke if near else None


def near_between(levels: Sequence[RateLevel], found: float, broke: float | None) -> list[RateLevel]:
    """The levels near the budget above `found` and below `broke` (all above it when None),
    lowest rate first; levels the client fell behind at are left out."""
    return sorted(
        (
            lv
            for lv in levels
            if lv.near
            and not lv.client_behind
            and lv.rate > found
            and (broke is None or lv.rate < broke)
        ),
        key=lambda lv: lv.rate,
    )


def near_rates(levels: Sequence[RateLevel], found: float, broke: float | None) -> list[float]:
    """The rates of `near_between`, lowest first."""
    return [lv.rate for lv in near_between(levels, found, broke)]


@dataclass
class _Prefix:
    """The judged prefix so far: it only grows (a call in it stays in it), so each look
    extends it from where the last one stopped."""

    at: int = 0  # the next arrival to read
    calls: LevelCalls = field(default_factory=LevelCalls)
    last_due: float = -1.0

    def extend(
        self,
        arrivals: Sequence[Arrived],
        now: float,
        limits: LevelLimits,
        warmup: float,
        *,
        endpoint: bool = False,
    ) -> None:
        latencies: list[float] = []
        first_tokens: list[float] = []
        oks: list[bool] = []
        at = self.at
        while at < len(arrivals):
            arrival = arrivals[at]
            if arrival.due > now:
                break
            if arrival.due >= warmup:
                sample = arrival.sample
                if sample is None:
                    waited = now - arrival.due
                    if waited <= limits.concurrent_p95:
                        break  # it may still come back within the budget
                    latencies.append(waited)  # over it, and its latency is at least this
                elif sample.ok:
                    latency = _from_due(sample, sample.latency, endpoint=endpoint)
                    if latency is not None:
                        latencies.append(latency)
                    token = _from_due(sample, sample.timings.first_token, endpoint=endpoint)
                    if token is not None:
                        first_tokens.append(token)
                oks.append(sample is None or sample.ok)
                self.last_due = arrival.due
            at += 1
        self.at = at
        if oks:  # a clump across two looks' seam counts as two (more evidence, not less)
            self.calls += LevelCalls(tuple(latencies), tuple(first_tokens), clumps_of(oks))


@dataclass
class OpenLevel:
    """A level in progress: judged at each look (`look`), closed into a `RateLevel` at its end
    (`close`)."""

    rate: float
    limits: LevelLimits
    warmup: float
    hold: float
    lag_limit: float
    looks: list[int] = field(default_factory=list)
    judged: LevelJudged | None = None
    prefix: _Prefix = field(default_factory=_Prefix)

    def look(self, arrivals: Sequence[Arrived], now: float) -> bool:
        """Whether the level is decided at `now`: broken by its test, or held by it once its
        judged calls span `hold` seconds."""
        if self.judged is not None:
            return True
        self.prefix.extend(arrivals, now, self.limits, self.warmup)
        calls = self.prefix.calls
        seen = self.looks[-1] if self.looks else 0
        if calls.calls < seen + LOOK_EVERY:
            return False
        self.looks.append(calls.calls)
        judged = judge_level(calls, self.limits, looks=self.looks, last=False)
        spans = self.prefix.last_due - self.warmup >= self.hold
        if judged.held is False or (judged.held and spans):
            self.judged = judged
            return True
        return False

    def close(
        self, arrivals: Sequence[Arrived], seconds: float, *, by_cap: bool = False
    ) -> RateLevel:
        """The level once its calls have ended: decided at its last look, or now by its whole
        judged calls; what the tests still leave open is near the budget ("level cap", or
        "max-calls" when `by_cap`), not decided by `on-undecided`."""
        calls, _ = judged_calls(arrivals, float("inf"), self.limits, warmup=self.warmup)
        judged = self.judged
        if judged is None:
            looks = (
                [*self.looks, calls.calls] if calls.calls > (self.looks or [0])[-1] else self.looks
            )
            judged = judge_level(calls, self.limits, looks=looks or [calls.calls], last=True)
            if by_cap and judged.by == "level cap":
                judged = LevelJudged(
                    judged.held, "max-calls", judged.broke_on, judged.wrong_at_most, judged.near
                )
        samples = tuple(a.sample for a in arrivals if a.sample is not None)
        lags = [s.send_lag for s in samples if s.send_lag is not None]
        lag_p95 = linear_percentile(lags, P95) if lags else None
        behind = False
        by: Literal["test", "level cap", "max-calls", "client"] = (
            "test" if judged.by == "the run" else judged.by
        )
        near = judged.near
        if not judged.held and lag_p95 is not None and lag_p95 > self.lag_limit:
            own, _ = judged_calls(
                arrivals, float("inf"), self.limits, warmup=self.warmup, endpoint=True
            )
            alone = judge_level(own, self.limits, looks=[own.calls], last=True)
            # The endpoint's own latencies say better than the latencies from due: held where
            # those broke or were near, or near where those broke.
            behind = bool(alone.held) or (alone.near and not judged.near)
            by = "client" if behind else by
            near = near and not behind
        ok = [s for s in samples if s.ok]
        tokens = [s.tokens for s in ok if s.tokens]
        dues = [a.due for a in arrivals]
        span = max(dues) - min(dues) if len(dues) > 1 else 0.0
        return RateLevel(
            rate=self.rate,
            calls=len(samples),
            judged=calls.calls,
            offered=(len(dues) - 1) / span if span > 0 else None,
            p95=linear_percentile(calls.latencies, P95),
            ttft_p95=linear_percentile(calls.first_tokens, P95) if calls.first_tokens else None,
            mean_latency=fmean(calls.latencies) if calls.latencies else None,
            errors=calls.failed,
            held=bool(judged.held) and not behind,
            near=near,
            decided_by=by,
            broke_on=judged.broke_on,
            wrong_at_most=judged.wrong_at_most,
            seconds=seconds,
            send_lag_p95=lag_p95,
            send_lag_max=max(lags) if lags else None,
            client_behind=behind,
            tokens=fmean(tokens) if tokens else None,
            samples=samples,
        )
