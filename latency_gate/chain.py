"""The chain of one call, link by link, and the chart of where its time went.

A call's time passes through connect, TLS, waiting for headers, the first body byte, the first
token and the rest of the body. These pure functions measure each link from a Sample's timings,
summarise the links per call phase, and draw them: as a cell for the report tables, as a bar in
the chart shared by every target, and as plain-text lines for the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from latency_gate.formatting import fmt_duration
from latency_gate.models import CallPhase, PhaseStats, RunResult, Sample
from latency_gate.stats import percentile

# The chain of one call, link by link, in the order its time passes. Durations of each call,
# so a link's median and p95 say what that link cost; the links of one call add up to its latency.
CHAIN_LABELS = {
    "connect": "connect (DNS + TCP)",
    "tls": "TLS",
    "wait": "waiting for headers",
    "headers_to_body": "headers → first body byte",
    "first_token": "first body byte → first token",
    "rest": "rest of the body → last byte",
    "total": "whole call",
}

# The chart's segments: glyph, legend, and the boundary that ends the segment.
CHART_SEGMENTS = (
    ("░", "connect", "connect"),
    ("▒", "TLS", "tls"),
    ("█", "waiting for headers", "headers"),
    ("▓", "headers → first byte", "first_byte"),
    ("▄", "first byte → first token", "first_token"),
    ("─", "rest of the body", "last_byte"),
)
CHART_WIDTH = 48


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


def chain_stats(samples: Sequence[Sample]) -> dict[str, dict[str, PhaseStats]]:
    """Median and p95 of each link of the chain, per call phase, over the successful calls.

    The TLS link is left out when no call made a TLS handshake (plain HTTP).
    """
    tls_seen = any(s.timings.tls is not None for s in samples)
    result: dict[str, dict[str, PhaseStats]] = {}
    for phase in CallPhase:
        chains = [call_chain(s) for s in samples if s.phase is phase and s.ok]
        if not chains:
            continue
        result[phase.value] = {}
        for link in CHAIN_LABELS:
            values = [chain[link] for chain in chains if link in chain]
            if values and (link != "tls" or tls_seen):
                result[phase.value][link] = PhaseStats(
                    n=len(values), p50=percentile(values, 50), p95=percentile(values, 95)
                )
    return result


def chain_cell(cell: PhaseStats | None) -> str:
    """A link's "p50 / p95", or one value when there is one call or both round alike."""
    if cell is None or not cell.n:
        return "—"
    p50, p95 = fmt_duration(cell.p50), fmt_duration(cell.p95)
    return p50 if cell.n == 1 or p50 == p95 else f"{p50} / {p95}"


def _chart_points(stats: Mapping[str, PhaseStats]) -> list[float]:
    """Where each chart segment ends, from the p50 of each boundary, never going back."""

    def p50(boundary: str) -> float | None:
        cell = stats.get(boundary)
        return cell.p50 if cell is not None and cell.n else None

    # dns, connect and tls are durations; the other boundaries are offsets from the call's t0.
    connect = (p50("dns") or 0.0) + (p50("connect") or 0.0)
    ends = {
        "connect": connect,
        "tls": connect + (p50("tls") or 0.0),
        "headers": p50("headers"),
        "first_byte": p50("first_byte"),
        "first_token": p50("first_token"),
        "last_byte": p50("last_byte"),
    }
    points: list[float] = []
    previous = 0.0
    for _glyph, _legend, boundary in CHART_SEGMENTS:
        end = ends[boundary]
        previous = max(previous, end) if end is not None else previous
        points.append(previous)
    return points


def chart_scale(results: Sequence[RunResult]) -> float:
    """Seconds per character, shared by every target's chart so bars compare."""
    longest = max(
        (
            _chart_points(stats)[-1]
            for result in results
            for stats in result.phases.values()
            if stats
        ),
        default=0.0,
    )
    return longest / CHART_WIDTH if longest > 0 else 0.0


def chart_lines(result: RunResult, scale: float) -> tuple[str, ...]:
    """One bar per call phase, at `scale` seconds per character (see chart_scale)."""
    if scale <= 0:
        return ()
    lines = []
    for phase in CallPhase:
        stats = result.phases.get(phase.value)
        if not stats:
            continue
        points = _chart_points(stats)
        bar = ""
        drawn = 0
        for (glyph, _legend, _boundary), end in zip(CHART_SEGMENTS, points, strict=True):
            # Round the running end, not each segment, so the bar's length matches its total.
            upto = round(end / scale)
            bar += glyph * (upto - drawn)
            drawn = max(drawn, upto)
        lines.append(f"{phase.value:<11} {bar:<{CHART_WIDTH}} {fmt_duration(points[-1])}")
    return tuple(lines)


def _text_table(table: Sequence[Sequence[str]], indent: str) -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]


def terminal_chain(results: Sequence[RunResult], names: Sequence[str]) -> list[str]:
    """Where the time went, as plain-text lines for the terminal.

    One target: a row per link, a column per call phase. Several: a column per target (`names`,
    already cleaned for the terminal) for the warm calls, the steady state that compares.
    """
    if len(results) == 1:
        stats = chain_stats(results[0].samples)
        columns = [p.value for p in CallPhase if stats.get(p.value)]
        if not columns:
            return []
        table = [["link", *columns]]
        for link, label in CHAIN_LABELS.items():
            cells = [stats[column].get(link) for column in columns]
            if any(cells):
                table.append([label, *(chain_cell(cell) for cell in cells)])
        return ["", "where the time went (p50 / p95):", *_text_table(table, "  ")]
    warm = [chain_stats(result.samples).get(CallPhase.WARM.value, {}) for result in results]
    if not any(warm):
        return []
    table = [["link", *names]]
    for link, label in CHAIN_LABELS.items():
        cells = [stats.get(link) for stats in warm]
        if any(cells):
            table.append([label, *(chain_cell(cell) for cell in cells)])
    return ["", "where the warm calls' time went (p50 / p95):", *_text_table(table, "  ")]
