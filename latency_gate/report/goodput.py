"""Calls at a rate as the reports show them: the sentence, a row per level, what they cost, the
client's send lag, the two capacities side by side, and p95 against the rate as a Mermaid
`xychart-beta` (bars: each level's p95 from due; a flat line: the budget).

Every character here is ours: rates, counts, durations and fixed words (no target name or
endpoint text), so the chart and the rows need no escaping beyond the templates' own.
"""

from __future__ import annotations

from dataclasses import dataclass

from latency_gate.assess.load.headline import (
    deciding_levels,
    goodput_headline,
    littles_law,
    rate_headline,
)
from latency_gate.assess.load.said import level_said
from latency_gate.formatting import fmt_duration, fmt_rate, fmt_value_beside, plural
from latency_gate.models import Goodput, RateLevel, RunResult
from latency_gate.report.trend import BUDGET_REACH, CHART_HEIGHT, bar_chart

__all__ = ["GoodputView", "RateChart", "RateRow", "goodput_view"]


@dataclass(frozen=True)
class RateRow:
    """One level as a report row (ours alone: rates, counts and durations)."""

    rate: str
    offered: str
    calls: int
    judged: int
    p95: str
    ttft_p95: str
    errors: int
    lag: str
    held: bool
    near: bool
    client: bool
    how: str
    seconds: str

    @property
    def word(self) -> str:
        if self.client:
            return "client behind"
        return "held" if self.held else "near" if self.near else "broke"

    @property
    def mark(self) -> str:
        if self.client:
            return "⚠️ client behind"
        return "✅ held" if self.held else "⚠️ near the budget" if self.near else "❌ broke"


@dataclass(frozen=True)
class RateChart:
    """p95 from due against the rate: a bar per level tried (by rate), the budget a line."""

    title: str
    levels: tuple[tuple[str, float], ...]
    budget: float
    budget_drawn: bool

    @property
    def mermaid(self) -> tuple[str, ...]:
        """The lines of the ```mermaid block."""
        return bar_chart(
            self.title,
            ("requests a second", "p95 from due, seconds"),
            self.levels,
            self.budget,
            budget_drawn=self.budget_drawn,
            height=CHART_HEIGHT,
        )


@dataclass(frozen=True)
class GoodputView:
    """A run's calls at a rate prepared for the reports."""

    goodput: Goodput
    headline: str
    rows: tuple[RateRow, ...]
    cost: str
    rests_on: tuple[str, ...]
    lag: str
    side_by_side: str
    chart: RateChart | None

    @property
    def title(self) -> str:
        return "Goodput" if self.goodput.search else "At a rate"


def _how(level: RateLevel, goodput: Goodput) -> str:
    del goodput  # every level is judged by the same tests
    return {
        "test": "by the test",
        "level cap": "undecided at its end",
        "max-calls": "undecided when a cap stopped it",
        "client": "not judged: the client fell behind",
    }[level.decided_by]


def _row(level: RateLevel, goodput: Goodput) -> RateRow:
    return RateRow(
        rate=fmt_rate(level.rate),
        offered=fmt_rate(level.offered) if level.offered is not None else "—",
        calls=level.calls,
        judged=level.judged,
        p95=fmt_value_beside(level.p95, goodput.limit, "concurrent_p95"),
        ttft_p95=fmt_duration(level.ttft_p95) if level.ttft_p95 is not None else "—",
        errors=level.errors,
        lag=fmt_duration(level.send_lag_p95) if level.send_lag_p95 is not None else "—",
        held=level.held,
        near=level.near,
        client=level.client_behind,
        how=_how(level, goodput),
        seconds=fmt_duration(level.seconds),
    )


def _cost(goodput: Goodput) -> str:
    span = (
        "no time limit"
        if goodput.level_seconds is None
        else f"{fmt_duration(goodput.level_seconds)} of arrivals"
    )
    what = "The search" if goodput.search else "The run at a rate"
    if goodput.level_judged and goodput.level_seconds is not None:
        span += (
            f" (longer at rates too low for {goodput.level_judged} calls after the warm-up: "
            "the tests need about 90 to hold)"
        )
    return (
        f"{what}: {goodput.calls:,} calls in {fmt_duration(goodput.seconds)}, "
        f"{plural(len(goodput.levels), 'level')} of {goodput.arrivals} arrivals, each call timed "
        f"from when it was due. A level lasts at most {span} and {goodput.level_calls:,} calls; "
        f"the calls due in its first {fmt_duration(goodput.warmup)} are made and not judged "
        f"(the queue fills from idle), it holds only once its judged calls span "
        f"{fmt_duration(goodput.hold)}, and a level still undecided at its end is near the "
        "budget."
        + (
            ""
            if goodput.restarted_at is None
            else f" A level this short judges too few calls to hold under "
            f"{fmt_rate(goodput.restarted_at)}: after {fmt_rate(goodput.start)}, the search went "
            f"on from {fmt_rate(goodput.restarted_at)}."
        )
    )


def _lag(goodput: Goodput) -> str:
    """The client's own send lag against the floor, worst level first."""
    lags = [lv for lv in goodput.levels if lv.send_lag_p95 is not None]
    if not lags:
        return ""
    worst = max(lags, key=lambda lv: lv.send_lag_p95 or 0.0)
    floor = "" if goodput.floor is None else f" (the gate's floor: {fmt_duration(goodput.floor)})"
    said = (
        f"The client's send lag (how late it sent a call after it was due) was at most "
        f"{fmt_duration(worst.send_lag_p95)} at p95, at {fmt_rate(worst.rate)}{floor}"
    )
    behind = [lv for lv in goodput.levels if lv.client_behind]
    if behind:
        return (
            f"{said}: at {fmt_rate(behind[0].rate)} the client fell behind, not the endpoint; "
            "that level is not counted."
        )
    return f"{said}: the client kept up."


def _chart(goodput: Goodput) -> RateChart | None:
    points = sorted({lv.rate: lv.p95 for lv in goodput.levels if lv.p95 is not None}.items())
    if len(points) < 2:
        return None
    top = max(p95 for _, p95 in points)
    drawn = goodput.limit <= BUDGET_REACH * top
    budget = fmt_duration(goodput.limit)
    title = (
        f"p95 from due by rate (red: the budget, {budget})"
        if drawn
        else f"p95 from due by rate (budget {budget}, above the chart)"
    )
    labels = tuple((fmt_rate(rate), p95) for rate, p95 in points)
    return RateChart(title, labels, goodput.limit, drawn)


def goodput_view(result: RunResult) -> GoodputView | None:
    """The calls at a rate of a run for the reports; None when there were none."""
    goodput = result.goodput
    if goodput is None:
        return None
    ordered = sorted(goodput.levels, key=lambda lv: lv.rate)
    shown = {id(lv) for lv in deciding_levels(goodput)}
    deciding = [lv for lv in ordered if not goodput.search or id(lv) in shown or lv.client_behind]
    headline = goodput_headline(goodput) if goodput.search else rate_headline(goodput)
    side = "" if result.capacity is None else littles_law(goodput, result.capacity)
    return GoodputView(
        goodput=goodput,
        headline=headline,
        rows=tuple(_row(lv, goodput) for lv in ordered),
        cost=_cost(goodput),
        rests_on=tuple(level_said(lv, goodput) for lv in deciding),
        lag=_lag(goodput),
        side_by_side=side,
        chart=_chart(goodput),
    )
