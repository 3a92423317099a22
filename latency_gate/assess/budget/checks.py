"""Budget checks at one look: a gated number against its limit, decided or not, with its interval.

- A percentile (warm p50/p95, concurrent p95, first-token p95) is "at or under the limit" exactly
  when at most (100 - q) % of calls take longer than the limit. The check counts those calls
  (exceedances) and runs an SPRT on their share (sequential.py) between the healthy and failing
  shares of config/plan/hypotheses.py: for the p95, 1.98 % against 12.0 %. A FAIL is wrong at most
  PERCENTILE_ALPHA of the time when the p98 is under the limit, a PASS at most PERCENTILE_BETA of
  the time when the p88 is over it. Distribution-free.
- The error rate runs the same test on failed calls, between half the budget (healthy) and three
  times the budget (failing), counting clumps of consecutive failures as its events
  (clumps.py): five failures in a row are one restart, not five pieces of evidence.
- Cold start is one call: decided on that one observation, with no interval.

A check still undecided when sampling stops is settled by the `on-undecided` policy
(sampling.resolve); `operating_characteristic` (sequential.py) gives the exact error rates of the
whole procedure, policy included, for the looks a run took, and `meaning` words them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latency_gate.assess.budget.clumps import Clumps, clump_tests
from latency_gate.assess.maths.intervals import (
    ErrorRateInterval,
    Interval,
    error_rate_interval,
    linear_percentile,
    percentile_interval,
)
from latency_gate.assess.maths.sequential import Decision, Sprt, operating_characteristic
from latency_gate.config.plan.hypotheses import (
    ERROR_ALPHA,
    ERROR_BETA,
    ERROR_CLUMP,
    PERCENTILE_ALPHA,
    PERCENTILE_BETA,
    clean_calls_to_pass_errors,
    error_shares,
    percentile_shares,
)
from latency_gate.formatting import fmt_percent, plural

__all__ = [
    "ErrorRateCheck",
    "PercentileCheck",
    "budget_meaning",
    "cold_start_check",
    "error_rate_check",
    "error_rate_sprt",
    "nearer_healthy",
    "percentile_check",
    "percentile_sprt",
    "worst_errors",
]


def percentile_sprt(q: float) -> Sprt:
    """The test behind the q-th percentile's budget check (q in 0..100, exclusive)."""
    healthy, failing = percentile_shares(q)
    return Sprt(p0=healthy, p1=failing, alpha=PERCENTILE_ALPHA, beta=PERCENTILE_BETA)


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
    """Healthy share budget / 2 against failing share 3 x budget; None for a budget of 0."""
    shares = error_shares(budget)
    if shares is None:
        return None
    return Sprt(p0=shares[0], p1=shares[1], alpha=ERROR_ALPHA, beta=ERROR_BETA)


@dataclass(frozen=True)
class ErrorRateCheck:
    """k failed of n calls against the error budget at one look, and their clumps."""

    counts: ErrorRateInterval
    limit: float
    decision: Decision
    meaning: str  # the budget's rule at this n, in words
    clumps: Clumps

    @property
    def decided(self) -> bool:
        return self.decision is not Decision.UNDECIDED

    @property
    def calls_to_pass(self) -> int | None:
        """The fewest further calls, all successful, after which the check would PASS; 0 when
        decided, None when the budget is 0 (nothing to wait for). The sampler sizes a step
        with it instead of guessing."""
        tests = clump_tests(self.limit, self.clumps.failed, self.clumps.events)
        if self.decided or tests is None:
            return 0 if self.decided else None
        return tests.clean_calls_to_pass(self.clumps)


def error_rate_check(
    failed: int, calls: int, budget: float, clumps: Clumps | None = None
) -> ErrorRateCheck:
    """Decide "share of failed calls <= budget" from k failed of n calls so far, counting the
    `clumps` of consecutive failures as events (without them, the failures are taken as apart).

    A budget of 0 means no failure allowed: one failure FAILs, none PASSes, both decided.
    """
    found = clumps if clumps is not None else Clumps.apart(failed, calls)
    tests = clump_tests(budget, found.failed, found.events)
    if tests is None:
        decision = Decision.FAIL if failed else Decision.PASS
    else:
        decision = tests.decide(found)
    return ErrorRateCheck(
        counts=error_rate_interval(failed, calls),
        limit=budget,
        decision=decision,
        meaning=budget_meaning(calls, budget),
        clumps=found,
    )


