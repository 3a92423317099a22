"""How much load a run held, as the reports show it: one view and one chart for both kinds of
`LoadFigure`, the capacity (calls at once) and calls at a rate (the goodput, or `--rate`
alone). The view holds the sentence, a row per level, what the levels cost, what the figure
rests on, the notes beside it (the client's send lag; the queue finding, or the two capacities
side by side), and p95 against the load as a Mermaid `xychart-beta` (bars: each level's p95, from
due at a rate; a flat line: the budget); `load_lines` draws it in the terminal.

Every character here is ours: rates, counts, durations and fixed words (no target name or
endpoint text), so the chart and the rows need no escaping beyond the templates' own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.assess.findings.load import rounds_within, served_at_once
from latency_gate.assess.load.headline import (
    capacity_headline,
    deciding_levels,
    goodput_headline,
    littles_law,
    rate_headline,
)
from latency_gate.assess.load.said import broke_because, level_meaning, level_said
from latency_gate.config.plan.levels import LEVEL_CALLS
from latency_gate.formatting import fmt_duration, fmt_rate, fmt_value_beside, plural
from latency_gate.models import CallPhase, Capacity, CapacityLevel, Goodput, RateLevel, RunResult
from latency_gate.report.text_lines import aligned
from latency_gate.report.text_lines import wrap as _wrap
from latency_gate.report.trend import BUDGET_REACH, CHART_HEIGHT, bar_chart

__all__ = ["LevelRow", "LoadChart", "LoadView", "capacity_view", "goodput_view", "load_lines"]

_NONE = "—"


@dataclass(frozen=True)
class LevelRow:
    """One level as a report row (ours alone: rates, counts and durations). A capacity's level
    has no `offered`, `judged` or `lag` to show; a rate's no `bursts`."""

    level: str  # "10 (the run's)" or "12" at once; "1.5/s" at a rate
    calls: int
    p95: str
    ttft_p95: str
    errors: int
    held: bool
    near: bool
    how: str
    seconds: str
    bursts: int = 0
    offered: str = _NONE
    judged: int = 0
    lag: str = _NONE
    client: bool = False

    @property
    def word(self) -> str:
        if self.client:
            return "client behind"
        return "held" if self.held else "near" if self.near else "broke"

    @property
    def result(self) -> str:
        """The terminal's result column: "held by the test"."""
        return f"{self.word} {self.how}"

    @property
    def mark(self) -> str:
        if self.client:
            return "⚠️ client behind"
        return "✅ held" if self.held else "⚠️ near the budget" if self.near else "❌ broke"


@dataclass(frozen=True)
class LoadChart:
    """p95 against the load: a bar per level tried (by its load), the budget a line."""

    title: str
    levels: tuple[tuple[str, float], ...]
    budget: float
    budget_drawn: bool
    axes: tuple[str, str]

    @property
    def mermaid(self) -> tuple[str, ...]:
        """The lines of the ```mermaid block."""
        return bar_chart(
            self.title,
            self.axes,
            self.levels,
            self.budget,
            budget_drawn=self.budget_drawn,
            height=CHART_HEIGHT,
        )


@dataclass(frozen=True)
class LoadView:
    """A run's capacity, or its calls at a rate, prepared for the reports. `lag` is said of
    calls at a rate alone, `queue` of a capacity alone, `side_by_side` of a rate beside one."""

    figure: Capacity | Goodput
    headline: str
    rows: tuple[LevelRow, ...]
    cost: str
    rests_on: tuple[str, ...]
    chart: LoadChart | None
    lag: str = ""
    queue: str = ""
    side_by_side: str = ""

    @property
    def at_rate(self) -> bool:
        return isinstance(self.figure, Goodput)

    @property
    def title(self) -> str:
        if isinstance(self.figure, Goodput):
            return "Goodput" if self.figure.search else "At a rate"
        return "Capacity"

    @property
    def numbers(self) -> tuple[str, ...]:
        """The report rows (budget checks) that hold the figure."""
        return ("goodput", "rate_p95") if self.at_rate else ("capacity",)


def _chart(
    points: Sequence[tuple[str, float]], limit: float, by: str, axes: tuple[str, str]
) -> LoadChart | None:
    """The chart of `points` (label, p95) in the order of their load; None under two."""
    if len(points) < 2:
        return None
    top = max(p95 for _, p95 in points)
    drawn = limit <= BUDGET_REACH * top
    budget = fmt_duration(limit)
    title = (
        f"{by} (red: the budget, {budget})" if drawn else f"{by} (budget {budget}, above the chart)"
    )
    return LoadChart(title, tuple(points), limit, drawn, axes)


