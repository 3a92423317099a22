"""Calls at a rate in the terminal: the sentence, a line per level, the cost, the client's send
lag and the two capacities side by side (report/goodput.py prepares them)."""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.report.text_lines import aligned
from latency_gate.report.text_lines import wrap as _wrap
from latency_gate.report.view import TargetView

__all__ = ["rate_lines"]


def rate_lines(views: Sequence[TargetView], names: Sequence[str], *, verbose: bool) -> list[str]:
    """Each target's calls at a rate: its sentence; for one target (or with `verbose`) a line
    per level, the cost, the send lag, what the figure rests on (when it failed, or with
    `verbose`) and the two capacities side by side."""
    lines: list[str] = []
    several = len(views) > 1
    for view, name in zip(views, names, strict=True):
        gv = view.goodput
        if gv is None:
            continue
        word = "goodput" if gv.goodput.search else "at a rate"
        lines += ["", *_wrap(f"{word}{' of ' + name if several else ''}: {gv.headline}")]
        if several and not verbose:
            continue
        table = [("rate", "calls", "judged", "p95 from due", "send lag p95", "result")] + [
            (
                row.rate,
                f"{row.calls:,}",
                f"{row.judged:,}",
                row.p95,
                row.lag,
                f"{row.word} {row.how}",
            )
            for row in gv.rows
        ]
        lines += aligned(table, right={1, 2})
        lines += _wrap(gv.cost, "  ")
        if gv.lag:
            lines += _wrap(gv.lag, "  ")
        failed = any(
            row.number in ("goodput", "rate_p95") and row.passed is False for row in view.rows
        )
        if verbose or failed:
            for text in gv.rests_on:
                lines += _wrap(text, "  ")
        if gv.side_by_side:
            lines += _wrap(gv.side_by_side, "  ")
    return lines
