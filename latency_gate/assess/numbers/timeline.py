"""One call's timeline, defined once: its stamps, the links between them, and their summaries.

A call's bytes pass stamps in order (`STAMPS`: dns, connect and tls are durations, the rest are
offsets from the call's t0). The links of the chain (`LINKS`: connect, TLS, waiting for headers,
headers to the first body byte, first token, the rest of the body) are the time between them.
Everything that shows a call's time derives from these two tuples: the JSON result's `phases`
(per stamp) and `chain` (per link), the report's chain table and chart (latency_gate.report.chain)
and `quick`'s curl -w view (`curl_times`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.assess.numbers.stats import percentile
from latency_gate.models import CallPhase, CallTimings, PhaseStats, Sample

__all__ = [
    "CHAIN_LABELS",
    "CURL_TIMES",
    "LINKS",
    "STAMPS",
    "Link",
    "call_chain",
    "chain_stats",
    "curl_times",
    "stamp_stats",
]

# The stamps of a call, in the order the bytes arrive; durations first (fields of CallTimings).
STAMPS = (
    "dns",
    "connect",
    "tls",
    "request_sent",
    "headers",
    "first_byte",
    "first_token",
    "last_byte",
)


@dataclass(frozen=True)
class Link:
    """One link of the chain: its key in the JSON, its label, and how the chart draws it.

    `ends_at` is the stamp at which the link ends on the call's timeline (for the chart).
    """

    key: str
    label: str
    glyph: str
    legend: str
    ends_at: str


LINKS = (
    Link("connect", "connect (DNS + TCP)", "░", "connect", "connect"),
    Link("tls", "TLS", "▒", "TLS", "tls"),
    Link("wait", "waiting for headers", "█", "waiting for headers", "headers"),
    Link("headers_to_body", "headers → first body byte", "▓", "headers → first byte", "first_byte"),
    Link(
        "first_token",
        "first body byte → first token",
        "▄",
        "first byte → first token",
        "first_token",
    ),
    Link("rest", "rest of the body → last byte", "─", "rest of the body", "last_byte"),
)
# The links, then the whole call: the rows of the chain table. Durations of each call, so a
# link's median and p95 say what that link cost; the links of one call add up to its latency.
CHAIN_LABELS = {**{link.key: link.label for link in LINKS}, "total": "whole call"}

# What curl -w prints for a call: its write-out variables, cumulative from the start.
CURL_TIMES = ("namelookup", "connect", "appconnect", "starttransfer", "total")


def call_chain(sample: Sample) -> dict[str, float]:
    """How long each link of one call took, in seconds; a link the call did not have is absent.

    A call on a kept-alive connection spent nothing on connect and TLS (0.0): what users felt.
    Waiting for headers counts from the request's last byte; the rest of the body from the first
    token in a stream, from the first body byte otherwise.
    """
    t = sample.timings
    links = {"connect": (t.dns or 0.0) + (t.connect or 0.0), "tls": t.tls or 0.0}
    sent = t.request_sent if t.request_sent is not None else links["connect"] + links["tls"]
    if t.headers is not None:
        links["wait"] = max(t.headers - sent, 0.0)
        if t.first_byte is not None:
            links["headers_to_body"] = max(t.first_byte - t.headers, 0.0)
    if t.first_byte is not None and t.first_token is not None:
        links["first_token"] = max(t.first_token - t.first_byte, 0.0)
    body_from = t.first_token if t.first_token is not None else t.first_byte
    if t.last_byte is not None and body_from is not None:
        links["rest"] = max(t.last_byte - body_from, 0.0)
    if sample.latency is not None:
        links["total"] = sample.latency
    return links


def curl_times(timings: CallTimings, ok: bool) -> dict[str, float | None]:
    """curl -w's cumulative times in seconds (appconnect 0 without TLS, as curl says it);
    None when the call failed before reaching that point."""
    namelookup = timings.dns or 0.0
    connect = namelookup + (timings.connect or 0.0)
    return {
        "namelookup": namelookup,
        "connect": connect,
        "appconnect": connect + timings.tls if timings.tls is not None else 0.0,
        "starttransfer": timings.headers,
        "total": timings.last_byte if ok else None,
    }


def _summary(values: Sequence[float]) -> PhaseStats:
    return PhaseStats(n=len(values), p50=percentile(values, 50), p95=percentile(values, 95))


def stamp_stats(samples: Sequence[Sample]) -> dict[str, dict[str, PhaseStats]]:
    """Median and p95 of each stamp, per call kind, over successful calls (the JSON `phases`)."""
    result: dict[str, dict[str, PhaseStats]] = {}
    for kind in CallPhase:
        timings = [s.timings for s in samples if s.phase is kind and s.ok]
        if not timings:
            continue
        result[kind.value] = {}
        for stamp in STAMPS:
            values = [v for t in timings if (v := getattr(t, stamp)) is not None]
            if values:
                result[kind.value][stamp] = _summary(values)
    return result


def chain_stats(samples: Sequence[Sample]) -> dict[str, dict[str, PhaseStats]]:
    """Median and p95 of each link of the chain, per call kind, over the successful calls
    (the JSON `chain`). The TLS link is left out when no call made a TLS handshake (plain HTTP).
    """
    tls_seen = any(s.timings.tls is not None for s in samples)
    result: dict[str, dict[str, PhaseStats]] = {}
    for kind in CallPhase:
        chains = [call_chain(s) for s in samples if s.phase is kind and s.ok]
        if not chains:
            continue
        result[kind.value] = {}
        for link in CHAIN_LABELS:
            values = [chain[link] for chain in chains if link in chain]
            if values and (link != "tls" or tls_seen):
                result[kind.value][link] = _summary(values)
    return result