def _seconds(value: float | None) -> str:
    return fmt_duration(value) if value is not None else _NONE


# The capacity: calls at once.


def _capacity_how(level: CapacityLevel) -> str:
    if level.decided_by == "the run":
        return "by the run's concurrent calls"
    if level.decided_by == "test":
        return "by the test"
    where = "at its last burst" if level.decided_by == "level cap" else "when max-calls stopped it"
    return f"undecided {where}"


def _capacity_row(level: CapacityLevel, capacity: Capacity) -> LevelRow:
    own = level.decided_by == "the run"  # the run's own level (c0), judged by its concurrent check
    return LevelRow(
        level=f"{level.concurrency} (the run's)" if own else str(level.concurrency),
        calls=level.calls,
        bursts=level.bursts,
        p95=fmt_value_beside(level.p95, capacity.limit, "concurrent_p95"),
        errors=level.errors,
        ttft_p95=_seconds(level.ttft_p95),
        held=level.held,
        near=level.near,
        how=_capacity_how(level),
        seconds=_seconds(level.seconds),
    )


def _capacity_cost(capacity: Capacity) -> str:
    searched = sum(lv.decided_by != "the run" for lv in capacity.levels)
    return (
        f"The search: {capacity.calls:,} calls in {fmt_duration(capacity.seconds)}, "
        f"{plural(searched, 'level')} beyond the run's own ({capacity.start} at once: it "
        "starts from the run's concurrent calls). Each level is bursts of that many calls "
        "started together, "
        f"repeated while its tests were undecided (none after {LEVEL_CALLS} calls: a level "
        "still undecided then is near the budget)."
    )


def _queue(result: RunResult, capacity: Capacity) -> str:
    """What the queue finding says beside the capacity ("served about 4 at a time") and what
    that makes of it: calls at once end in rounds of that many, a warm p50 apart, so the most
    of them whose p95 stays within the budget, held against the search's figure. A figure the
    search's own levels contradict is not printed: the sentence names the level instead."""
    warm = result.numbers.warm_p50
    start = capacity.start
    first_burst = [
        s for s in result.samples if s.phase is not CallPhase.CONCURRENT or s.index < start
    ]
    served = served_at_once(first_burst, result.numbers, result.config.get("stream") is True)
    if served is None or warm is None or warm <= 0:
        return ""
    rounds = rounds_within(served, warm, capacity.limit, capacity.maximum)
    found, held = capacity.found, rounds.held
    finding = (
        f"The queue finding says served about {served} at a time, at {fmt_duration(warm)} a call "
        "(warm p50)"
    )
    contradicted = _measured_against(capacity, held)
    if contradicted:
        return (
            f"{finding}, read from the run's first burst; rounds of {served} such calls do not "
            f"match what the search measured ({contradicted}), so the capacity rests on the "
            "search's levels alone."
        )
    beyond = (
        f" ({held + 1} at once: {fmt_duration(rounds.next_p95)})"
        if rounds.next_p95 is not None
        else ""
    )
    breaking = next((lv for lv in capacity.levels if lv.concurrency == capacity.breaking), None)
    if held == found:
        said = "as the search found"
    elif breaking is not None:
        said = (
            f"the search found {found}: {breaking.concurrency} at once broke "
            f"({broke_because(breaking, capacity)})"
        )
    else:
        said = f"the search found at least {found} ({capacity.stopped or 'it stopped there'})"
    return (
        f"{finding}: calls at once then end in rounds of {served}, {fmt_duration(warm)} apart, "
        f"and up to {held} calls at once end within {fmt_duration(capacity.limit)} at p95"
        f"{beyond}; {said}."
    )


def _measured_against(capacity: Capacity, held: int) -> str:
    """A level the search measured whose p95 says `held` is wrong ("9 at once broke (p95 302
    ms)", "10 at once held (p95 203 ms)"); "" when none does."""
    for level in sorted(capacity.levels, key=lambda lv: lv.concurrency):
        if level.held and level.concurrency > held and level.p95 is not None:
            return f"{level.concurrency} at once held (p95 {fmt_duration(level.p95)})"
        if not level.held and level.concurrency <= held and "concurrent_p95" in level.broke_on:
            return f"{level.concurrency} at once broke ({broke_because(level, capacity)})"
    return ""


