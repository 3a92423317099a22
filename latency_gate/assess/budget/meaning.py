"""What a budget check's outcome means, in words: the sentence every report carries beside it.

`check_meaning` says what the outcome ruled out, after how many calls, and how often the gate
is wrong that way: the test's own bounds when it decided (Ville's inequality holds them at any
looks), the exact rates of the run's looks and policy when the cap decided
(checks.worst_errors). It adds what the figures need and the calls did not give: the clumps the
failures came in (clumps.py), what a clean PASS does not rule out, and a tail heavier than the
figures' shapes (docs/statistics.md, "Tails heavier than sigma 0.6").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.assess.budget.checks import error_rate_sprt, percentile_sprt, worst_errors
from latency_gate.assess.budget.clumps import SPOKEN_CLUMP, Clumps, clean_run_chance, clump_tests
from latency_gate.assess.maths.intervals import linear_percentile
from latency_gate.assess.maths.sequential import Decision, Sprt
from latency_gate.config.plan.hypotheses import ERROR_CLUMP
from latency_gate.formatting import fmt_percent, fmt_value

__all__ = ["HEAVY_TAIL", "TAIL_CALLS", "Judged", "check_meaning", "heavy_tail_note", "tail_ratio"]


@dataclass(frozen=True)
class Judged:
    """A budget check at the latest look: its decision, calls and events (over the limit, or
    failed), and for the error rate the clumps its failures came in."""

    decision: Decision
    n: int
    events: int
    clumps: Clumps | None = None


def check_meaning(
    name: str,
    q: float | None,
    judged: Judged,
    value: float,
    limit: float,
    *,
    policy: str,
    looks: Sequence[int],
    passed: bool | None = None,
    now: Judged | None = None,
    tail: float | None = None,
) -> str:
    """What the outcome ruled out, in words, with its error rate. `judged` is the look that
    decided it; `now`, when given, the last look, which left it undecided again; `policy`, the
    run's on-undecided; `looks`, the calls behind the check at each look (the error rates of a
    check decided at the cap are those of these looks); `tail`, the calls' p98 / p95, said
    when a FAIL comes with a tail heavier than the figures'."""
    if passed is None:
        passed = judged.decision is Decision.PASS
    shown = fmt_value(limit, name)
    if name == "cold_start":
        return (
            f"one call: {fmt_value(value, name)} against {shown}; a single call "
            "cannot tell a slow start from bad luck"
        )
    test: Sprt | None
    if name == "error_rate":
        test = error_rate_sprt(limit)
        what = "failed"
    else:
        test = percentile_sprt(q or 95)
        what = f"over {shown}"

    def counted(at: Judged) -> str:
        share = fmt_percent(at.events / at.n) if at.n else "—"
        return f"{at.n:,} calls, {at.events} {what} ({share})"

    word = "PASS" if passed else "FAIL"
    if test is None:  # an error budget of 0
        return f"{word} after {counted(judged)}: a budget of 0 allows no failure"
    if judged.decision is Decision.UNDECIDED:
        if policy == "estimate" and name == "error_rate":
            side = (
                f"nearer a healthy {fmt_percent(test.p0)}"
                if passed
                else f"nearer a failing {fmt_percent(test.p1)}"
            )
            head = (
                f"{word}: undecided after {counted(judged)}, too near the budget for the "
                f"calls to tell; decided by the rate seen, {side}"
            )
        elif policy == "estimate":
            sign = "≤" if value <= limit else ">"
            head = (
                f"{word}: undecided after {counted(judged)}, too near the limit for the "
                f"calls to tell; decided by its value, {fmt_value(value, name)} "
                f"{sign} {shown}"
            )
        else:
            head = (
                f"{word}: undecided after {counted(judged)}; "
                f"{'passed' if passed else 'failed'} by policy"
            )
        # Decided at the cap: the exact error rates of the test with the looks this run took
        # and the policy at the last one (for failures in clumps, of each side's test on
        # the clumps).
        budget = limit if name == "error_rate" else None
        sides = (test, test)
        if judged.clumps is not None and budget is not None:
            tests = clump_tests(budget, judged.clumps.failed, judged.clumps.events)
            sides = (tests.passing, tests.fail) if tests is not None else sides
        wrong_pass = worst_errors(sides[0], looks, on_undecided=policy, q=q, budget=budget)[0]
        wrong_fail = worst_errors(sides[1], looks, on_undecided=policy, q=q, budget=budget)[1]
    else:
        head = f"{word} after {counted(judged)}"
        # Decided by the test: Ville's bounds hold whatever looks were taken.
        wrong_pass, wrong_fail = test.beta, test.alpha
    if name == "error_rate":
        ruled = f"a failure rate of {fmt_percent(test.p1 if passed else test.p0)}"
        ruled += " or more" if passed else " or less"
    else:
        ruled = (
            f"{fmt_percent(test.p1)} or more of calls over {shown}"
            if passed
            else f"{fmt_percent(test.p0)} or fewer over {shown}"
        )
    chance = wrong_pass if passed else wrong_fail
    clumps = (now or judged).clumps
    clean = ""
    if clumps is not None and passed and clumps.failed == 0 and ERROR_CLUMP < SPOKEN_CLUMP:
        # What a clean run does not rule out: the failing share in clumps.
        shows = clean_run_chance(test.p1, judged.n)
        clean = f"; failing in clumps of {SPOKEN_CLUMP} calls, {fmt_percent(shows)} or more"
    text = (
        f"{head}: rules out {ruled} (such an endpoint {'passes' if passed else 'fails'} "
        f"at most {fmt_percent(chance)} of runs{clean})"
    )
    if now is not None:
        text += (
            f"; the calls taken since for other checks ({counted(now)}) leave it "
            "undecided, not overturned"
        )
    elif name == "error_rate" and passed and value > limit:
        text += (
            "; the rate seen is over the budget, but within what a healthy endpoint "
            f"({fmt_percent(test.p0)}) shows in {judged.n:,} calls"
        )
    if clumps is not None and clumps.clumped:
        text += f"; {clumps.describe()} (a clump of failures in a row counts as one event)"
    if not passed and tail is not None and tail > HEAVY_TAIL:
        text += "; " + heavy_tail_note(tail)
    return text


# The calls' p98 / p95 past which a FAIL says the tail is heavier than the figures' shapes:
# lognormal sigma 0.6 has 1.28, sigma 1.0 1.51, Pareto alpha 2.5 1.44 (docs/statistics.md,
# "Tails heavier than sigma 0.6"); the p98 needs TAIL_CALLS calls to be more than the top few.
HEAVY_TAIL = 1.4
TAIL_CALLS = 60


def tail_ratio(values: Sequence[float]) -> float | None:
    """The p98 / p95 of a p95 check's calls (None with too few calls)."""
    if len(values) < TAIL_CALLS:
        return None
    p95, p98 = linear_percentile(values, 95), linear_percentile(values, 98)
    if p95 is None or p98 is None or p95 <= 0:
        return None
    return p98 / p95


def heavy_tail_note(tail: float) -> str:
    """Why the gate's figures may not hold for this endpoint: its tail past the p95."""
    return (
        f"the tail is heavy: the p98 of these calls is {tail:.2f}x their p95 (lognormal sigma "
        "0.6: 1.28x); with a tail this heavy an endpoint whose p95 is 20 % under its budget "
        "still has about 3 % of calls over it, and this check fails it in up to 5 % of runs, "
        "not 1 %"
    )
