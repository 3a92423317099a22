"""Findings about getting to the answer: a cold start (set-up against the server's own time), a
cold call that failed while later calls were answered, connection set-up that dominates or
keep-alive not honoured, a cache answering repeated prompts."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from latency_gate.assess.findings.common import MIN_SAMPLES, Slower, ok_calls, setup_seconds
from latency_gate.formatting import fmt_duration, plural
from latency_gate.models import CallPhase, ErrorKind, Finding, Numbers, Sample

# Cold start: this many times warm p50 and this much more in seconds.
COLD = Slower(ratio=3.0, extra=0.25)
# Connection setup: DNS+TCP+TLS at least this share of a call's time, and this long in seconds.
SETUP_SHARE = 0.3
SETUP_MIN = 0.02
# Keep-alive: this share of warm calls opening a new connection.
RECONNECT_SHARE = 0.5
# Cache answering: the same prompt on every call, and warm calls answer this many times
# sooner than the cold call (the one fresh prompt) did once connected, and this much sooner.
CACHE = Slower(ratio=3.0, extra=0.03)


def cold_start(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    cold = ok_calls(samples, CallPhase.COLD)
    warm, took = numbers.warm_p50, numbers.cold_start
    if not cold or warm is None or took is None:
        return None
    extra = took - warm
    if not COLD.than(took, warm):
        return None
    setup = setup_seconds(cold[0])
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


_TIMED_OUT = frozenset(
    {
        ErrorKind.CONNECT_TIMEOUT,
        ErrorKind.READ_TIMEOUT,
        ErrorKind.WRITE_TIMEOUT,
        ErrorKind.TOTAL_TIMEOUT,
    }
)


def cold_call_failed(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    """The cold call failed while later calls were answered: cold start is not measured (a
    "—" in the reports), and a cold start longer than the timeout looks just like this."""
    cold = [s for s in samples if s.phase is CallPhase.COLD]
    later = [s for s in samples if s.phase is not CallPhase.COLD]
    answered = sum(s.ok for s in later)
    if not cold or cold[0].ok or not answered:
        return None  # measured; or every call failed, and the failed calls say why
    call = cold[0]
    kind = call.error.value if call.error is not None else "failed"
    detail = f": {call.error_detail}" if call.error_detail else ""
    warm = numbers.warm_p50
    evidence = (
        f"the cold call (the first, on a new connection) failed ({kind}{detail}), while "
        f"{answered} of {len(later)} later calls were answered"
        + (f" (warm p50 {fmt_duration(warm)})" if warm is not None else "")
    )
    return Finding(
        code="cold-call-failed",
        title="Cold start not measured: the cold call failed",
        evidence=evidence,
        hint=(
            "a cold start longer than the timeout fails like this: raise --timeout to measure "
            "it, and gate it with --max-cold-start"
            if call.error in _TIMED_OUT
            else "the first call after a quiet spell fails where later ones do not: a cold path "
            "(a model or a worker starting) that warm calls never take; --wait-ready waits "
            "for a server that is still starting"
        ),
    )


def connection_setup(
    samples: Sequence[Sample], numbers: Numbers, streaming: bool
) -> Finding | None:
    warm = ok_calls(samples, CallPhase.WARM)
    reconnected = [s for s in warm if s.new_connection]
    # The cold call always connects; warm calls (and a burst on fresh connections) need not.
    connected = reconnected + [
        s for s in ok_calls(samples, CallPhase.CONCURRENT) if s.new_connection
    ]
    setup = median(setup_seconds(s) for s in connected) if connected else 0.0
    share = median(setup_seconds(s) / (s.latency or 1.0) for s in connected) if connected else 0.0
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
        else f"{plural(len(connected), 'call')} opened a new connection"
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


def cache_answering(samples: Sequence[Sample], numbers: Numbers, streaming: bool) -> Finding | None:
    warm = ok_calls(samples, CallPhase.WARM)
    cold = ok_calls(samples, CallPhase.COLD)
    if len(warm) < MIN_SAMPLES or not cold or all(s.prompt_varied for s in warm):
        return None
    if cold_start(samples, numbers, streaming) is not None:
        return None  # a slow first call has a likelier cause
    first = cold[0]
    what = "first token"
    fresh = first.timings.first_token
    seen = [s.timings.first_token for s in warm if s.timings.first_token is not None]
    if fresh is None or len(seen) < MIN_SAMPLES:
        what, fresh, seen = "answer", first.latency, [s.latency or 0.0 for s in warm]
    if fresh is None:
        return None
    fresh -= setup_seconds(first)
    typical = median(seen)
    if not CACHE.than(fresh, typical):
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
