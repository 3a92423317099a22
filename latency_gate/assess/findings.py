"""Findings: what in the samples explains the numbers, with the evidence in numbers.

Pure functions over samples. Each rule reads the raw samples the way an experienced engineer
would, and each has an absolute floor besides its ratio, so that loopback noise (a few ms on a
busy 2-core machine) cannot fire it: a finding names something a user would feel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import median

from latency_gate.formatting import fmt_duration
from latency_gate.models import CallPhase, ErrorKind, Finding, Numbers, Sample

MIN_SAMPLES = 5
# Buffered stream: the answer must take long enough for a user to notice it arriving at once...
BUFFERED_MIN_DURATION = 0.15
# ...and the first token come this late in it (median share of the answer's time),
BUFFERED_FIRST_TOKEN_SHARE = 0.9
# ...or all tokens land within this window (a burst no model streams at: one or two reads),
BURST_WINDOW = 0.002
BURST_MIN_TOKENS = 3
# ...or faster than this per token (a few ms for a whole short answer: no model streams at
# 2,000 tokens/s to one user), over at least this many tokens;
BURST_GAP = 0.0005
BURST_GAP_MIN_TOKENS = 8
# a burst is named from this answer length on (a short answer held back is still felt: ~80 ms).
BURST_MIN_DURATION = 0.05
# ...and headers that come this late are "held until the body is ready".
HELD_HEADERS_SHARE = 0.9
# Queued: concurrent p95 at least this many times warm p50, this much slower in seconds, and at
# least half of the burst this many times warm p50 (a queue, not one straggler).
QUEUE_RATIO = 3.0
QUEUE_MIN_EXTRA = 0.1
QUEUE_WAITING_RATIO = 1.5
# Cold start: this many times warm p50 and this much more in seconds.
COLD_RATIO = 3.0
COLD_MIN_EXTRA = 0.25
# Connection setup: DNS+TCP+TLS at least this share of a call's time, and this long in seconds.
SETUP_SHARE = 0.3
SETUP_MIN = 0.02
# Keep-alive: this share of warm calls opening a new connection.
RECONNECT_SHARE = 0.5
# Tokens/s hides the wait: users wait this long at p95, and this many times the streaming time.
TPS_MIN_WAIT = 1.0
TPS_RATIO = 2.0
# Long tail: warm p95 this many times p50 and this much more in seconds, over at least 10 calls.
LONG_TAIL_RATIO = 3.0
LONG_TAIL_MIN_GAP = 0.1
LONG_TAIL_MIN_SAMPLES = 10

Rule = Callable[[Sequence[Sample], Numbers, bool], Finding | None]


def find(
    samples: Sequence[Sample],
    numbers: Numbers,
    *,
    streaming: bool,
    concurrency: int | None = None,
) -> tuple[Finding, ...]:
    """Every finding that applies to a run, most telling first.

    `concurrency` is the size of one burst: a run that took more bursts (sequential sampling)
    has its queue read from its first burst, the classic one, since calls of different bursts
    never waited for each other. None: all concurrent calls are one burst.
    """

    def queued(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
        if concurrency is not None:
            samples = [
                s for s in samples if s.phase is not CallPhase.CONCURRENT or s.index < concurrency
            ]
        return _queued(samples, numbers, streaming)

    rules: list[Rule] = [
        _buffered_stream,
        queued,
        _cold_start,
        _connection_setup,
        _tokens_per_second_hides_the_wait,
        _rate_limited,
        _long_tail,
        _stalled_stream,
        _cache_answering,
    ]
    found = (rule(samples, numbers, streaming) for rule in rules)
    return tuple(f for f in found if f is not None)


def _ok(samples: Sequence[Sample], *phases: CallPhase) -> list[Sample]:
    return [s for s in samples if s.ok and s.latency is not None and s.phase in phases]


def _setup(sample: Sample) -> float:
    """Seconds this call spent opening its connection: DNS, TCP and TLS."""
    t = sample.timings
    return (t.dns or 0.0) + (t.connect or 0.0) + (t.tls or 0.0)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _buffered_stream(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    if not streaming:
        return None
    calls = [
        s
        for s in _ok(samples, CallPhase.WARM, CallPhase.CONCURRENT)
        if s.timings.first_token is not None
        and s.timings.last_token is not None
        and s.timings.last_byte
        and s.token_events >= BURST_MIN_TOKENS
    ]
    if len(calls) < MIN_SAMPLES:
        return None
    total = median(s.timings.last_byte or 0.0 for s in calls)
    first = median(s.timings.first_token or 0.0 for s in calls)
    share = median((s.timings.first_token or 0.0) / (s.timings.last_byte or 1.0) for s in calls)
    spread = median((s.timings.last_token or 0.0) - (s.timings.first_token or 0.0) for s in calls)
    events = median(s.token_events for s in calls)
    burst = spread <= BURST_WINDOW or (
        events >= BURST_GAP_MIN_TOKENS and spread <= BURST_GAP * (events - 1)
    )
    if total < (BURST_MIN_DURATION if burst else BUFFERED_MIN_DURATION):
        return None
    if share < BUFFERED_FIRST_TOKEN_SHARE and not burst:
        return None
    tokens = round(median(s.token_events for s in calls))
    headers = median(s.timings.headers or 0.0 for s in calls)
    how = (
        f"all {tokens} tokens arrived in one burst (within {fmt_duration(max(spread, 1e-4))})"
        if burst
        else f"the {tokens} tokens arrived over only the last {fmt_duration(total - first)}"
    )
    held = (
        "the response headers were held back until then too"
        if headers >= HELD_HEADERS_SHARE * first
        else f"the response headers came at {fmt_duration(headers)}"
    )
    return Finding(
        code="buffered-stream",
        title="Buffered stream: the answer arrives all at once",
        evidence=(
            f"a stream was asked for, but {how}, at {fmt_duration(first)} of a "
            f"{fmt_duration(total)} answer; {held} (medians of {len(calls)} calls)"
        ),
        hint=(
            "a layer between the model and the user holds the stream: look for proxy buffering "
            "(nginx proxy_buffering, X-Accel-Buffering: no), compression middleware, or a "
            "handler that collects the answer before returning it"
        ),
    )


def _queued(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    burst = _ok(samples, CallPhase.CONCURRENT)
    warm, p95 = numbers.warm_p50, numbers.concurrent_p95
    if len(burst) < 3 or warm is None or p95 is None or warm <= 0:
        return None
    latencies = sorted(s.latency or 0.0 for s in burst)
    waiting = sum(v >= QUEUE_WAITING_RATIO * warm for v in latencies)
    by_ends = p95 >= QUEUE_RATIO * warm and p95 - warm >= QUEUE_MIN_EXTRA
    if not (by_ends and 2 * waiting >= len(burst)) and not _waited_for_slots(burst, streaming):
        return None
    concurrency = sum(s.phase is CallPhase.CONCURRENT for s in samples)
    workers = _slots(burst, warm)
    shown = ", ".join(fmt_duration(v) for v in latencies[:3])
    return Finding(
        code="serialized",
        title="Queued requests: concurrent calls wait for each other",
        evidence=(
            f"concurrent p95 is {fmt_duration(p95)}, {p95 / warm:.1f} times warm p50 "
            f"({fmt_duration(warm)}; {concurrency} calls at once would take "
            f"{fmt_duration(concurrency * warm)} one after another); the burst's calls took "
            f"{shown} … {fmt_duration(latencies[-1])}, each waiting for the ones before it, "
            f"as if served about {workers} at a time"
        ),
        hint=(
            "the endpoint serves requests one (or a few) at a time: a single worker, a lock, a "
            "queue added to dodge timeouts, or a model server with one slot; add workers or slots"
        ),
    )


def _waited_for_slots(burst: Sequence[Sample], streaming: bool) -> bool:
    """Streamed answers: at least half the burst got its first token only after another call of
    the burst had ended, and QUEUE_MIN_EXTRA after the fastest: they waited for a slot. Read
    from the burst alone, so a warm p50 skewed by a busy CPU cannot hide a queue."""
    if not streaming or any(s.token_events < BURST_MIN_TOKENS for s in burst):
        return False
    firsts = [s.timings.first_event or s.timings.first_token for s in burst]
    known = [f for f in firsts if f is not None]
    if len(known) != len(burst):
        return False
    first_end = min(s.latency or 0.0 for s in burst)
    fastest = min(known)
    waited = sum(f >= first_end and f - fastest >= QUEUE_MIN_EXTRA for f in known)
    return 2 * waited >= len(burst)


def _slots(burst: Sequence[Sample], warm: float) -> int:
    """How many calls of a queued burst the endpoint served at once.

    Streamed: a call whose first visible delta came before any call of the burst had ended
    cannot have waited for a slot another call freed, so those were served at once (batched
    slots slow each other, so end times alone cannot tell 1 slot from 2). Otherwise, n calls
    done by w workers in turn: the last ends after about n/w service times.
    """
    firsts = [s.timings.first_event or s.timings.first_token for s in burst]
    known = [f for f in firsts if f is not None]
    first_end = min(s.latency or 0.0 for s in burst)
    if known and len(known) == len(firsts):
        return max(1, sum(f < first_end for f in known))
    last = max(s.latency or 0.0 for s in burst)
    return max(1, round(len(burst) * warm / last)) if last > 0 else 1


def _cold_start(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    cold = _ok(samples, CallPhase.COLD)
    warm, took = numbers.warm_p50, numbers.cold_start
    if not cold or warm is None or took is None:
        return None
    extra = took - warm
    if took < COLD_RATIO * warm or extra < COLD_MIN_EXTRA:
        return None
    setup = _setup(cold[0])
    server = max(extra - setup, 0.0)
    return Finding(
        code="cold-start",
        title="Cold start: the first call is slow",
        evidence=(
            f"the cold call took {fmt_duration(took)}, {fmt_duration(extra)} more than warm p50 "
            f"({fmt_duration(warm)}): {fmt_duration(setup)} of that in connection setup (DNS, "
            f"TCP, TLS), about {fmt_duration(server)} on the server's side"
        ),
        hint=(
            "the server (or the model it loads) starts on demand: keep an instance warm "
            "(minimum instances, a scheduled ping) or load the model at start-up"
            if server >= setup
            else "connection setup dominates the first call: reuse connections, move the "
            "endpoint closer, or check DNS and TLS (session resumption, OCSP stapling)"
        ),
    )


def _connection_setup(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    warm = _ok(samples, CallPhase.WARM)
    reconnected = [s for s in warm if s.new_connection]
    # The cold call always connects; warm calls (and a burst on fresh connections) need not.
    connected = reconnected + [s for s in _ok(samples, CallPhase.CONCURRENT) if s.new_connection]
    setup = median(_setup(s) for s in connected) if connected else 0.0
    share = median(_setup(s) / (s.latency or 1.0) for s in connected) if connected else 0.0
    dominates = len(connected) >= 3 and setup >= SETUP_MIN and share >= SETUP_SHARE
    keep_alive_lost = len(warm) >= MIN_SAMPLES and len(reconnected) >= RECONNECT_SHARE * len(warm)
    if not dominates and not keep_alive_lost:
        return None
    retried = sum(s.retries for s in reconnected)
    reused = (
        f"; {retried} of them after the server closed a kept-alive connection it had offered"
        if retried
        else ""
    )
    counts = (
        f"{len(reconnected)} of {len(warm)} warm calls opened a new connection{reused}"
        if keep_alive_lost
        else f"{_plural(len(connected), 'call')} opened a new connection"
    )
    evidence = (
        f"{counts}; DNS, TCP and TLS took {fmt_duration(setup)} of each "
        f"({100 * share:.0f} % of its time, medians)"
    )
    if dominates:
        return Finding(
            code="connection-setup",
            title="Connection setup dominates: handshakes take much of each call",
            evidence=evidence,
            hint=(
                "keep connections alive between calls (HTTP keep-alive, one shared client) and "
                "check DNS and TLS times (session resumption); a closer region helps too"
            ),
        )
    return Finding(
        code="no-keep-alive",
        title="Keep-alive not honoured: warm calls open new connections",
        evidence=evidence,
        hint=(
            "the server or a proxy closes the connection after each answer (Connection: close, "
            "HTTP/1.0, a short keep-alive timeout): keep it open to save a handshake per call"
        ),
    )


def _tokens_per_second_hides_the_wait(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    calls = [
        s
        for s in _ok(samples, CallPhase.WARM, CallPhase.CONCURRENT)
        if s.token_events >= BURST_MIN_TOKENS
        and s.timings.first_token is not None
        and s.timings.last_token is not None
        and s.timings.last_token - s.timings.first_token > BURST_WINDOW
    ]
    if len(calls) < MIN_SAMPLES:
        return None
    # n deltas arrive over n - 1 gaps: the rate a vendor quotes for generation.
    rate = median(
        (s.token_events - 1) / ((s.timings.last_token or 0.0) - (s.timings.first_token or 0.0))
        for s in calls
    )
    tokens = median(s.tokens or s.token_events for s in calls)
    streaming_time = tokens / rate
    waits = {"warm": numbers.warm_p95, "concurrent": numbers.concurrent_p95}
    if _queued(samples, numbers, streaming) is not None:
        del waits["concurrent"]  # the queue finding already explains the concurrent wait
    which, worst = max(
        ((name, value) for name, value in waits.items() if value is not None),
        key=lambda item: item[1],
        default=("", None),
    )
    if worst is None or worst < TPS_MIN_WAIT or worst < TPS_RATIO * streaming_time:
        return None
    by_load = {"warm": numbers.ttft_warm_p95, "concurrent": numbers.ttft_concurrent_p95}
    ttft = by_load.get(which) or numbers.ttft_p95
    before = f" and {fmt_duration(ttft)} for the first token" if ttft else ""
    return Finding(
        code="tokens-per-second",
        title="Tokens/s hides the wait",
        evidence=(
            f"the model streams at {rate:.0f} tokens/s, so {tokens:g} tokens take about "
            f"{fmt_duration(streaming_time)}; yet users wait {fmt_duration(worst)} at {which} "
            f"p95{before}: the rest is spent in front of and around the model"
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
    by_phase = ", ".join(
        f"{sum(s.phase is phase for s in limited)} {phase.value}"
        for phase in CallPhase
        if any(s.phase is phase for s in limited)
    )
    seen = sorted({s.retry_after.strip() for s in limited if s.retry_after})
    after = (
        f"; Retry-After: {', '.join(seen[:3])}{' …' if len(seen) > 3 else ''}"
        if seen
        else "; no Retry-After header"
    )
    return Finding(
        code="rate-limited",
        title="Rate limited: the endpoint answered 429",
        evidence=f"{len(limited)} of {len(samples)} calls got HTTP 429 ({by_phase}){after}",
        hint=(
            "the probe's own calls hit a rate limit: raise the limit for this key, probe with a "
            "key of its own, or lower --concurrency; users under the same limit see these errors"
        ),
    )


def _long_tail(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    warm = _ok(samples, CallPhase.WARM)
    p50, p95 = numbers.warm_p50, numbers.warm_p95
    if len(warm) < LONG_TAIL_MIN_SAMPLES or p50 is None or p95 is None or p50 <= 0:
        return None
    if p95 < LONG_TAIL_RATIO * p50 or p95 - p50 < LONG_TAIL_MIN_GAP:
        return None
    slow = max(warm, key=lambda s: s.latency or 0.0)
    return Finding(
        code="long-tail",
        title="Long tail: p95 far above p50",
        evidence=(
            f"warm p95 is {fmt_duration(p95)}, {p95 / p50:.1f} times warm p50 "
            f"({fmt_duration(p50)}); the slowest warm call (#{slow.index}) took "
            f"{fmt_duration(slow.latency)}"
        ),
        hint=(
            "a few calls are much slower than the rest: look for garbage-collection pauses, "
            "cache misses, retries inside the backend, cold replicas or a noisy neighbour"
        ),
    )


# Stalled stream: a gap between visible deltas this long, and this many times the run's median
# per-call mean gap (a user watching the answer sees it stop).
STALL_MIN = 0.5
STALL_RATIO = 10.0


def _stalled_stream(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    calls = [s for s in samples if s.ok and s.token_gaps is not None]
    if not streaming or not calls:
        return None
    typical = median(s.token_gaps.mean for s in calls if s.token_gaps is not None)
    stalled = [
        s
        for s in calls
        if s.token_gaps is not None
        and s.token_gaps.max >= STALL_MIN
        and s.token_gaps.max >= STALL_RATIO * typical
    ]
    if not stalled:
        return None
    worst = max(stalled, key=lambda s: s.token_gaps.max if s.token_gaps else 0.0)
    gaps = worst.token_gaps
    assert gaps is not None  # filtered above
    return Finding(
        code="stalled-stream",
        title="Stalled stream: the answer stops mid-way",
        evidence=(
            f"{_plural(len(stalled), 'call')} of {len(calls)} paused for {fmt_duration(STALL_MIN)}"
            f" or more between two deltas; the longest, {worst.phase.value} call "
            f"#{worst.index}, waited {fmt_duration(gaps.max)} from "
            f"{fmt_duration(max(gaps.max_at - gaps.max, 0.0))} to {fmt_duration(gaps.max_at)} "
            f"of its answer, where deltas usually came {fmt_duration(typical)} apart"
        ),
        hint=(
            "something paused the answer after it began: a model server preempting or swapping "
            "this request out (too many at once for its memory), a tool call or retrieval run "
            "mid-answer, or a proxy flushing its buffer in pieces"
        ),
    )


# Cache answering: the same prompt on every call, and warm calls answer this many times
# sooner than the cold call (the one fresh prompt) did once connected, and this much sooner.
CACHE_RATIO = 3.0
CACHE_MIN_EXTRA = 0.03


def _cache_answering(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    warm = _ok(samples, CallPhase.WARM)
    cold = _ok(samples, CallPhase.COLD)
    if len(warm) < MIN_SAMPLES or not cold or all(s.prompt_varied for s in warm):
        return None
    if _cold_start(samples, numbers, streaming) is not None:
        return None  # a slow first call has a likelier cause
    first = cold[0]
    what = "first token"
    fresh = first.timings.first_token
    seen = [s.timings.first_token for s in warm if s.timings.first_token is not None]
    if fresh is None or len(seen) < MIN_SAMPLES:
        what, fresh, seen = "answer", first.latency, [s.latency or 0.0 for s in warm]
    if fresh is None:
        return None
    fresh -= _setup(first)
    typical = median(seen)
    if fresh < CACHE_RATIO * typical or fresh - typical < CACHE_MIN_EXTRA:
        return None
    return Finding(
        code="cache-answering",
        title="A cache may be answering: the same prompt on every call",
        evidence=(
            f"every warm call sent the same prompt, and its {what} came in "
            f"{fmt_duration(typical)} (median of {len(seen)}), {fresh / typical:.1f} times "
            f"sooner than the cold call's, the one fresh prompt ({fmt_duration(fresh)} after "
            f"its connection was open)"
        ),
        hint=(
            "a prompt cache (llama.cpp, vLLM prefix caching) or a response or semantic cache in "
            "front of the model answers repeated prompts; real users send new ones: probe with "
            "--vary-prompt true to measure the model"
        ),
    )
