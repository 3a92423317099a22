"""The trend, as a picture: a gated number over the history's runs and this one, as a Mermaid
`xychart-beta` that GitHub draws in a job summary and a PR comment.

One chart per number: the runs' values as a line (x: the runs, oldest first, this run at the
right; y: seconds, or requests a second for the goodput) and the budget as a flat second line
(the goodput's: its floor, `--min-rate`), when it is within reach of the values
(a budget far above them would press the values into a flat line at the bottom; the title then
gives it in words). Every character of a chart is ours: labels are commits, dates and "this
run", the title a number's label and formatted values; no target name or endpoint text goes in.

Mermaid's x axis is a list of names: runs that share a name share a point. So each run gets a
name of its own: its commit's short SHA (when the run recorded one) and its UTC day, with the
time, then the second, then "(2)", "(3)" where that is not yet enough. Names that would run into
each other are slanted, and a chart of many runs is widened (GitHub scales it to the page).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter

from latency_gate.formatting import fmt_duration, fmt_rate, plural
from latency_gate.models import HistoryRun, RunResult
from latency_gate.report.rows import NUMBER_LABELS

__all__ = [
    "TREND_NUMBERS",
    "TrendChart",
    "axis_top",
    "bar_chart",
    "chart_number",
    "chart_text",
    "label_layout",
    "run_labels",
    "trend_charts",
]

# Charted, in this order, when gated (warm p50 always: the typical call beside the tail).
TREND_NUMBERS = ("warm_p95", "concurrent_p95", "ttft_p95", "warm_p50")
# The budget is drawn when it is at most this many times the highest value.
BUDGET_REACH = 3.0
HEAD_LABEL = "this run"
CHART_HEIGHT = 320
COMPACT_HEIGHT = 280
RUNS_COLOUR = "#0969da"
BUDGET_COLOUR = "#cf222e"
CHART_WIDTH = 700  # Mermaid's own
# Mermaid's axis labels at its 14 px font (measured in Chromium: 5.7 to 7.8 px a character, a
# space about 4), the room a slanted label needs beside the next, and the chart's width less
# its plot (the y axis and its title).
CHAR_WIDTH = 6.5
SPACE_WIDTH = 4.0
SLANTED_ROOM = 22.0
Y_AXIS_ROOM = 60.0
LABEL_ANGLE = -45
AXIS_FLOOR = 1e-5
# The newest runs charted; a chart of more has no readable label (history-size goes to 1000).
CHARTED_RUNS = 60


@dataclass(frozen=True)
class TrendChart:
    """One number's trend: the points (label, seconds), the budget, and the Mermaid source."""

    number: str
    title: str
    points: tuple[tuple[str, float], ...]
    budget: float | None
    budget_drawn: bool
    unit: str = "seconds"

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
        width, slanted = label_layout([label for label, _ in self.points])
        lines = [
            *chart_header(self.title, height, width=width, slanted=slanted),
            f"    x-axis [{labels}]",
            f'    y-axis "{self.unit}" 0 --> {chart_number(axis_top(top * 1.05))}',
            f"    line [{', '.join(chart_number(v) for v in values)}]",
        ]
        if self.budget_drawn and self.budget is not None:
            budget = chart_number(self.budget)
            lines.append(f"    line [{', '.join(budget for _ in values)}]")
        return tuple(lines)


def chart_header(
    title: str, height: int, *, width: int = CHART_WIDTH, slanted: bool = False
) -> tuple[str, ...]:
    """The first lines of an xychart-beta block: its config and its title.

    Mermaid's default palette starts with a pale lavender that is hard to see on white: the
    data in GitHub's blue, the budget in its red (frontmatter config, Mermaid 10.5+, the
    release that brought xychart-beta), and a height that keeps several charts on a screen.
    `width` past Mermaid's own and `slanted` x labels for many or long labels (label_layout);
    a Mermaid without labelRotation ignores it."""
    layout = [f"    width: {width}"] if width != CHART_WIDTH else []
    if slanted:
        layout += ["    xAxis:", f"      labelRotation: {LABEL_ANGLE}"]
    return (
        "---",
        "config:",
        "  xyChart:",
        f"    height: {height}",
        *layout,
        "  themeVariables:",
        "    xyChart:",
        f'      plotColorPalette: "{RUNS_COLOUR}, {BUDGET_COLOUR}"',
        "---",
        "xychart-beta",
        f"    title {chart_text(title)}",
    )


def bar_chart(
    title: str,
    axes: tuple[str, str],
    bars: Sequence[tuple[str, float]],
    budget: float,
    *,
    budget_drawn: bool,
    height: int,
) -> tuple[str, ...]:
    """The lines of a bar chart of a p95 per level (`bars`: its label and value, in order), the
    budget a line when `budget_drawn`; `axes`: the x axis's name and the y axis's."""
    values = [value for _, value in bars]
    top = max([*values, budget] if budget_drawn else values)
    labels = ", ".join(chart_text(label) for label, _ in bars)
    lines = [
        *chart_header(title, height),  # bars blue, the budget red, as the trend's
        f'    x-axis "{axes[0]}" [{labels}]',
        f'    y-axis "{axes[1]}" 0 --> {chart_number(axis_top(top * 1.05))}',
        f"    bar [{', '.join(chart_number(v) for v in values)}]",
    ]
    if budget_drawn:
        lines.append(f"    line [{', '.join(chart_number(budget) for _ in values)}]")
    return tuple(lines)


