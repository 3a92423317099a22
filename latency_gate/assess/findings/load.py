"""Findings under load: concurrent calls queued behind each other (and how many were served at
once), rate limiting, a long tail among the warm calls, a tokens/s figure that hides the wait
for the first token."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from latency_gate.assess.findings.common import MIN_SAMPLES, Slower, ok_calls
from latency_gate.assess.findings.streams import (
    BUFFERED_FIRST_TOKEN_SHARE,
    BURST_MIN_TOKENS,
    BURST_WINDOW,
)
from latency_gate.assess.load.open_level import CLIENT_BUDGET_SHARE
from latency_gate.assess.maths.intervals import linear_percentile as percentile
from latency_gate.formatting import fmt_duration
from latency_gate.models import CallPhase, ErrorKind, Finding, Numbers, Sample

# Queued: concurrent p95 at least this many times warm p50, this much slower in seconds, and at
# least half of the burst this many times warm p50 (a queue, not one straggler).
QUEUE = Slower(ratio=3.0, extra=0.1)
QUEUE_WAITING_RATIO = 1.5
# Long tail: warm p95 this many times p50 and this much more in seconds, over at least 10 calls.
LONG_TAIL = Slower(ratio=3.0, extra=0.1)
LONG_TAIL_MIN_SAMPLES = 10
# Tokens/s hides the wait: users wait this long at p95, and this many times the streaming time.
TPS_MIN_WAIT = 1.0
TPS_RATIO = 2.0


def queued(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    burst = ok_calls(samples, CallPhase.CONCURRENT)
    warm, p95 = numbers.warm_p50, numbers.concurrent_p95
    if len(burst) < 3 or warm is None or p95 is None or warm <= 0:
        return None
    latencies = sorted(s.latency or 0.0 for s in burst)
    waiting = sum(v >= QUEUE_WAITING_RATIO * warm for v in latencies)
    by_ends = QUEUE.than(p95, warm)
    if not (by_ends and 2 * waiting >= len(burst)) and not _waited_for_slots(burst, streaming):
        return None
    concurrency = sum(s.phase is CallPhase.CONCURRENT for s in samples)
    behind = _client_behind(burst, p95 - warm)
    if behind is not None:
        return behind
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


def _client_behind(burst: Sequence[Sample], extra: float) -> Finding | None:
    """The client fell behind its own burst: its calls went out one after another (send lag, to
    each call's t0, as the rate path measures it, here from the burst's first), by a material
    share of the
    time the queue would explain (CLIENT_BUDGET_SHARE, a tenth, of what the burst's p95 took
    over a warm call, or of QUEUE.extra). A client that sends late also reads late, and what
    looked like a queue may be its own. None when it kept up, or its lag was not measured (a
    result file from before it was)."""
    sent = [s.send_lag for s in burst if s.send_lag is not None]
    if len(sent) != len(burst):
        return None
    # From the burst's first send: a burst the client sent late but all together still reached
    # the endpoint at once; only calls it sent one after another can look like a queue.
    lags = [lag - min(sent) for lag in sent]
    lag = percentile(lags, 95) or 0.0
    if lag <= CLIENT_BUDGET_SHARE * max(extra, QUEUE.extra):
        return None
    return Finding(
        code="client-behind",
        title="The client fell behind its burst: no queue can be read from it",
        evidence=(
            f"the burst's calls went out up to {fmt_duration(max(lags))} after its first "
            f"(send lag p95 {fmt_duration(lag)}), against {fmt_duration(max(extra, 0.0))} that "
            "its p95 took over a warm call: the client (a busy CPU, a slow runner) was late, "
            "and what looks like the endpoint queueing the calls may be its own"
        ),
        hint=(
            "probe from a machine with CPU to spare (or fewer calls at once) before reading the "
            "concurrent numbers as the endpoint's"
        ),
    )


def served_at_once(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> int | None:
    """How many calls at once a queued burst was served ("served about N at a time"), when the
    queue finding applies to these calls; None when it does not. The capacity's report holds
    its figure against this one (report/load.py)."""
    found = queued(samples, numbers, streaming)
    if found is None or found.code != "serialized" or numbers.warm_p50 is None:
        return None  # no queue, or the client fell behind: no figure to hold up
    return _slots(ok_calls(samples, CallPhase.CONCURRENT), numbers.warm_p50)


@dataclass(frozen=True)
class Rounds:
    """What calls at once come to when `slots` are served at a time, each in `service` seconds:
    call k of c ends after ceil(k / slots) services. `held` is the most calls at once (up to
    `most`) whose p95 of those ends (numpy-linear, as the capacity's levels are judged) is
    within `limit`; `next_p95` the p95 of one call more (None when `held` is `most`)."""

    slots: int
    service: float
    limit: float
    held: int
    next_p95: float | None


def rounds_within(slots: int, service: float, limit: float, most: int) -> Rounds:
    """The most calls at once that end within `limit` at p95 in rounds of `slots` (see Rounds).

    The p95 never falls as calls are added (each ends no sooner than the ones before), so the
    answer is found by bisection."""

    def p95(calls: int) -> float:
        ends = [math.ceil(k / slots) * service for k in range(1, calls + 1)]
        return percentile(ends, 95) or 0.0

    low, high = 0, most  # p95(low) within the limit (0 calls: trivially); find the last such
    while low < high:
        middle = (low + high + 1) // 2
        if p95(middle) <= limit:
            low = middle
        else:
            high = middle - 1
    return Rounds(slots, service, limit, low, None if low >= most else p95(low + 1))


def _waited_for_slots(burst: Sequence[Sample], streaming: bool) -> bool:
    """Streamed answers: at least half the burst got its first token only after another call of
    the burst had ended, and QUEUE.extra after the fastest: they waited for a slot. Read
    from the burst alone, so a warm p50 skewed by a busy CPU cannot hide a queue."""
    if not streaming or any(s.token_events < BURST_MIN_TOKENS for s in burst):
        return False
    firsts = [s.timings.first_event or s.timings.first_token for s in burst]
    known = [f for f in firsts if f is not None]
    if len(known) != len(burst):
        return False
    first_end = min(s.latency or 0.0 for s in burst)
    fastest = min(known)
    waited = sum(f >= first_end and f - fastest >= QUEUE.extra for f in known)
    return 2 * waited >= len(burst)


def _slots(burst: Sequence[Sample], warm: float) -> int:
    """How many calls of a queued burst the endpoint served at once.

    Streamed answers (a first visible delta well before the call's end): a call whose first
    delta came before any call of the burst had ended cannot have waited for a slot another
    call freed, so those were served at once (batched slots slow each other, so end times
    alone cannot tell 1 slot from 2). Answers that arrive whole (a JSON document, a buffered
    stream: their first byte is their last), from the steps of the end times: a call that
    waited for a freed slot ends a whole service time after the call that freed it, so the
    calls of the burst end in steps, one per round of the slots; those that ended before the
    first step (a gap of half the burst's first call, or of half a warm call when that is
    shorter) were served at once. No such gap: all of them were.
    """
    ends = sorted(s.latency or 0.0 for s in burst)
    firsts = [s.timings.first_event or s.timings.first_token for s in burst]
    known = [f for f in firsts if f is not None]
    streamed = len(known) == len(burst) and any(
        f < BUFFERED_FIRST_TOKEN_SHARE * (s.latency or 0.0)
        for f, s in zip(known, burst, strict=True)
    )
    if streamed:
        return max(1, sum(f < ends[0] for f in known))
    step = min(ends[0], warm) / 2
    return next(
        (i + 1 for i, (end, later) in enumerate(itertools.pairwise(ends)) if later - end >= step),
        len(ends),
    )


def rate_limited(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
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


def long_tail(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    warm = ok_calls(samples, CallPhase.WARM)
    p50, p95 = numbers.warm_p50, numbers.warm_p95
    if len(warm) < LONG_TAIL_MIN_SAMPLES or p50 is None or p95 is None or p50 <= 0:
        return None
    if not LONG_TAIL.than(p95, p50):
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


def tokens_per_second_hides_the_wait(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    calls = [
        s
        for s in ok_calls(samples, CallPhase.WARM, CallPhase.CONCURRENT)
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
    if queued(samples, numbers, streaming) is not None:
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
