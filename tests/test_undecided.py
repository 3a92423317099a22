"""Undecided is said where the verdict is said: regressions the calls could not decide, the policy
for them, checks decided at the cap, and rows that were not needed because the run had failed."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from result_factory import failed_sample, make_result, make_target, samples_for

from latency_gate.assess.compare.baseline import BaselinePlan
from latency_gate.assess.result import assess_run
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.measurement import Measurement
from latency_gate.models import CallPhase, ErrorKind, RunResult, Sample, StampSource
from latency_gate.report.markdown import render_summary
from latency_gate.report.terminal import render_terminal


def _spread(start: float, step: float, n: int, factor: float = 1.0) -> list[float]:
    return [(start + step * i) * factor for i in range(n)]


BASE = make_result(
    samples=samples_for(
        cold=0.3, warm=_spread(0.100, 0.005, 40), concurrent=_spread(0.150, 0.005, 40)
    )
)


def _judged(samples: tuple[Sample, ...], **target: str) -> RunResult:
    """`samples` judged as a run does, against BASE, with the target's policies."""
    chosen = make_target("local").model_copy(update=target)
    return assess_run(
        chosen,
        Measurement(list(samples), started_at=0.0),
        finished_at=1.0,
        stamp_source=StampSource.KERNEL,
        baseline=BaselinePlan("base.json", DEFAULT_LIMIT, {"local": BASE}),
    )


# 15 % slower everywhere, on 40 calls a side: over the 10 % limit, but too near it for the
# calls to tell.
NEAR = samples_for(
    cold=0.3,
    warm=_spread(0.100, 0.005, 40, 1.15),
    concurrent=_spread(0.150, 0.005, 40, 1.15),
)
# 8 % slower: within the limit, still too near it for the calls to rule a regression out.
WITHIN = samples_for(
    cold=0.3,
    warm=_spread(0.100, 0.005, 40, 1.08),
    concurrent=_spread(0.150, 0.005, 40, 1.08),
)


def test_an_undecided_regression_is_said_beside_a_pass() -> None:
    """A regression the calls could not decide does not fail the run by default, and the
    verdict carries it with its interval, so no report can say "no number regressed"."""
    result = _judged(NEAR)
    assert result.baseline is not None
    undecided = [d for d in result.baseline.deltas if d.outcome == "undecided"]
    assert undecided, [d.outcome for d in result.baseline.deltas]
    assert result.verdict.passed
    assert any(
        line.startswith("warm p95 regression undecided: ") and "head / base" in line
        for line in result.verdict.undecided
    ), result.verdict.undecided
    note = next(d.note for d in undecided)
    assert note.startswith(
        "undecided at the cap: not called a regression (on-undecided-regression: pass); at this "
        "spread it would have caught about x1."
    )


def test_an_undecided_regression_estimated_within_the_limit_is_shown_not_warned() -> None:
    """8 % slower on 40 calls a side: the calls cannot rule out a regression of 10 %, but the
    test's estimate is within it: the row says undecided, with the interval that says how large
    a regression could hide, and the verdict does not warn of it (no annotation)."""
    result = _judged(WITHIN)
    assert result.baseline is not None
    warm = next(d for d in result.baseline.deltas if d.number == "warm_p95")
    assert warm.outcome == "undecided"
    assert warm.estimate is not None
    assert warm.estimate <= 1.10
    assert warm.interval is not None
    assert warm.interval[1] is not None
    assert warm.interval[1] > 1.10
    assert result.verdict.passed
    assert not any("regression undecided" in line for line in result.verdict.undecided)


def _side_by_side(samples: tuple[Sample, ...]) -> RunResult:
    """`samples` judged as an A/B run against BASE's calls measured beside them."""
    target = make_target("local").model_copy(update={"baseline_url": "http://127.0.0.1:9/"})
    return assess_run(
        target,
        Measurement(list(samples), started_at=0.0, base_samples=list(BASE.samples)),
        finished_at=1.0,
        stamp_source=StampSource.KERNEL,
    )


