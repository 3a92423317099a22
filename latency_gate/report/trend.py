"""The trend, as a picture: a gated number over the history's runs and this one, as a Mermaid
`xychart-beta` that GitHub draws in a job summary and a PR comment.

One chart per number: the runs' values as a line (x: the runs, by their UTC start; y: seconds)
and the budget as a flat second line, when it is within reach of the values (a budget far above
them would press the values into a flat line at the bottom; the title then gives it in words).
Every character of a chart is ours: labels are dates and "this run", the title a number's label
and formatted values; no target name or endpoint text goes in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from latency_gate.formatting import fmt_duration
from latency_gate.models import RunResult
from latency_gate.report.rows import NUMBER_LABELS

__all__ = ["TREND_NUMBERS", "TrendChart", "axis_top", "chart_number", "chart_text", "trend_charts"]

# Charted, in this order, when gated (warm p50 always: the typical call beside the tail).
TREND_NUMBERS = ("warm_p95", "concurrent_p95", "ttft_p95", "warm_p50")
# The budget is drawn when it is at most this many times the highest value.
BUDGET_REACH = 3.0
HEAD_LABEL = "this run"
CHART_HEIGHT = 320
COMPACT_HEIGHT = 280
RUNS_COLOUR = "#0969da"
BUDGET_COLOUR = "#cf222e"


@dataclass(frozen=True)
class TrendChart:
    """One number's trend: the points (label, seconds), the budget, and the Mermaid source."""

    number: str
    title: str
    points: tuple[tuple[str, float], ...]
    budget: float | None
    budget_drawn: bool

    @property
    def mermaid(self) -> tuple[str, ...]:
        """The lines of the ```mermaid block, for the job summary."""
        return self.source(CHART_HEIGHT)

    @property
    def compact(self) -> tuple[str, ...]:
        """The same chart, lower, for the PR comment."""
        return self.source(COMPACT_HEIGHT)

    def source(self, height: int) -> tuple[str, ...]:
        """The lines of the ```mermaid block, the chart `height` pixels high."""
        labels = ", ".join(chart_text(label) for label, _ in self.points)
        values = [value for _, value in self.points]
        top = max(values)
        if self.budget_drawn and self.budget is not None:
            top = max(top, self.budget)
        lines = [
            *chart_header(self.title, height),
            f"    x-axis [{labels}]",
            f'    y-axis "seconds" 0 --> {chart_number(axis_top(top * 1.05))}',
            f"    line [{', '.join(chart_number(v) for v in values)}]",
        ]
        if self.budget_drawn and self.budget is not None:
            budget = chart_number(self.budget)
            lines.append(f"    line [{', '.join(budget for _ in values)}]")
        return tuple(lines)


def chart_header(title: str, height: int) -> tuple[str, ...]:
    """The first lines of an xychart-beta block: its config and its title.

    Mermaid's default palette starts with a pale lavender that is hard to see on white: the
    data in GitHub's blue, the budget in its red (frontmatter config, Mermaid 10.5+, the
    release that brought xychart-beta), and a height that keeps several charts on a screen."""
    return (
        "---",
        "config:",
        "  xyChart:",
        f"    height: {height}",
        "  themeVariables:",
        "    xyChart:",
        f'      plotColorPalette: "{RUNS_COLOUR}, {BUDGET_COLOUR}"',
        "---",
        "xychart-beta",
        f"    title {chart_text(title)}",
    )


def chart_text(text: str) -> str:
    """A quoted string for a Mermaid chart (a title, a label)."""
    # Ours alone, but a quote or a bracket would still end the string or the list early.
    cleaned = "".join(c for c in text if c.isprintable() and c not in '"[]{}%;#`')
    return f'"{cleaned}"'


def chart_number(value: float) -> str:
    """A number as a Mermaid chart reads it."""
    return f"{value:.6g}"


def axis_top(value: float) -> float:
    """A round top for the y axis at or above `value`: 1, 1.5, 2, 4, 5 or 8 times a power of
    ten. Mermaid draws about ten ticks by d3's rule, and for these tops at most 11 (a top of 1.2,
    2.5, 3 or 6 gets 13 to 16, whose labels run into each other); finer than 1-2-5, as a coarse
    top presses the lines into the bottom half."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 1.5, 2.0, 4.0, 5.0, 8.0):
        if value <= power * step * (1 + 1e-9):
            return round(power * step, 12)
    return power * 10


def _labels(started: Sequence[float]) -> list[str]:
    """Short UTC dates ("Nov 14"), with the time where two runs share a day."""
    days = [datetime.fromtimestamp(t, UTC).strftime("%b %d") for t in started]
    if len(set(days)) == len(days):
        return days
    return [datetime.fromtimestamp(t, UTC).strftime("%b %d %H:%M") for t in started]


def trend_charts(result: RunResult) -> tuple[TrendChart, ...]:
    """The charts of a run held against a history: each gated percentile (and warm p50) with a
    value in this run and in at least one earlier run. None without a history."""
    check = result.baseline
    history = None if check is None else check.history
    if history is None or not history.runs:
        return ()
    limits = {c.number: c.limit for c in result.verdict.checks}
    charts = []
    for number in TREND_NUMBERS:
        budget = limits.get(number)
        head = getattr(result.numbers, number)
        if head is None or (budget is None and number != "warm_p50"):
            continue
        runs = [(run.started_at, getattr(run.numbers, number)) for run in history.runs]
        kept = [(started, value) for started, value in runs if value is not None]
        if not kept:
            continue
        labels = [*_labels([started for started, _ in kept]), HEAD_LABEL]
        values = [*(value for _, value in kept), head]
        drawn = budget is not None and budget <= BUDGET_REACH * max(values)
        label = NUMBER_LABELS.get(number, number)
        runs_said = f"{label}, {len(kept)} earlier run{'s' if len(kept) != 1 else ''} and this one"
        if budget is None:
            title = runs_said
        elif drawn:
            title = f"{runs_said} (red: the budget, {fmt_duration(budget)})"
        else:
            title = f"{runs_said} (budget {fmt_duration(budget)}, above the chart)"
        charts.append(
            TrendChart(
                number=number,
                title=title,
                points=tuple(zip(labels, values, strict=True)),
                budget=budget,
                budget_drawn=drawn,
            )
        )
    return tuple(charts)
