"""The verdict: each gated check decided from the calls (or undecided and resolved by the stated
policy), PASS or FAIL overall, no gray zone."""

from __future__ import annotations

from collections.abc import Sequence

from result_factory import failed_sample, samples_for

from latency_gate.assess.budget.gate import Gate, plan_for
from latency_gate.assess.numbers.stats import numbers
from latency_gate.assess.verdict import judge
from latency_gate.config import Budget
from latency_gate.models import CallPhase, ErrorKind, NumberDelta, Sample, Verdict


def _verdict(
    samples: Sequence[Sample], budget: Budget | None = None, *, on_undecided: str = "fail"
) -> Verdict:
    gate = Gate(
        budget=budget or Budget(),
        plan=plan_for(max_calls=300, concurrency=10, on_undecided=on_undecided),
    )
    checks = gate.checks(samples, numbers(samples))
    return judge(checks, successful_calls=sum(s.ok for s in samples))


def _fast(warm: int = 40, concurrent: int = 90) -> tuple[Sample, ...]:
    return samples_for(cold=0.3, warm=[0.2] * warm, concurrent=[0.4] * concurrent)


def _check(verdict: Verdict, number: str) -> tuple[bool | None, bool, bool, str]:
    check = next(c for c in verdict.checks if c.number == number)
    return check.passed, check.decided, check.by_policy, check.note


def test_default_budget_passes_a_fast_clean_run_once_decided() -> None:
    """131 clean calls well under 3 s (the error budget needs 127): every default check decides
    PASS, no reason given."""
    verdict = _verdict(_fast())
    assert verdict.passed
    assert verdict.label == "PASS"
    assert verdict.reasons == ()
    assert _check(verdict, "warm_p95") == (True, True, False, "")


def test_p95_over_budget_fails_and_names_the_number() -> None:
    """Every warm call over 3 s: warm p95 decides FAIL, and the reason says which number."""
    samples = samples_for(cold=0.3, warm=[3.2] * 40, concurrent=[0.4] * 40)
    verdict = _verdict(samples)
    assert not verdict.passed
    assert verdict.reasons == ("warm_p95 over budget",)
    assert _check(verdict, "warm_p95") == (False, True, False, "")


def test_too_few_calls_to_decide_fail_by_the_default_policy_and_say_so() -> None:
    """31 clean calls cannot show a p95 under budget: undecided, failed by policy, in words."""
    verdict = _verdict(_fast(warm=20, concurrent=10))
    assert not verdict.passed
    assert _check(verdict, "warm_p95") == (
        False,
        False,
        True,
        "undecided when sampling stopped: failed by policy (on-undecided: fail)",
    )
    assert "warm_p95 undecided, failed by policy" in verdict.reasons


def test_the_pass_policy_passes_what_is_undecided_and_says_so() -> None:
    """With on-undecided pass, the same 31 calls pass, each undecided check marked."""
    verdict = _verdict(_fast(warm=20, concurrent=10), on_undecided="pass")
    assert verdict.passed
    assert _check(verdict, "warm_p95") == (
        True,
        False,
        True,
        "undecided when sampling stopped: passed by policy (on-undecided: pass)",
    )


def test_error_rate_with_failures_well_over_budget_fails() -> None:
    """8 failed of 131 calls (about 6 %), apart, against 1 %: the error rate decides FAIL (8 in
    a row would be one clump, one event: tests/test_clumps.py)."""
    samples = list(_fast())
    for i in range(8):
        samples[1 + 4 * i] = failed_sample(CallPhase.WARM, 4 * i, ErrorKind.HTTP_5XX)
    verdict = _verdict(samples)
    assert not verdict.passed
    assert _check(verdict, "error_rate")[:2] == (False, True)


def test_ungated_numbers_are_reported_not_judged() -> None:
    """Cold start has no default limit: its check carries passed=None and no interval."""
    verdict = _verdict(samples_for(cold=60.0, warm=[0.2] * 40, concurrent=[0.4] * 90))
    cold = next(c for c in verdict.checks if c.number == "cold_start")
    assert (cold.passed, cold.limit, cold.value, cold.interval) == (None, None, 60.0, None)
    assert verdict.passed


def test_each_gated_percentile_carries_its_95_percent_interval() -> None:
    """Warm p50 of 40 calls gets both bounds; warm p95 of 40 only a lower one (72 are needed)."""
    samples = samples_for(cold=0.3, warm=[0.1 + 0.01 * i for i in range(40)], concurrent=[])
    verdict = _verdict(samples, Budget(max_warm_p50=1.0, max_concurrent_p95=None))
    p50 = next(c for c in verdict.checks if c.number == "warm_p50")
    p95 = next(c for c in verdict.checks if c.number == "warm_p95")
    assert p50.interval is not None
    assert p50.interval[0] is not None
    assert p50.interval[1] is not None
    assert p50.interval[0] < 0.295 < p50.interval[1]
    assert p95.interval is not None
    assert p95.interval[1] is None
    assert p95.n == 40


def test_zero_successful_calls_is_fail_no_data() -> None:
    """No successful call is never a PASS, even with every limit off."""
    budget = Budget(max_warm_p95=None, max_concurrent_p95=None, max_error_rate=None)
    samples = [failed_sample(CallPhase.WARM, i, ErrorKind.CONNECTION_REFUSED) for i in range(5)]
    verdict = _verdict(samples, budget)
    assert not verdict.passed
    assert verdict.reasons[0].startswith("no data")


def test_gated_number_without_data_fails() -> None:
    """A burst where every call failed leaves concurrent p95 unknown: that is a FAIL."""
    samples = samples_for(cold=0.3, warm=[0.2] * 40, concurrent=[])
    verdict = _verdict(samples)
    assert _check(verdict, "concurrent_p95") == (False, True, False, "no data")
    assert not verdict.passed


def test_ttft_is_left_out_when_neither_measured_nor_gated() -> None:
    """A non-streaming run shows no first-token line."""
    verdict = _verdict(_fast())
    assert "ttft_p95" not in [c.number for c in verdict.checks]


def test_interrupted_runs_and_regressions_fail_with_their_reasons() -> None:
    """The verdict is written in one place: an interruption and a regression each fail it."""
    delta = NumberDelta(number="warm_p95", base=1.0, head=1.5, regressed=True, interval=(1.3, 1.7))
    verdict = judge((), successful_calls=10, interrupted=True, regressions=(delta,))
    assert not verdict.passed
    assert verdict.reasons == (
        "the run was interrupted",
        "regression: warm p95 1.00 s → 1.50 s (+50 %), head / base 1.30 to 1.70 (95 %)",
    )
