"""Drawing the chain of a call: a cell for the report tables, the chart shared by every target,
and plain-text lines for the terminal. The links and stamps come from
latency_gate.assess.numbers.timeline; the numbers from the result's `phases` and `chain`, never
recomputed from samples here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from latency_gate.assess.numbers.timeline import CHAIN_LABELS, LINKS
from latency_gate.formatting import fmt_duration
from latency_gate.models import CallPhase, PhaseStats, RunResult
from latency_gate.report.rows import streamed

__all__ = [
    "CHART_SEGMENTS",
    "CHART_WIDTH",
    "chain_cell",
    "chart_lines",
    "chart_scale",
    "terminal_chain",
]

# The chart's segments: glyph, legend, and the stamp that ends the segment.
CHART_SEGMENTS = tuple((link.glyph, link.legend, link.ends_at) for link in LINKS)
CHART_WIDTH = 48


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


def terminal_chain(
    results: Sequence[RunResult], names: Sequence[str], *, indent: str = ""
) -> list[str]:
    """Where the time went, as plain-text lines for the terminal: a blank line, a title, a table;
    every line but the blank one starts with `indent`.

    One target: a row per link, a column per call phase. Several: a column per target (`names`,
    already cleaned for the terminal) for the warm calls, the steady state that compares.
    """
    if len(results) == 1:
        stats = results[0].chain
        columns = [p.value for p in CallPhase if stats.get(p.value)]
        if not columns:
            return []
        table = [["link", *columns]]
        for link, label in CHAIN_LABELS.items():
            cells = [stats[column].get(link) for column in columns]
            if any(cells) and (link != "first_token" or streamed(results[0])):
                table.append([label, *(chain_cell(cell) for cell in cells)])
        title = f"{indent}where the time went (p50 / p95):"
        return ["", title, *_text_table(table, indent + "  ")]
    warm = [result.chain.get(CallPhase.WARM.value, {}) for result in results]
    if not any(warm):
        return []
    table = [["link", *names]]
    for link, label in CHAIN_LABELS.items():
        cells = [stats.get(link) for stats in warm]
        if any(cells) and (link != "first_token" or any(streamed(r) for r in results)):
            table.append([label, *(chain_cell(cell) for cell in cells)])
    title = f"{indent}where the warm calls' time went (p50 / p95):"
    return ["", title, *_text_table(table, indent + "  ")]
