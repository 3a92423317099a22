"""Budget checks at one look: a gated number against its limit, decided or not, with its interval.

- A percentile (warm p50/p95, concurrent p95, first-token p95) is "at or under the limit" exactly
  when at most (100 - q) % of calls take longer than the limit. The check counts those calls
  (exceedances) and runs an SPRT on their share (sequential.py) between p0 and p1, the shares
  whose odds are PERCENTILE_ODDS times smaller and larger than (100 - q) %. For the p95 that is
  1.98 % against 12.0 %: a FAIL is wrong at most ALPHA of the time when the p98 is under the limit,
  a PASS wrong at most BETA of the time when the p88 is over it. Distribution-free.
- The error rate runs the same test on failed calls, between half the budget (healthy) and five
  times the budget (failing).
- Cold start is one call: decided on that one observation, with no interval.

The shown interval (95 %, intervals.py) says what the calls say about the number; the decision is
the sequential test, whose error rates hold across looks. The two agree far from the limit and
may differ near it (an interval that still straddles the limit with a decided check, or the
reverse); docs/statistics.md says how to read that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.assess.intervals import (
    ErrorRateInterval,
    Interval,
    error_rate_interval,
    linear_percentile,
    percentile_interval,
)
from latency_gate.assess.sequential import Decision, Sprt, odds_shifted
from latency_gate.formatting import fmt_percent

__all__ = [
    "ERROR_ALPHA",
    "ERROR_BETA",
    "PERCENTILE_ALPHA",
    "PERCENTILE_BETA",
    "PERCENTILE_ODDS",
    "ErrorRateCheck",
    "PercentileCheck",
    "budget_meaning",
    "cold_start_check",
    "error_rate_check",
    "error_rate_sprt",
    "percentile_check",
    "percentile_sprt",
]

PERCENTILE_ODDS = 2.6
PERCENTILE_ALPHA = 0.01
PERCENTILE_BETA = 0.05
ERROR_ALPHA = 0.05
ERROR_BETA = 0.03


def percentile_sprt(q: float) -> Sprt:
    """The test behind the q-th percentile's budget check (q in 0..100, exclusive)."""
    if not 0 < q < 100:
        raise ValueError(f"a budget check needs 0 < q < 100, got {q}")
    share = 1.0 - q / 100
    return Sprt(
        p0=odds_shifted(share, 1 / PERCENTILE_ODDS),
        p1=odds_shifted(share, PERCENTILE_ODDS),
        alpha=PERCENTILE_ALPHA,
        beta=PERCENTILE_BETA,
    )


@dataclass(frozen=True)
class PercentileCheck:
    """The q-th percentile of n latencies against its limit at one look."""

    q: float
    value: float | None  # numpy-linear point estimate, None with no values
    limit: float
    n: int
    exceedances: int  # calls that took longer than the limit
    interval: Interval
    decision: Decision

    @property
    def decided(self) -> bool:
        return self.decision is not Decision.UNDECIDED


def percentile_check(values: Sequence[float], q: float, limit: float) -> PercentileCheck:
    """Decide "q-th percentile of the latencies <= limit" from the calls so far.

    `values` are the successful calls' latencies of the check's phase (all looks so far). With no
    values the check FAILs ("no data"), as the verdict does today.
    """
    exceedances = sum(v > limit for v in values)
    decision = percentile_sprt(q).decide(exceedances, len(values)) if values else Decision.FAIL
    return PercentileCheck(
        q=q,
        value=linear_percentile(values, q),
        limit=limit,
        n=len(values),
        exceedances=exceedances,
        interval=percentile_interval(values, q),
        decision=decision,
    )


def cold_start_check(value: float | None, limit: float) -> PercentileCheck:
    """One call: decided on that observation (no data fails); no interval can be computed."""
    decision = Decision.FAIL if value is None or value > limit else Decision.PASS
    return PercentileCheck(
        q=100.0,
        value=value,
        limit=limit,
        n=0 if value is None else 1,
        exceedances=int(value is not None and value > limit),
        interval=Interval(None, None, method="one call: no interval"),
        decision=decision,
    )


def error_rate_sprt(budget: float) -> Sprt | None:
    """Healthy share budget / 2 against failing share 5 x budget; None for a budget of 0."""
    if not 0 <= budget < 1:
        raise ValueError(f"an error budget must be in [0, 1), got {budget}")
    if budget == 0:
        return None
    return Sprt(
        p0=budget / 2,
        p1=min(5 * budget, budget + (1 - budget) / 2),
        alpha=ERROR_ALPHA,
        beta=ERROR_BETA,
    )


@dataclass(frozen=True)
class ErrorRateCheck:
    """k failed of n calls against the error budget at one look."""

    counts: ErrorRateInterval
    limit: float
    decision: Decision
    meaning: str  # the budget's meaning at this n, in words

    @property
    def decided(self) -> bool:
        return self.decision is not Decision.UNDECIDED

    @property
    def calls_to_pass(self) -> int | None:
        """The fewest further calls, all successful, after which the check would PASS; 0 when
        decided, None when the budget is 0 (nothing to wait for). The sampler sizes a step
        with it instead of guessing."""
        test = error_rate_sprt(self.limit)
        if self.decided or test is None:
            return 0 if self.decided else None
        failed, calls = self.counts.failed, self.counts.calls
        extra = 0
        while test.decide(failed, calls + extra) is not Decision.PASS:
            extra += 1
        return extra


def error_rate_check(failed: int, calls: int, budget: float) -> ErrorRateCheck:
    """Decide "share of failed calls <= budget" from k failed of n calls so far.

    A budget of 0 means no failure allowed: one failure FAILs, none PASSes, both decided.
    """
    test = error_rate_sprt(budget)
    if test is None:
        decision = Decision.FAIL if failed else Decision.PASS
    else:
        decision = test.decide(failed, calls)
    return ErrorRateCheck(
        counts=error_rate_interval(failed, calls),
        limit=budget,
        decision=decision,
        meaning=budget_meaning(calls, budget),
    )


def budget_meaning(calls: int, budget: float) -> str:
    """The error budget in words at this many calls, and what the sequential rule needs.

    "with 31 calls, a budget of 0.01 allows no failure (1 failure is 3.2 %); the gate passes
    after 65 calls with no failure and fails from 4 failures at this n"
    """
    if calls <= 0:
        return "no calls yet"
    allowed = int(budget * calls + 1e-9)
    one = f"1 failure is {fmt_percent(1 / calls)}"
    plural = "s" if allowed > 1 else ""
    allows = "allows no failure" if allowed == 0 else f"allows {allowed} failure{plural}"
    text = f"with {calls} calls, a budget of {budget:g} {allows} ({one})"
    test = error_rate_sprt(budget)
    if test is None:
        return text
    n_clean = next(n for n in range(1, 100_000) if test.decide(0, n) is Decision.PASS)
    to_fail = test.min_events_to_fail(calls)
    text += f"; the gate passes after {n_clean} calls with no failure"
    if to_fail is not None:
        text += f" and fails from {to_fail} failure{'s' if to_fail > 1 else ''} at this n"
    return text