def capacity_view(result: RunResult) -> LoadView | None:
    """The capacity of a run for the reports; None when it was not searched."""
    capacity = result.capacity
    if capacity is None:
        return None
    ordered = sorted(capacity.levels, key=lambda lv: lv.concurrency)
    upper = capacity.upper if capacity.upper is not None else capacity.found
    deciding = [
        lv
        for lv in ordered
        if (lv.held and lv.concurrency == capacity.found)
        or (lv.near and capacity.found < lv.concurrency <= upper)
        or (not lv.held and not lv.near and lv.concurrency == capacity.breaking)
    ]
    points = sorted(
        {lv.concurrency: lv.p95 for lv in capacity.levels if lv.p95 is not None}.items()
    )
    return LoadView(
        figure=capacity,
        headline=capacity_headline(capacity),
        rows=tuple(_capacity_row(lv, capacity) for lv in ordered),
        cost=_capacity_cost(capacity),
        rests_on=tuple(level_meaning(lv, capacity) for lv in deciding),
        queue=_queue(result, capacity),
        chart=_chart(
            [(str(level), p95) for level, p95 in points],
            capacity.limit,
            "p95 by calls at once",
            ("calls at once", "p95, seconds"),
        ),
    )


# Calls at a rate: the goodput search, or --rate alone.

_RATE_HOW = {
    "test": "by the test",
    "level cap": "undecided at its end",
    "max-calls": "undecided when a cap stopped it",
    "client": "not judged: the client fell behind",
}


def _rate_row(level: RateLevel, goodput: Goodput) -> LevelRow:
    return LevelRow(
        level=fmt_rate(level.rate),
        offered=fmt_rate(level.offered) if level.offered is not None else _NONE,
        calls=level.calls,
        judged=level.judged,
        p95=fmt_value_beside(level.p95, goodput.limit, "concurrent_p95"),
        ttft_p95=_seconds(level.ttft_p95),
        errors=level.errors,
        lag=_seconds(level.send_lag_p95),
        held=level.held,
        near=level.near,
        client=level.client_behind,
        how=_RATE_HOW[level.decided_by],
        seconds=fmt_duration(level.seconds),
    )


def _rate_cost(goodput: Goodput) -> str:
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


def goodput_view(result: RunResult) -> LoadView | None:
    """The calls at a rate of a run for the reports; None when there were none."""
    goodput = result.goodput
    if goodput is None:
        return None
    ordered = sorted(goodput.levels, key=lambda lv: lv.rate)
    shown = {id(lv) for lv in deciding_levels(goodput)}
    deciding = [lv for lv in ordered if not goodput.search or id(lv) in shown or lv.client_behind]
    headline = goodput_headline(goodput) if goodput.search else rate_headline(goodput)
    side = "" if result.capacity is None else littles_law(goodput, result.capacity)
    points = sorted({lv.rate: lv.p95 for lv in goodput.levels if lv.p95 is not None}.items())
    return LoadView(
        figure=goodput,
        headline=headline,
        rows=tuple(_rate_row(lv, goodput) for lv in ordered),
        cost=_rate_cost(goodput),
        rests_on=tuple(level_said(lv, goodput) for lv in deciding),
        lag=_lag(goodput),
        side_by_side=side,
        chart=_chart(
            [(fmt_rate(rate), p95) for rate, p95 in points],
            goodput.limit,
            "p95 from due by rate",
            ("requests a second", "p95 from due, seconds"),
        ),
    )


def load_lines(
    view: LoadView, name: str, *, several: bool, verbose: bool, failed: bool
) -> list[str]:
    """One target's figure in the terminal: its sentence (of `name` when there are `several`
    targets); for one target (or with `verbose`) a line per level, the cost, the notes, and
    what the figure rests on when it `failed` (or with `verbose`)."""
    figure = view.figure
    word = view.title.lower() if isinstance(figure, Goodput) else "capacity"
    lines = ["", *_wrap(f"{word}{' of ' + name if several else ''}: {view.headline}")]
    if several and not verbose:
        return lines
    table: Sequence[Sequence[str]]
    if isinstance(figure, Goodput):
        table = [("rate", "calls", "judged", "p95 from due", "send lag p95", "result")] + [
            (row.level, f"{row.calls:,}", f"{row.judged:,}", row.p95, row.lag, row.result)
            for row in view.rows
        ]
        cost = view.cost
    else:
        table = [("at once", "calls", "p95", "result")] + [
            (row.level, f"{row.calls:,}", row.p95, row.result) for row in view.rows
        ]
        cost = f"the search: {figure.calls:,} calls in {fmt_duration(figure.seconds)}"
    lines += aligned(table, right={1, 2} if view.at_rate else {1})
    rests_on = view.rests_on if verbose or failed else ()
    for text in (cost, view.lag, *rests_on, view.queue, view.side_by_side):
        if text:
            lines += _wrap(text, "  ")
    return lines
