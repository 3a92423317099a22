"""Failures in clumps: the error budget's test counts a run of consecutive failures as one event,
and the report names the clumps (assess/budget/clumps.py, docs/statistics.md "Failures in
clumps")."""

from __future__ import annotations

import pytest

from latency_gate.assess.budget.checks import error_rate_check, nearer_healthy
from latency_gate.assess.budget.clumps import Clumps, clean_run_chance, clump_tests, clumps_of
from latency_gate.assess.budget.gate import Gate, plan_for
from latency_gate.assess.maths.sequential import Decision
from latency_gate.assess.numbers.stats import numbers
from latency_gate.config import Budget
from latency_gate.models import CallPhase, ErrorKind, Sample


def _oks(failed_at: set[int], calls: int) -> list[bool]:
    return [i not in failed_at for i in range(1, calls + 1)]


def test_clumps_are_runs_of_consecutive_failures_in_call_order() -> None:
    """Calls 41-45 and 102-103 failed: 7 failures in 2 clumps, said with their calls."""
    found = clumps_of(_oks({41, 42, 43, 44, 45, 102, 103}, 200))
    assert (found.calls, found.failed, found.count) == (200, 7, 2)
    assert found.spans == ((41, 45), (102, 103))
    assert found.clumped
    assert found.trials == 200 - 7 + 2
    assert found.describe() == "7 failures in 2 clumps: calls 41-45 and 102-103"


def test_a_clump_at_the_end_and_single_failures() -> None:
    """A run ending inside a clump closes it at the last call; failures apart are not clumped."""
    assert clumps_of(_oks({9, 10}, 10)).spans == ((9, 10),)
    apart = clumps_of(_oks({3, 7}, 10))
    assert not apart.clumped
    assert apart.describe() == "2 failures in 2 clumps: calls 3 and 7"
    assert clumps_of([]).calls == 0


def test_many_clumps_are_said_by_the_longest() -> None:
    """Only the longest four clumps are listed, in call order, then how many more."""
    failed = {1, 2, 10, 20, 21, 22, 30, 40, 41, 50}
    text = clumps_of(_oks(failed, 60)).describe()
    assert text == "10 failures in 6 clumps: calls 1-2, 10, 20-22, 40-41 and 2 more"


def test_five_failures_in_a_row_no_longer_fail_a_run_of_200_calls() -> None:
    """Counted call by call, five failures in a row among 200 calls FAILed a 1 % budget; as one
    clump they are one event, and the run is not failed for them."""
    in_a_row = clumps_of(_oks({50, 51, 52, 53, 54}, 200))
    assert error_rate_check(5, 200, 0.01).decision is Decision.FAIL  # taken as apart
    assert error_rate_check(5, 200, 0.01, in_a_row).decision is Decision.UNDECIDED
    five_apart = clumps_of(_oks({10, 50, 90, 130, 170}, 200))
    assert error_rate_check(5, 200, 0.01, five_apart).decision is Decision.FAIL


def test_clumps_slow_both_sides_not_the_side() -> None:
    """The clumps' mean length divides the evidence, it does not move it: the nearer share is
    the same, and the test's shares are the budget's divided by the length."""
    in_a_row = clumps_of(_oks(set(range(100, 110)), 400))
    tests = clump_tests(0.01, in_a_row.failed, in_a_row.events)
    assert tests is not None
    assert tests.fail_length == 10
    assert tests.fail.p0 == pytest.approx(0.0005)
    assert tests.fail.p1 == pytest.approx(0.003)
    assert nearer_healthy(10, 400, 0.01, in_a_row) is nearer_healthy(10, 400, 0.01)


def test_a_clean_run_passes_as_before() -> None:
    """Without a failure, 127 clean calls PASS the 1 % budget, as the call-by-call test did."""
    assert error_rate_check(0, 127, 0.01, clumps_of([True] * 127)).decision is Decision.PASS
    assert error_rate_check(0, 126, 0.01, clumps_of([True] * 126)).decision is Decision.UNDECIDED


def test_the_chance_a_clumped_endpoint_shows_a_clean_run() -> None:
    """3 % failing in clumps of 5 starts a clump at 0.615 % of calls: no failure in 127 calls
    happens 46 % of the time."""
    assert clean_run_chance(0.03, 127) == pytest.approx((1 - 0.03 / (5 * 0.97 + 0.03)) ** 127)
    assert clean_run_chance(0.03, 127) == pytest.approx(0.457, abs=0.001)


def _samples(oks: list[bool]) -> list[Sample]:
    """A run of warm calls, 100 ms each, failed where `oks` says."""
    return [
        Sample.model_construct(
            phase=CallPhase.WARM,
            index=i,
            started_at=float(i),
            ok=ok,
            latency=0.1 if ok else None,
            error=None if ok else ErrorKind.HTTP_5XX,
            status=200 if ok else 503,
        )
        for i, ok in enumerate(oks)
    ]


def test_the_report_names_the_clumps_and_counts_them_as_events() -> None:
    """The error rate's sentence says where the failures clumped and that a clump is one event;
    five in a row among 200 calls leave the check to the rate seen, not a FAIL by the test."""
    budget = Budget(max_warm_p95=None, max_concurrent_p95=None, max_error_rate=0.01)
    gate = Gate(
        budget=budget, plan=plan_for(max_calls=200, concurrency=10, on_undecided="estimate")
    )
    samples = _samples(_oks({41, 42, 43, 44, 45, 102, 103}, 200))
    gate.look(samples)
    check = next(c for c in gate.checks(samples, numbers(samples)) if c.number == "error_rate")
    assert check.by_policy
    assert "7 failures in 2 clumps: calls 41-45 and 102-103" in check.meaning
    assert "a clump of failures in a row counts as one event" in check.meaning


def test_a_clean_pass_says_what_clumps_it_does_not_rule_out() -> None:
    """A PASS on 127 clean calls says how often 3 % failing in clumps of 5 passes at least (it
    shows no failure in 127 calls that often)."""
    budget = Budget(max_warm_p95=None, max_concurrent_p95=None, max_error_rate=0.01)
    gate = Gate(
        budget=budget, plan=plan_for(max_calls=500, concurrency=10, on_undecided="estimate")
    )
    samples = _samples([True] * 127)
    gate.look(samples)
    check = next(c for c in gate.checks(samples, numbers(samples)) if c.number == "error_rate")
    assert check.passed
    assert check.decided
    assert check.meaning.endswith(
        "(such an endpoint passes at most 4.0 % of runs; failing in clumps of 5 calls, 45.7 % "
        "or more)"
    )


def test_counts_alone_are_taken_as_apart() -> None:
    """Without the order of the calls, each failure is its own clump."""
    assert Clumps.apart(3, 31) == Clumps(31, 3, 3, 3)
    assert error_rate_check(3, 31, 0.01).clumps == Clumps(31, 3, 3, 3)


def test_a_long_clump_counts_once_per_ten_calls() -> None:
    """Every call failing is an endpoint that is down: 31 failures in a row are 4 events, and
    FAIL the budget; a clump of 10 is one."""
    down = clumps_of([False] * 31)
    assert (down.count, down.events) == (1, 4)
    assert error_rate_check(31, 31, 0.01, down).decision is Decision.FAIL
    assert clumps_of(_oks(set(range(11, 21)), 40)).events == 1