def chart_text(text: str) -> str:
    """A quoted string for a Mermaid chart (a title, a label)."""
    # Ours alone, but a quote or a bracket would still end the string or the list early.
    cleaned = "".join(c for c in text if c.isprintable() and c not in '"[]{}%;#`')
    return f'"{cleaned}"'


def chart_number(value: float) -> str:
    """A number as a Mermaid chart reads it: plain decimals to the microsecond, never an
    exponent (Mermaid cannot read "5e-05": the whole chart is not drawn)."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def label_layout(labels: Sequence[str]) -> tuple[int, bool]:
    """The chart's width and whether its x labels are slanted: level when the longest fits the
    room of one point (Mermaid pads the plot by half the longest at each end), slanted when
    not, and the chart widened when even slanted labels would touch."""
    longest = max((_label_width(label) for label in labels), default=0.0)
    room = (CHART_WIDTH - Y_AXIS_ROOM - longest) / max(len(labels), 1)
    if longest + 2 <= room:
        return CHART_WIDTH, False
    needed = round(Y_AXIS_ROOM + SLANTED_ROOM * len(labels))
    return max(CHART_WIDTH, needed), True


def _label_width(label: str) -> float:
    return sum(SPACE_WIDTH if char == " " else CHAR_WIDTH for char in label)


def axis_top(value: float) -> float:
    """A round top for the y axis at or above `value`: 1, 1.5, 2, 4, 5 or 8 times a power of
    ten. Mermaid draws about ten ticks by d3's rule, and for these tops at most 11 (a top of 1.2,
    2.5, 3 or 6 gets 13 to 16, whose labels run into each other); finer than 1-2-5, as a coarse
    top presses the lines into the bottom half. Never under 10 µs, which chart_number still
    writes."""
    if value <= 0:
        return 1.0
    value = max(value, AXIS_FLOOR)
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 1.5, 2.0, 4.0, 5.0, 8.0):
        if value <= power * step * (1 + 1e-9):
            return round(power * step, 12)
    return power * 10


def run_labels(runs: Sequence[tuple[float, str | None]]) -> list[str]:
    """A name for each run (its UTC start, and its commit when known), all different: the
    commit's short SHA and the day ("a1b2c3d Nov 14"); for a run without a commit the day, with
    the time ("Nov 14 22:13") where two would share a name, then the second; "(2)", "(3)" after
    a name that still repeats (a re-run of one commit). Short, so that Mermaid shows them: it
    leaves out every x label when the longest does not fit under the chart."""
    labels: list[str] = []
    for form in ("%b %d", "%b %d %H:%M", "%b %d %H:%M:%S"):
        labels = [
            f"{commit[:7]} {_utc(t, '%b %d')}" if commit else _utc(t, form) for t, commit in runs
        ]
        if len(set(labels)) == len(labels):
            return labels
    seen: dict[str, int] = {}
    named = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        named.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return named


def _utc(started: float, form: str) -> str:
    return datetime.fromtimestamp(started, UTC).strftime(form)


def trend_charts(result: RunResult) -> tuple[TrendChart, ...]:
    """The charts of a run held against a history: each gated percentile (and warm p50) with a
    value in this run and in at least one earlier run, then the goodput (the rate its search
    held) when this run searched it and an earlier run did too. None without a history."""
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
        chart = _trend(
            number,
            NUMBER_LABELS.get(number, number),
            history.runs,
            attrgetter(f"numbers.{number}"),
            head=head,
            budget=budget,
        )
        if chart is not None:
            charts.append(chart)
    goodput = result.goodput
    if goodput is not None and goodput.search:
        chart = _trend(
            "goodput",
            f"goodput at p95 ≤ {fmt_duration(goodput.limit)}",
            history.runs,
            lambda run: run.goodput,
            head=goodput.found,
            budget=limits.get("goodput"),
            unit="requests a second",
            said=fmt_rate,
            line="the minimum",
        )
        if chart is not None:
            charts.append(chart)
    return tuple(charts)


def _trend(
    number: str,
    label: str,
    runs: Sequence[HistoryRun],
    value_of: Callable[[HistoryRun], float | None],
    *,
    head: float,
    budget: float | None,
    unit: str = "seconds",
    said: Callable[[float], str] = fmt_duration,
    line: str = "the budget",
) -> TrendChart | None:
    """One number's chart over the earlier runs that have it and this run (None when none
    has): its budget (`line`: what the red line is) drawn when within reach of the values."""
    kept = [(run, value) for run in runs if (value := value_of(run)) is not None]
    if not kept:
        return None
    charted = kept[-CHARTED_RUNS:]
    labels = [*run_labels([(run.started_at, run.commit) for run, _ in charted]), HEAD_LABEL]
    values = [*(value for _, value in charted), head]
    drawn = budget is not None and budget <= BUDGET_REACH * max(values)
    earlier = plural(len(kept), "earlier run")
    if len(charted) < len(kept):
        earlier = f"the newest {len(charted)} of {earlier}"
    runs_said = f"{label}, {earlier} and this one"
    if budget is None:
        title = runs_said
    elif drawn:
        title = f"{runs_said} (red: {line}, {said(budget)})"
    else:
        title = f"{runs_said} ({line.removeprefix('the ')} {said(budget)}, above the chart)"
    return TrendChart(
        number=number,
        title=title,
        points=tuple(zip(labels, values, strict=True)),
        budget=budget,
        budget_drawn=drawn,
        unit=unit,
    )
