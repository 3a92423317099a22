"""One level of the capacity search: c calls at once, in bursts, judged on that level's calls.

A level is judged after each burst by the concurrent check's own test (checks.percentile_sprt,
the SPRT of the p95 against `max-concurrent-p95`), and first-token p95 against `max-ttft-p95`
when budgeted: it breaks as soon as a check fails its test, holds once every one passes, and
takes another burst otherwise, at most `config.plan.level_bursts(c)` bursts (16, and no more
once it has 80 calls); then `on-undecided` decides (`estimate`: the level's p95 against the
budget). The error rate of a level's calls breaks it when its test says FAIL (error_rate_check)
or, at the level's end, when its failures are nearer the failing share than the healthy one; it
asks for another burst only once a call failed: a 1 % budget passes after 127 clean calls, more
than a level's cap, so a clean level is not held back for it (docs/statistics.md, "Capacity").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from latency_gate.assess.checks import (
    error_rate_check,
    nearer_healthy,
    percentile_sprt,
    worst_errors,
)
from latency_gate.assess.intervals import linear_percentile
from latency_gate.assess.sampling import SamplingPlan, on_undecided_policy, resolve
from latency_gate.assess.sequential import Decision
from latency_gate.config.plan import ERROR_ALPHA, ERROR_BETA
from latency_gate.models import CapacityLevel, Sample

__all__ = [
    "P95",
    "Decided",
    "LevelCalls",
    "LevelJudged",
    "LevelLimits",
    "judge_level",
    "level_record",
]

Decided = Literal["the run", "test", "level cap", "max-calls"]
P95 = 95.0
PERCENTILE_TEST = percentile_sprt(P95)


@dataclass(frozen=True)
class LevelLimits:
    """What every level is held to: the target's budget and its `on-undecided` policy."""

    concurrent_p95: float
    error_rate: float | None = None
    ttft_p95: float | None = None
    on_undecided: str = "estimate"


@dataclass(frozen=True)
class LevelCalls:
    """What a level's checks read of its calls: successful latencies and first tokens, and how
    many calls failed of how many."""

    latencies: tuple[float, ...] = ()
    first_tokens: tuple[float, ...] = ()
    failed: int = 0
    calls: int = 0

    @classmethod
    def of(cls, samples: Sequence[Sample]) -> LevelCalls:
        ok = [s for s in samples if s.ok and s.latency is not None]
        return cls(
            latencies=tuple(s.latency for s in ok if s.latency is not None),
            first_tokens=tuple(
                s.timings.first_token for s in ok if s.timings.first_token is not None
            ),
            failed=sum(not s.ok for s in samples),
            calls=len(samples),
        )

    def __add__(self, other: LevelCalls) -> LevelCalls:
        return LevelCalls(
            self.latencies + other.latencies,
            self.first_tokens + other.first_tokens,
            self.failed + other.failed,
            self.calls + other.calls,
        )


@dataclass(frozen=True)
class LevelJudged:
    """A level at one look: `held` True (it holds), False (it breaks) or None (take another
    burst); how it was decided; the checks that broke it; how often such a decision is wrong at
    most (Ville's bound of the deciding test, or the exact rate of the looks taken at the cap)."""

    held: bool | None
    by: Decided = "test"
    broke_on: tuple[str, ...] = ()
    wrong_at_most: float | None = None


def _percentile_decision(values: Sequence[float], limit: float) -> Decision:
    """The p95 test on these values; no values at all breaks the level (no data)."""
    if not values:
        return Decision.FAIL
    return PERCENTILE_TEST.decide(sum(v > limit for v in values), len(values))


def judge_level(
    calls: LevelCalls, limits: LevelLimits, *, looks: Sequence[int], last: bool
) -> LevelJudged:
    """A level after the burst that brought its calls to `looks[-1]` (`looks`: its calls at each
    look so far). Breaks as soon as a check fails its test; holds once every latency check
    passes its test and the error rate has not failed (nor has a failure still undecided);
    otherwise undecided, unless `last` (no further burst: the level's cap or max-calls), where
    `on-undecided` decides the undecided latency checks and the error rate goes by the nearer
    of its two shares."""
    latency = {"concurrent_p95": (calls.latencies, limits.concurrent_p95)}
    if limits.ttft_p95 is not None and calls.first_tokens:
        latency["ttft_p95"] = (calls.first_tokens, limits.ttft_p95)
    decisions = {name: _percentile_decision(v, limit) for name, (v, limit) in latency.items()}
    errors = (
        None
        if limits.error_rate is None
        else error_rate_check(calls.failed, calls.calls, limits.error_rate).decision
    )
    broke = tuple(name for name, d in decisions.items() if d is Decision.FAIL)
    if errors is Decision.FAIL:
        broke += ("error_rate",)
    if broke:
        wrong = ERROR_ALPHA if broke == ("error_rate",) else PERCENTILE_TEST.alpha
        return LevelJudged(False, "test", broke, wrong)
    pending = [name for name, d in decisions.items() if d is Decision.UNDECIDED]
    errors_pending = errors is Decision.UNDECIDED and calls.failed > 0
    if not pending and not errors_pending:
        return LevelJudged(True, "test", (), PERCENTILE_TEST.beta)
    if not last:
        return LevelJudged(None)
    plan = SamplingPlan(on_undecided=on_undecided_policy(limits.on_undecided))
    for name in pending:
        values, limit = latency[name]
        value = linear_percentile(values, P95)
        passed, _ = resolve(Decision.UNDECIDED, plan, within=value is not None and value <= limit)
        if not passed:
            broke += (name,)
    rate = limits.error_rate
    if errors_pending and rate is not None and not nearer_healthy(calls.failed, calls.calls, rate):
        broke += ("error_rate",)
    wrong_pass, wrong_fail = worst_errors(
        PERCENTILE_TEST, looks or [calls.calls], on_undecided=plan.on_undecided, q=P95
    )
    if not pending:  # only the error rate was open: its own test's bounds
        wrong_pass, wrong_fail = ERROR_BETA, ERROR_ALPHA
    return LevelJudged(not broke, "level cap", broke, wrong_fail if broke else wrong_pass)


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
    )
