"""Percentiles and summaries: pure functions, no I/O.

Percentiles use linear interpolation between closest ranks: numpy's default, k6's, and Python's
`statistics.quantiles(method="inclusive")`. For sorted values x[0..n-1] and q in [0, 100], the
rank is h = (n - 1) * q / 100 and the result is
x[floor(h)] + (h - floor(h)) * (x[ceil(h)] - x[floor(h)]).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from latency_gate.assess.maths.intervals import linear_percentile as percentile
from latency_gate.assess.numbers import work
from latency_gate.models import CallPhase, Numbers, Sample

__all__ = [
    "PERCENTILE_METHOD",
    "error_rate",
    "first_tokens",
    "latencies",
    "numbers",
    "percentile",
]

PERCENTILE_METHOD = "linear interpolation between closest ranks (numpy default)"


def latencies(samples: Iterable[Sample], phase: CallPhase) -> list[float]:
    """Latencies of the successful calls of one phase."""
    return [s.latency for s in samples if s.phase is phase and s.ok and s.latency is not None]


def first_tokens(samples: Iterable[Sample]) -> list[float]:
    """First-token times of the successful warm and concurrent calls (the cold call's includes
    the handshakes, so it is left out)."""
    return [
        s.timings.first_token
        for s in samples
        if s.ok and s.phase is not CallPhase.COLD and s.timings.first_token is not None
    ]


def first_tokens_of(samples: Iterable[Sample], phase: CallPhase) -> list[float]:
    """First-token times of the successful calls of one phase (one load: warm or concurrent)."""
    return [
        s.timings.first_token
        for s in samples
        if s.ok and s.phase is phase and s.timings.first_token is not None
    ]


def token_gaps(samples: Iterable[Sample]) -> list[float]:
    """Each successful warm and concurrent call's mean gap between visible deltas (aiperf's
    per-request inter-token latency)."""
    return [
        s.token_gaps.mean
        for s in samples
        if s.ok and s.phase is not CallPhase.COLD and s.token_gaps is not None
    ]


def longest_stall(samples: Iterable[Sample]) -> float | None:
    """The longest gap between visible deltas of any successful call, or None without gaps."""
    gaps = [s.token_gaps.max for s in samples if s.ok and s.token_gaps is not None]
    return max(gaps, default=None)


def per_token_times(samples: Iterable[Sample]) -> list[float]:
    """Each successful warm streamed call's time per output token after the first."""
    return [
        t for s in samples if s.phase is CallPhase.WARM and (t := work.per_token(s)) is not None
    ]


def output_tokens(samples: Iterable[Sample]) -> list[float]:
    """The output tokens of each successful warm and concurrent call that counted them."""
    return [
        float(s.tokens)
        for s in samples
        if s.ok and s.phase is not CallPhase.COLD and s.tokens is not None and s.tokens >= 1
    ]


def error_rate(samples: Sequence[Sample]) -> float:
    """Share of all calls that failed; 0.0 for no calls (the verdict treats that as no data)."""
    if not samples:
        return 0.0
    return sum(not s.ok for s in samples) / len(samples)


def numbers(samples: Sequence[Sample]) -> Numbers:
    """The five numbers (and first-token p95) from a run's samples."""
    cold = latencies(samples, CallPhase.COLD)
    warm = latencies(samples, CallPhase.WARM)
    concurrent = latencies(samples, CallPhase.CONCURRENT)
    per_token = per_token_times(samples)
    tokens = output_tokens(samples)
    return Numbers(
        cold_start=cold[0] if cold else None,
        warm_p50=percentile(warm, 50),
        warm_p95=percentile(warm, 95),
        concurrent_p95=percentile(concurrent, 95),
        error_rate=error_rate(samples),
        ttft_p95=percentile(first_tokens(samples), 95),
        ttft_warm_p95=percentile(first_tokens_of(samples, CallPhase.WARM), 95),
        ttft_concurrent_p95=percentile(first_tokens_of(samples, CallPhase.CONCURRENT), 95),
        itl_p95=percentile(token_gaps(samples), 95),
        longest_stall=longest_stall(samples),
        tpot_p50=percentile(per_token, 50),
        tpot_p95=percentile(per_token, 95),
        tokens_p50=percentile(tokens, 50),
        tokens_p95=percentile(tokens, 95),
    )