def nearer_healthy(failed: int, calls: int, budget: float, clumps: Clumps | None = None) -> bool:
    """The error rate's estimate rule at the cap: are k failures of n calls (in these `clumps`)
    nearer (in likelihood) the healthy share (half the budget) than the failing one (three
    times)? Clumps change how much evidence the failures are, not on which side they lie.

    The share where the two are equally likely is 1.4 % for a budget of 0.01, not the budget
    itself: a healthy endpoint's rate over a few hundred calls lands over the budget often
    (4 of 351 calls for a true 0.5 %: 10 % of runs), and holding the rate itself to the budget
    there made a healthy endpoint red in 7-12 % of long runs (docs/statistics.md).
    """
    found = clumps if clumps is not None else Clumps.apart(failed, calls)
    tests = clump_tests(budget, found.failed, found.events)
    if tests is None:
        return failed == 0
    return tests.nearer_healthy(found)


def budget_meaning(calls: int, budget: float) -> str:
    """The error budget's rule in words, at this many calls: what fails the run here, and what
    a PASS takes (the FAIL count is for failures apart; failures in a row count as fewer).

    "error budget 1.0 %: at 31 calls, 3 failures not in a row fail the run; with fewer, it
    passes once enough calls rule out 3.0 % failing or more (127 calls without a failure, more
    with some)"
    """
    test = error_rate_sprt(budget)
    if test is None:
        return "a budget of 0 allows no failure: one failure fails the run"
    clean = clean_calls_to_pass_errors(budget) or 0
    also = f", also in clumps of up to {ERROR_CLUMP} calls in a row" if ERROR_CLUMP > 1 else ""
    to_fail = test.min_events_to_fail(calls) if calls > 0 else None
    if to_fail is None:
        fails = f"at {plural(calls, 'call')}, no count of failures fails the run yet; it"
    elif to_fail == 1:
        fails = f"at {plural(calls, 'call')}, 1 failure fails the run; with none, it"
    else:
        fails = f"at {calls:,} calls, {to_fail} failures not in a row fail the run; with fewer, it"
    return (
        f"error budget {fmt_percent(budget)}: {fails} passes once enough calls rule out "
        f"{fmt_percent(test.p1)} failing or more{also} ({clean:,} calls without a failure, "
        "more with some)"
    )


def worst_errors(
    test: Sprt,
    looks: Sequence[int],
    *,
    on_undecided: str,
    q: float | None = None,
    budget: float | None = None,
) -> tuple[float, float]:
    """(P(PASS) at the failing share, P(FAIL) at the healthy share) of the whole procedure: the
    test judged at these looks, and what `on_undecided` makes of a check undecided at the last.

    These are the error rates a report may state for this run's looks: exact for the count of
    events, and conservative where the estimate rule is not a function of the count alone (the
    p95 of n calls interpolates between two calls, which may fall on either side of the limit).
    """
    return _worst_errors(test, tuple(looks), on_undecided, q, budget)


@functools.lru_cache(maxsize=256)
def _worst_errors(
    test: Sprt, looks: tuple[int, ...], on_undecided: str, q: float | None, budget: float | None
) -> tuple[float, float]:
    if not looks:
        return 1.0, 1.0

    def never(_: int) -> int:
        return -1

    def always(n: int) -> int:
        return n

    pass_rule: Callable[[int], int]
    fail_rule: Callable[[int], int]
    if on_undecided == "pass":
        pass_rule = fail_rule = always
    elif on_undecided == "fail":
        pass_rule = fail_rule = never
    elif q is not None:
        # The estimate passes for sure when the call at the upper rank is within the limit and
        # fails for sure when the one at the lower rank is over it: count the ambiguous ranks
        # as PASS when bounding P(PASS), as FAIL when bounding P(FAIL).
        def pass_rule(n: int) -> int:
            return n - 1 - math.floor((n - 1) * q / 100)

        def fail_rule(n: int) -> int:
            return n - 1 - math.ceil((n - 1) * q / 100)

    elif budget is not None:
        # The error rate's estimate rule: the nearer of the two shares (see `nearer_healthy`).
        def pass_rule(n: int) -> int:
            return max((k for k in range(n + 1) if test.llr(k, n) <= 0), default=-1)

        fail_rule = pass_rule
    else:
        raise ValueError("the estimate rule needs q or the budget")
    wrong_pass, _ = operating_characteristic(test, looks, test.p1, pass_rule)
    _, wrong_fail = operating_characteristic(test, looks, test.p0, fail_rule)
    return wrong_pass, wrong_fail
