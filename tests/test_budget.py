"""The verdict: PASS or FAIL per number and overall, no gray zone."""

from __future__ import annotations

from latency_gate.assess.verdict import judge
from latency_gate.config import Budget
from latency_gate.models import Numbers


def _numbers(**kw: float | None) -> Numbers:
    base: dict[str, float | None] = {
        "cold_start": 1.0,
        "warm_p50": 0.2,
        "warm_p95": 0.4,
        "concurrent_p95": 0.9,
        "error_rate": 0.0,
    }
    base.update(kw)
    return Numbers(**base)


def test_default_budget_passes_a_fast_clean_run() -> None:
    """Under 3 s at p95 and no errors is a PASS."""
    verdict = judge(_numbers(), Budget(), successful_calls=31)
    assert verdict.passed
    assert verdict.label == "PASS"
    assert verdict.reasons == ()


def test_number_at_its_limit_passes() -> None:
    """The limit itself is within budget."""
    verdict = judge(_numbers(warm_p95=3.0), Budget(), successful_calls=31)
    assert verdict.passed


def test_p95_over_budget_fails_and_names_the_number() -> None:
    """Warm p95 of 3.2 s against 3 s fails, and the reason says which number."""
    verdict = judge(_numbers(warm_p95=3.2), Budget(), successful_calls=31)
    assert not verdict.passed
    assert verdict.reasons == ("warm_p95 over budget",)
    failed = [c.number for c in verdict.checks if c.passed is False]
    assert failed == ["warm_p95"]


def test_error_rate_over_one_percent_fails() -> None:
    """One failed call in 31 is 3.2 %, over the default 1 %."""
    verdict = judge(_numbers(error_rate=1 / 31), Budget(), successful_calls=30)
    assert not verdict.passed
    assert verdict.reasons == ("error_rate over budget",)


def test_ungated_numbers_are_reported_not_judged() -> None:
    """Cold start has no default limit: its check carries passed=None."""
    verdict = judge(_numbers(cold_start=60.0), Budget(), successful_calls=31)
    cold = next(c for c in verdict.checks if c.number == "cold_start")
    assert (cold.passed, cold.limit, cold.value) == (None, None, 60.0)
    assert verdict.passed


def test_zero_successful_calls_is_fail_no_data() -> None:
    """No successful call is never a PASS, even with every limit off."""
    budget = Budget(max_warm_p95=None, max_concurrent_p95=None, max_error_rate=None)
    empty = Numbers(
        cold_start=None, warm_p50=None, warm_p95=None, concurrent_p95=None, error_rate=1.0
    )
    verdict = judge(empty, budget, successful_calls=0)
    assert not verdict.passed
    assert verdict.reasons[0].startswith("no data")


def test_gated_number_without_data_fails() -> None:
    """A burst where every call failed leaves concurrent p95 unknown: that is a FAIL."""
    verdict = judge(_numbers(concurrent_p95=None), Budget(), successful_calls=21)
    check = next(c for c in verdict.checks if c.number == "concurrent_p95")
    assert (check.passed, check.note) == (False, "no data")
    assert not verdict.passed


def test_ttft_is_left_out_when_neither_measured_nor_gated() -> None:
    """A non-streaming run shows no first-token line."""
    verdict = judge(_numbers(), Budget(), successful_calls=31)
    assert "ttft_p95" not in [c.number for c in verdict.checks]