@pytest.mark.parametrize("judge", [_judged, _side_by_side], ids=["earlier run", "side by side"])
def test_no_report_says_no_number_regressed_beside_an_undecided_one(
    judge: Callable[[tuple[Sample, ...]], RunResult],
) -> None:
    """Two regressions undecided: neither the terminal nor the Markdown says "no number
    regressed"; both say which are undecided and how many were decided not regressed."""
    result = judge(NEAR)
    assert result.baseline is not None
    assert [d.number for d in result.baseline.undecided] == ["warm_p95", "concurrent_p95"]
    terminal = " ".join(render_terminal([result]).split())
    summary = render_summary([result])
    said = (
        "2 numbers undecided (warm p95, concurrent p95), not called regressions; 1 not "
        "regressed beyond noise and the 10 % limit"
    )
    assert said in terminal
    assert f": {said}." in summary
    assert "no number regressed" not in terminal
    assert "no number regressed" not in summary


def test_the_terminal_wraps_an_undecided_line_whole() -> None:
    """The undecided regression's line is wrapped, never cut: it ends "so it was not called a
    regression", and no word of the terminal report ends in "…" (it read "a regr…")."""
    text = render_terminal([_judged(NEAR)])
    joined = " ".join(text.split())
    assert (
        "undecided, without failing the run: warm p95 regression undecided: 285 ms → 328 ms "
        "(+15 %), head / base 1.03 to 1.21 (one-sided 98.0 % and 90.0 %, the test's); the calls "
        "could not tell it from noise, so it was not called a regression undecided, without "
        "failing the run: concurrent p95"
    ) in joined
    assert re.search(r"\w…", text) is None, text


def test_the_fail_policy_counts_an_undecided_regression() -> None:
    """With on-undecided-regression fail, the same run fails, and the reason says it was by
    policy."""
    result = _judged(NEAR, on_undecided_regression="fail")
    assert not result.verdict.passed
    assert any(
        reason.startswith("undecided regression, counted as one by policy")
        for reason in result.verdict.reasons
    ), result.verdict.reasons
    assert result.baseline is not None
    assert all(d.by_policy for d in result.baseline.regressions)


def test_rows_not_needed_after_a_budget_fail_say_so() -> None:
    """Every warm call over the 3 s budget FAILs the run at the first look; the other rows were
    not needed, and say that rather than "undecided at the cap"."""
    samples = samples_for(cold=0.3, warm=[3.5] * 20, concurrent=_spread(0.300, 0.005, 10))
    result = _judged(samples)
    assert result.baseline is not None
    assert not result.verdict.passed
    notes = {d.number: d.note for d in result.baseline.deltas}
    assert "at the cap" not in " ".join(notes.values())
    undecided = [d for d in result.baseline.deltas if d.outcome == "undecided"]
    assert undecided
    assert all(d.note == "undecided: not needed, the run had already failed" for d in undecided)
    assert result.verdict.undecided == ()


def test_a_check_decided_at_the_cap_says_what_decided_it() -> None:
    """31 fast calls cannot decide a p95 (33 are needed): decided by its value, said in the
    note, the sentence and beside the verdict."""
    result = assess_run(
        make_target("local"),
        Measurement(
            list(samples_for(cold=0.3, warm=[0.2] * 20, concurrent=[0.3] * 10)), started_at=0.0
        ),
        finished_at=1.0,
        stamp_source=StampSource.KERNEL,
    )
    warm = next(c for c in result.verdict.checks if c.number == "warm_p95")
    assert (warm.passed, warm.decided, warm.by_policy) == (True, False, True)
    assert (
        warm.note == "undecided when sampling stopped: passed by its value (on-undecided: estimate)"
    )
    assert warm.meaning.startswith(
        "PASS: undecided after 20 calls, 0 over 3.00 s (0.0 %), too near the limit for the "
        "calls to tell; decided by its value, 200 ms ≤ 3.00 s"
    )
    assert result.verdict.undecided[0].startswith("warm p95: undecided when sampling stopped")


