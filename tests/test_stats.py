"""Percentiles and the five numbers, pinned to known vectors."""

from __future__ import annotations

import statistics

import pytest

from latency_gate.assess.numbers import stats
from latency_gate.assess.numbers.timeline import stamp_stats
from latency_gate.models import CallPhase, CallTimings, ErrorKind, Sample


def _sample(phase: CallPhase, latency: float | None, *, index: int = 0, **kw: object) -> Sample:
    ok = latency is not None
    return Sample(
        phase=phase,
        index=index,
        started_at=0.0,
        ok=ok,
        latency=latency,
        error=None if ok else ErrorKind.HTTP_5XX,
        timings=CallTimings(last_byte=latency, **kw),
    )


def test_p95_of_one_to_twenty_is_19_05() -> None:
    """Linear interpolation: 1..20 gives p95 = 19.05, as numpy does."""
    assert stats.percentile(range(1, 21), 95) == pytest.approx(19.05)


def test_one_outlier_in_twenty_moves_p95_to_195_ms() -> None:
    """Nineteen 100 ms samples and one 2000 ms sample give p95 = 195 ms."""
    values = [0.1] * 19 + [2.0]
    assert stats.percentile(values, 95) == pytest.approx(0.195)


def test_percentile_matches_statistics_inclusive() -> None:
    """Every percentile agrees with statistics.quantiles(method='inclusive')."""
    values = [0.3, 0.05, 1.2, 0.8, 0.41, 0.07, 2.5]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for q in range(1, 100):
        assert stats.percentile(values, q) == pytest.approx(cuts[q - 1])


def test_percentile_of_nothing_is_none() -> None:
    """No values, no percentile."""
    assert stats.percentile([], 50) is None


def test_percentile_of_one_value_is_that_value() -> None:
    """A single sample is every percentile of itself."""
    assert stats.percentile([0.25], 95) == 0.25


def test_percentile_rejects_out_of_range_q() -> None:
    """q must lie in 0..100."""
    with pytest.raises(ValueError, match="between 0 and 100"):
        stats.percentile([1.0], 101)


def test_numbers_leave_failed_calls_out_of_latency_but_count_them_in_error_rate() -> None:
    """A failed warm call raises the error rate and is not a latency sample."""
    samples = [
        _sample(CallPhase.COLD, 1.5),
        *[_sample(CallPhase.WARM, 0.1, index=i) for i in range(3)],
        _sample(CallPhase.WARM, None, index=3),
        *[_sample(CallPhase.CONCURRENT, 0.2 * (i + 1), index=i) for i in range(5)],
    ]
    numbers = stats.numbers(samples)
    assert numbers.cold_start == 1.5
    assert numbers.warm_p50 == pytest.approx(0.1)
    assert numbers.warm_p95 == pytest.approx(0.1)
    assert numbers.concurrent_p95 == pytest.approx(0.96)
    assert numbers.error_rate == pytest.approx(1 / 10)


def test_numbers_without_samples_have_no_latency() -> None:
    """An empty run has no latency numbers and an error rate of 0."""
    numbers = stats.numbers([])
    assert (numbers.cold_start, numbers.warm_p50, numbers.concurrent_p95) == (None, None, None)
    assert numbers.error_rate == 0.0


def test_ttft_p95_comes_from_warm_and_concurrent_first_tokens() -> None:
    """First-token p95 ignores the cold call, whose first token includes the handshake."""
    samples = [
        _sample(CallPhase.COLD, 2.0, first_token=1.9),
        *[_sample(CallPhase.WARM, 0.5, index=i, first_token=0.1) for i in range(4)],
    ]
    assert stats.numbers(samples).ttft_p95 == pytest.approx(0.1)


def test_phase_stats_per_call_phase_and_boundary() -> None:
    """Each call phase gets p50 and p95 of each boundary that was recorded."""
    samples = [
        _sample(CallPhase.WARM, 0.1 * (i + 1), index=i, headers=0.01 * (i + 1)) for i in range(5)
    ]
    table = stamp_stats(samples)
    assert set(table) == {"warm"}
    assert table["warm"]["headers"].p50 == pytest.approx(0.03)
    assert table["warm"]["last_byte"].p95 == pytest.approx(0.48)
    assert table["warm"]["headers"].n == 5
    assert "first_token" not in table["warm"]
