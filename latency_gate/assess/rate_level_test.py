"""The test of one level of calls at a rate (the goodput search, assess/goodput_levels.py).

It is the test the capacity levels had before issue 27: the p95's percentile SPRT against the
budget (PASS rules out 12 % or more of calls over it, wrong at most 3 %; FAIL rules out 2 % or
fewer, wrong at most 1 %), the error rate's own test with failures in a row counted as one clump,
and `on-undecided` at the level's end. The capacity levels now hold only when their calls rule
out 5 % over the budget, and are "near the budget" when 130 calls cannot tell
(assess/capacity_levels.py); a rate level's calls are not independent (a queue links them), its
figures come from simulating queues (bench/goodputsim.py), and those figures were made with this
test: moving the goodput to the capacity's two tests waits for that simulation to be run again
(issue 29).
"""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.assess.capacity_levels import (
    P95,
    LevelCalls,
    LevelJudged,
    LevelLimits,
    level_checks,
)
from latency_gate.assess.checks import (
    nearer_healthy,
    percentile_sprt,
    worst_errors,
)
from latency_gate.assess.intervals import linear_percentile
from latency_gate.assess.sampling import SamplingPlan, on_undecided_policy, resolve
from latency_gate.assess.sequential import Decision
from latency_gate.config.plan import ERROR_ALPHA, ERROR_BETA

__all__ = ["PERCENTILE_TEST", "judge_rate_level"]

PERCENTILE_TEST = percentile_sprt(P95)


def _percentile_decision(values: Sequence[float], limit: float) -> Decision:
    """The p95 test on these values; no values at all fails (no data)."""
    if not values:
        return Decision.FAIL
    return PERCENTILE_TEST.decide(sum(v > limit for v in values), len(values))


def judge_rate_level(
    calls: LevelCalls, limits: LevelLimits, *, looks: Sequence[int], last: bool
) -> LevelJudged:
    """A level after the look that brought its calls to `looks[-1]`. Breaks as soon as a check
    fails its test; holds once every latency check passes its test and the error rate has not
    failed (nor has a failure still undecided); otherwise undecided, unless `last`, where
    `on-undecided` decides the undecided latency checks and the error rate goes by the nearer of
    its two shares."""
    checks = level_checks(calls, limits, _percentile_decision)
    broke, pending, errors_pending = checks.broke, checks.pending, checks.errors_pending
    if broke:
        wrong = ERROR_ALPHA if broke == ("error_rate",) else PERCENTILE_TEST.alpha
        return LevelJudged(False, "test", broke, wrong)
    if not pending and not errors_pending:
        return LevelJudged(True, "test", (), PERCENTILE_TEST.beta)
    if not last:
        return LevelJudged(None)
    plan = SamplingPlan(on_undecided=on_undecided_policy(limits.on_undecided))
    for name in pending:
        values, limit = checks.latency[name]
        value = linear_percentile(values, P95)
        passed, _ = resolve(Decision.UNDECIDED, plan, within=value is not None and value <= limit)
        if not passed:
            broke += (name,)
    rate = limits.error_rate
    if (
        errors_pending
        and rate is not None
        and not nearer_healthy(calls.failed, calls.calls, rate, calls.clumps)
    ):
        broke += ("error_rate",)
    wrong_pass, wrong_fail = worst_errors(
        PERCENTILE_TEST, looks or [calls.calls], on_undecided=plan.on_undecided, q=P95
    )
    if not pending:  # only the error rate was open: its own test's bounds
        wrong_pass, wrong_fail = ERROR_BETA, ERROR_ALPHA
    return LevelJudged(not broke, "level cap", broke, wrong_fail if broke else wrong_pass)