def test_an_early_pass_never_stands_beside_a_value_over_its_budget() -> None:
    """Warm p95 decided PASS on 40 fast calls; 60 more calls taken for another check bring 6 of
    them over the budget: the p95 of all 100 is now over it, the test is undecided again, and the
    check is decided by its value (FAIL), not left PASS beside a p95 over budget (2-3 % of runs
    near the budget printed that before)."""
    from latency_gate.assess.budget.gate import Gate, plan_for
    from latency_gate.assess.numbers.stats import numbers
    from latency_gate.config import Budget

    fast = samples_for(cold=0.3, warm=[0.5] * 40, concurrent=[])
    more = samples_for(cold=None, warm=[0.5] * 54 + [3.5] * 6, concurrent=[])
    later = (*fast, *(s.model_copy(update={"index": 40 + s.index}) for s in more))
    budget = Budget(max_concurrent_p95=None, max_error_rate=None)
    gate = Gate(
        budget=budget, plan=plan_for(max_calls=500, concurrency=10, on_undecided="estimate")
    )
    gate.look(fast)
    assert gate.decisions["warm_p95"].value == "pass"
    gate.look(later)
    warm = next(c for c in gate.checks(later, numbers(later)) if c.number == "warm_p95")
    assert warm.value is not None
    assert warm.value > 3.0
    assert (warm.passed, warm.by_policy) == (False, True)
    assert "decided by its value" in warm.meaning


def test_an_early_pass_that_the_value_agrees_with_stands() -> None:
    """The same, with 2 of the 60 later calls over the budget: undecided again, but the p95 of
    all 100 is within it, so the PASS reached at 40 calls stands and its sentence says so."""
    from latency_gate.assess.budget.gate import Gate, plan_for
    from latency_gate.assess.numbers.stats import numbers
    from latency_gate.config import Budget

    fast = samples_for(cold=0.3, warm=[0.5] * 40, concurrent=[])
    more = samples_for(cold=None, warm=[0.5] * 56 + [3.5] * 4, concurrent=[])
    later = (*fast, *(s.model_copy(update={"index": 40 + s.index}) for s in more))
    budget = Budget(max_concurrent_p95=None, max_error_rate=None)
    gate = Gate(
        budget=budget, plan=plan_for(max_calls=500, concurrency=10, on_undecided="estimate")
    )
    gate.look(fast)
    gate.look(later)
    assert gate.decisions["warm_p95"].value == "undecided"
    warm = next(c for c in gate.checks(later, numbers(later)) if c.number == "warm_p95")
    assert warm.value is not None
    assert warm.value <= 3.0
    assert (warm.passed, warm.by_policy) == (True, False)
    assert "leave it undecided, not overturned" in warm.meaning


def test_an_error_rate_over_its_budget_by_its_calls_fails_when_another_check_stopped() -> None:
    """3 refused connections stop the run on the latency checks (no data) before the error
    budget's test decides (3 failures in a row are one clump); 3 of 3 failed is over the 1 %
    budget all the same (its interval, 14.1 % to 100.0 %), so its row is FAIL, not "not
    needed"."""
    samples = tuple(
        failed_sample(phase, i, ErrorKind.CONNECTION_REFUSED, "connection refused")
        for phase, i in ((CallPhase.COLD, 0), (CallPhase.WARM, 0), (CallPhase.WARM, 1))
    )
    result = assess_run(
        make_target("local"),
        Measurement(list(samples), started_at=0.0),
        finished_at=1.0,
        stamp_source=StampSource.KERNEL,
    )
    errors = next(c for c in result.verdict.checks if c.number == "error_rate")
    assert (errors.passed, errors.by_policy) == (False, False)
    assert errors.interval is not None
    assert (round(errors.interval[0] or 0, 4), errors.interval[1]) == (0.1406, 1.0)
    assert errors.meaning == (
        "FAIL: its 95 % interval, 14.1 % to 100.0 %, lies wholly over the 1.0 % budget (the run "
        "stopped, on another check's FAIL, before this check's test decided)"
    )
    assert "error_rate over budget" in result.verdict.reasons
    table = render_terminal([result])
    assert re.search(r"error rate +100\.0 % +14\.1 % to 100\.0 % +1\.0 % +FAIL\n", table), table
    assert "not needed" not in table
