"""Findings: what in the samples explains the numbers, with the evidence in numbers.

Pure functions over samples. Each rule reads like an experienced engineer looking at the raw
samples, and each has thresholds chosen so that loopback noise (a few ms) cannot fire it: a
finding names a problem a user would feel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import median

from latency_gate.models import CallPhase, ErrorKind, Finding, Numbers, Sample
from latency_gate.report import fmt_duration

# A stream is "buffered" when the first token comes this late in the answer...
BUFFERED_FIRST_TOKEN_SHARE = 0.85
# ...and the answer takes long enough for a user to notice the difference.
BUFFERED_MIN_DURATION = 0.15
# Concurrent p95 at this share of "concurrency x warm p50" means calls wait for each other.
SERIALIZED_SHARE = 0.5
COLD_RATIO = 3.0
COLD_MIN_EXTRA = 0.25
SETUP_SHARE = 0.3
LONG_TAIL_RATIO = 3.0
LONG_TAIL_MIN_GAP = 0.1
MIN_SAMPLES = 5


def find(samples: Sequence[Sample], numbers: Numbers, *, streaming: bool) -> tuple[Finding, ...]:
    """Every finding that applies to a run, most telling first."""
    rules: list[Callable[[Sequence[Sample], Numbers, bool], Finding | None]] = [
        _buffered_stream,
        _serialized,
        _cold_start,
        _connection_setup,
        _tokens_per_second_hides_the_wait,
        _rate_limited,
        _long_tail,
    ]
    found = (rule(samples, numbers, streaming) for rule in rules)
    return tuple(f for f in found if f is not None)


def _ok(samples: Sequence[Sample], *phases: CallPhase) -> list[Sample]:
    return [s for s in samples if s.ok and s.latency is not None and s.phase in phases]


def _buffered_stream(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    if not streaming:
        return None
    calls = [
        s
        for s in _ok(samples, CallPhase.WARM, CallPhase.CONCURRENT)
        if s.timings.first_token is not None and s.timings.last_byte and s.token_events >= 3
    ]
    if len(calls) < MIN_SAMPLES:
        return None
    total = median(s.timings.last_byte or 0.0 for s in calls)
    first = median(s.timings.first_token or 0.0 for s in calls)
    one_read = sum(s.token_reads <= 1 for s in calls) / len(calls)
    if total < BUFFERED_MIN_DURATION:
        return None
    if first / total < BUFFERED_FIRST_TOKEN_SHARE and one_read < 0.8:
        return None
    tokens = median(s.token_events for s in calls)
    headers = median(s.timings.headers or 0.0 for s in calls)
    held = " and the headers were held until then too" if headers >= 0.9 * first else ""
    return Finding(
        code="buffered-stream",
        title="Buffered stream: the answer arrives all at once",
        evidence=(
            f"a stream was asked for, but the first token came at {fmt_duration(first)} of a "
            f"{fmt_duration(total)} answer (median, {len(calls)} calls), with "
            f"{tokens:g} tokens in {100 * one_read:.0f} % of calls arriving in one read{held}"
        ),
        hint=(
            "a layer between the model and the user holds the stream: look for response "
            "buffering in the proxy (nginx proxy_buffering, X-Accel-Buffering: no), compression "
            "middleware or a handler that collects the answer before returning it"
        ),
    )


def _serialized(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    burst = _ok(samples, CallPhase.CONCURRENT)
    if len(burst) < 3 or numbers.warm_p50 is None or numbers.concurrent_p95 is None:
        return None
    concurrency = len([s for s in samples if s.phase is CallPhase.CONCURRENT])
    serial = concurrency * numbers.warm_p50
    ratio = numbers.concurrent_p95 / numbers.warm_p50
    if ratio < 3 or numbers.concurrent_p95 < SERIALIZED_SHARE * serial:
        return None
    waits = sorted(s.latency or 0.0 for s in burst)
    workers = max(1, round(len(burst) * numbers.warm_p50 / max(waits[-1], 1e-9)))
    return Finding(
        code="serialized",
        title="Queued requests: concurrent calls wait for each other",
        evidence=(
            f"concurrent p95 is {fmt_duration(numbers.concurrent_p95)}, {ratio:.1f} times warm "
            f"p50 ({fmt_duration(numbers.warm_p50)}); the burst's calls finished at "
            f"{fmt_duration(waits[0])} to {fmt_duration(waits[-1])}, growing with their place "
            f"in the queue, as if served by about {workers} at a time"
        ),
        hint=(
            "the endpoint serves requests one (or a few) at a time: a single worker, a lock, a "
            "queue added to dodge timeouts, or a model server with one slot; add workers or slots"
        ),
    )


def _cold_start(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    cold = _ok(samples, CallPhase.COLD)
    if not cold or numbers.warm_p50 is None or numbers.cold_start is None:
        return None
    extra = numbers.cold_start - numbers.warm_p50
    if numbers.cold_start < COLD_RATIO * numbers.warm_p50 or extra < COLD_MIN_EXTRA:
        return None
    t = cold[0].timings
    setup = (t.dns or 0.0) + (t.connect or 0.0) + (t.tls or 0.0)
    server = max(extra - setup, 0.0)
    return Finding(
        code="cold-start",
        title="Cold start: the first call after idle is slow",
        evidence=(
            f"the cold call took {fmt_duration(numbers.cold_start)}, {fmt_duration(extra)} more "
            f"than warm p50 ({fmt_duration(numbers.warm_p50)}): {fmt_duration(setup)} of it "
            f"connection setup (DNS, TCP, TLS), about {fmt_duration(server)} on the server side"
        ),
        hint=(
            "the server (or a model it loads) starts on demand: keep an instance warm "
            "(minimum instances, a scheduled ping) or preload the model at start-up"
            if server >= setup
            else "connection setup dominates the first call: reuse connections, move the "
            "endpoint closer, or check DNS and TLS (session resumption, OCSP stapling)"
        ),
    )


def _connection_setup(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    warm = _ok(samples, CallPhase.WARM)
    if len(warm) < MIN_SAMPLES:
        return None
    reconnected = [s for s in warm if s.new_connection]
    share_reconnected = len(reconnected) / len(warm)
    setups = [
        ((s.timings.dns or 0) + (s.timings.connect or 0) + (s.timings.tls or 0)) / (s.latency or 1)
        for s in reconnected
    ]
    setup_share = median(setups) if setups else 0.0
    if share_reconnected < 0.5 or setup_share < SETUP_SHARE:
        if share_reconnected < 0.5:
            return None
        return Finding(
            code="no-keep-alive",
            title="Keep-alive not honoured: every warm call opens a new connection",
            evidence=(
                f"{len(reconnected)} of {len(warm)} warm calls opened a new connection"
                f" (setup is {100 * setup_share:.0f} % of their time)"
            ),
            hint=(
                "the server or a proxy closes connections after each answer (Connection: close, "
                "HTTP/1.0, a short keep-alive timeout): enable keep-alive to save a handshake "
                "per call"
            ),
        )
    return Finding(
        code="connection-setup",
        title="Connection setup dominates: handshakes take much of each call",
        evidence=(
            f"{len(reconnected)} of {len(warm)} warm calls opened a new connection, and DNS, "
            f"TCP and TLS took {100 * setup_share:.0f} % of their time (median)"
        ),
        hint=(
            "keep connections alive between calls (HTTP keep-alive, a shared client) and check "
            "DNS and TLS times; a closer region helps too"
        ),
    )


def _tokens_per_second_hides_the_wait(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    calls = [
        s
        for s in _ok(samples, CallPhase.WARM, CallPhase.CONCURRENT)
        if s.tokens and s.timings.first_token is not None and s.timings.last_token is not None
    ]
    if len(calls) < MIN_SAMPLES:
        return None
    rates = [
        (s.tokens or 0) / (s.timings.last_token - s.timings.first_token)  # type: ignore[operator]
        for s in calls
        if (s.timings.last_token or 0) - (s.timings.first_token or 0) > 0.001
    ]
    if not rates:
        return None
    rate = median(rates)
    worst = max(v for v in (numbers.warm_p95, numbers.concurrent_p95) if v is not None)
    streaming_time = median((s.tokens or 0) / rate for s in calls)
    if worst < 1.0 or worst < 2 * streaming_time:
        return None
    return Finding(
        code="tokens-per-second",
        title="Tokens/s hides the wait",
        evidence=(
            f"the model streams at {rate:.0f} tokens/s, so {median(s.tokens or 0 for s in calls):g}"
            f" tokens take about {fmt_duration(streaming_time)}; yet users wait "
            f"{fmt_duration(worst)} at p95: the rest is spent before and around the model"
        ),
        hint=(
            "look at what comes before the first token: auth, queues, persistence and buffers "
            "in front of the model; tokens/s measures only the fastest link"
        ),
    )


def _rate_limited(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    limited = [s for s in samples if s.error is ErrorKind.HTTP_429]
    if not limited:
        return None
    seen = sorted({s.retry_after for s in limited if s.retry_after})
    after = f"; Retry-After: {', '.join(seen[:3])}" if seen else "; no Retry-After header"
    return Finding(
        code="rate-limited",
        title="Rate limited: the endpoint answered 429",
        evidence=f"{len(limited)} of {len(samples)} calls got HTTP 429{after}",
        hint=(
            "the probe's own calls hit a rate limit: raise the limit for this key, probe with a "
            "key of its own, or lower --concurrency; users under the same limit see these errors"
        ),
    )


def _long_tail(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    warm = _ok(samples, CallPhase.WARM)
    if len(warm) < 10 or numbers.warm_p50 is None or numbers.warm_p95 is None:
        return None
    gap = numbers.warm_p95 - numbers.warm_p50
    if numbers.warm_p95 < LONG_TAIL_RATIO * numbers.warm_p50 or gap < LONG_TAIL_MIN_GAP:
        return None
    slow = sorted(warm, key=lambda s: s.latency or 0.0)[-1]
    return Finding(
        code="long-tail",
        title="Long tail: p95 far above p50",
        evidence=(
            f"warm p95 is {fmt_duration(numbers.warm_p95)}, "
            f"{numbers.warm_p95 / numbers.warm_p50:.1f} times warm p50 "
            f"({fmt_duration(numbers.warm_p50)}); the slowest warm call (#{slow.index}) took "
            f"{fmt_duration(slow.latency)}"
        ),
        hint=(
            "one call in twenty is much slower than the rest: look for garbage-collection "
            "pauses, cache misses, retries inside the backend or a noisy neighbour"
        ),
    )
