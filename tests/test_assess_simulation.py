"""Seeded simulations of the whole sequential procedure (bench/statsim.py), asserting issue 12's
headline figures with fewer runs than docs/statistics.md: each bound is the target plus the
slack those few runs need, so a procedure that missed its target by much would fail here.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import statsim

from latency_gate.assess.regression import Regression
from latency_gate.assess.sampling import DEFAULT_PLAN


def test_budget_at_eight_tenths_rarely_fails() -> None:
    """p95 at 0.8x the budget (sigma 0.3): warm and concurrent FAIL in at most 1 of 150 runs."""
    _, after, _, _ = statsim.budget_cell(80, 150, 0.8, DEFAULT_PLAN)
    assert max(after.values()) <= 1 / 150


@pytest.mark.slow
def test_budget_at_twelve_tenths_fails() -> None:
    """p95 at 1.2x the budget: each latency check FAILs in at least 95 % of 150 runs."""
    _, after, _, _ = statsim.budget_cell(81, 150, 1.2, DEFAULT_PLAN)
    assert min(after.values()) >= 0.95


def test_budget_before_was_flaky_at_twelve_tenths() -> None:
    """Today's rule (p95 of one burst of 10) passes a 1.2x endpoint in over 20 % of runs."""
    before, _, _, _ = statsim.budget_cell(82, 150, 1.2, DEFAULT_PLAN)
    assert before["concurrent_p95"] <= 0.8


def _error_fail_share(rate: float, runs: int, cell: int) -> float:
    endpoint = statsim.Endpoint(statsim.REGRESSION_MEDIAN, 0.25, fail_rate=rate)
    failed = sum(
        not statsim.gate_run(endpoint, statsim.run_rng("t", cell, run)).passed["error_rate"]
        for run in range(runs)
    )
    return failed / runs


@pytest.mark.slow
def test_healthy_error_rate_rarely_fails() -> None:
    """A 0.5 % endpoint under a 0.01 budget fails at most 5 % of 200 runs (was 13 %)."""
    assert _error_fail_share(0.005, 200, 1) <= 0.05


def test_five_percent_errors_rarely_pass() -> None:
    """A 5 % endpoint passes at most 5 % of 200 runs."""
    assert _error_fail_share(0.05, 200, 2) >= 0.95


def _flagged(change: dict[str, float], sigma: float, runs: int, cell: int) -> tuple[float, float]:
    base_ep = statsim.Endpoint(statsim.REGRESSION_MEDIAN, sigma, fail_rate=statsim.BASE_FAIL_RATE)
    head_ep = replace(base_ep, **change)
    stats = statsim.regression_cell(
        "t", cell, runs=runs, base_ep=base_ep, head_ep=head_ep, plan=DEFAULT_PLAN
    )
    return max(stats.flagged.values()), stats.any_flagged


@pytest.mark.slow
def test_unchanged_endpoint_with_drift_raises_few_false_alarms() -> None:
    """+5 % drift at sigma 0.25: no number flagged in more than 2 % of 60 pairs of runs."""
    per_number, any_number = _flagged({"scale": 1.05}, 0.25, 60, 3)
    assert per_number <= 0.02
    assert any_number <= 0.05


@pytest.mark.slow
def test_fifty_percent_slower_is_caught() -> None:
    """Every call +50 % at sigma 0.25: the run is flagged in at least 95 % of 40 pairs."""
    _, any_number = _flagged({"scale": 1.5}, 0.25, 40, 4)
    assert any_number >= 0.95


def test_regressions_are_decided_per_number() -> None:
    """A head run against a base run reports an outcome for each compared number."""
    endpoint = statsim.Endpoint(0.4, 0.1)
    rng = statsim.run_rng("t", 5, 0)
    base = statsim.gate_run(endpoint, rng)
    head = statsim.gate_run(replace(endpoint, scale=2.0), rng, base=base.calls)
    assert head.regression["warm_p95"] is Regression.REGRESSED
    assert head.regression["concurrent_p95"] is Regression.REGRESSED
    assert head.regression["error_rate"] is Regression.NOT_REGRESSED
