"""Findings in the stream itself: an answer buffered and sent at once, a stream that stalls
mid-answer."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from latency_gate.assess.findings.common import MIN_SAMPLES, ok_calls
from latency_gate.formatting import fmt_duration, plural
from latency_gate.models import CallPhase, Finding, Numbers, Sample

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
# Stalled stream: a gap between visible deltas this long, and this many times the run's median
# per-call mean gap (a user watching the answer sees it stop).
STALL_MIN = 0.5
STALL_RATIO = 10.0


def buffered_stream(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    if not streaming:
        return None
    calls = [
        s
        for s in ok_calls(samples, CallPhase.WARM, CallPhase.CONCURRENT)
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


def stalled_stream(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
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
            f"{plural(len(stalled), 'call')} of {len(calls)} paused for {fmt_duration(STALL_MIN)}"
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


def usage_disagreed(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    """Calls whose usage count the measure did not trust (fewer tokens than the deltas that
    arrived, or more than the bytes): their tokens are the deltas counted."""
    calls = [s for s in samples if s.ok and s.usage_ignored is not None]
    if not calls:
        return None
    first = calls[0]
    claimed = first.usage_ignored or 0
    answered = len([s for s in samples if s.ok])
    return Finding(
        code="usage-disagreed",
        title="Usage disagreed with the stream: the deltas were counted",
        evidence=(
            f"{len(calls)} of {plural(answered, 'answered call')} said their answer had "
            f"{claimed:,} token{'' if claimed == 1 else 's'} (usage) where "
            f"{plural(first.token_events, 'delta')} arrived in {first.bytes_received:,} bytes "
            f"({first.phase.value} call #{first.index}); the time per token and the tokens "
            "count the deltas instead"
        ),
        hint=(
            "the server's usage counts something other than this answer (a cached or summed "
            "count, a proxy's rewrite, a placeholder): fix it there, or read the deltas"
        ),
    )
