"""The capacity at the budget, as the reports show it: the sentence, a row per level, the cost of
the search, what the queue finding says beside it, and p95 against calls at once as a Mermaid
`xychart-beta` (bars: each level's p95; a flat line: the budget).

Every character here is ours: counts, durations and fixed words (no target name or endpoint
text), so the chart and the rows need no escaping beyond the templates' own.
"""

from __future__ import annotations

from dataclasses import dataclass

from latency_gate.assess.findings.load import rounds_within, served_at_once
from latency_gate.assess.load.headline import capacity_headline
from latency_gate.assess.load.said import broke_because, level_meaning
from latency_gate.config.plan.levels import LEVEL_CALLS
from latency_gate.formatting import fmt_duration, fmt_value_beside, plural
from latency_gate.models import CallPhase, Capacity, CapacityLevel, RunResult
from latency_gate.report.trend import BUDGET_REACH, CHART_HEIGHT, bar_chart

__all__ = ["CapacityChart", "CapacityView", "LevelRow", "capacity_view"]


@dataclass(frozen=True)
class LevelRow:
    """One level as a report row (ours alone: counts and durations)."""

    concurrency: int
    own: bool  # the run's own level (c0), judged by its concurrent check
    calls: int
    bursts: int
    p95: str
    errors: int
    ttft_p95: str
    held: bool
    near: bool
    how: str
    seconds: str

    @property
    def level(self) -> str:
        return f"{self.concurrency} (the run's)" if self.own else str(self.concurrency)

    @property
    def word(self) -> str:
        return "held" if self.held else "near" if self.near else "broke"

    @property
    def mark(self) -> str:
        return "✅ held" if self.held else "⚠️ near the budget" if self.near else "❌ broke"


@dataclass(frozen=True)
class CapacityChart:
    """p95 against calls at once: a bar per level tried (by concurrency), the budget a line."""

    title: str
    levels: tuple[tuple[int, float], ...]
    budget: float
    budget_drawn: bool

    @property
    def mermaid(self) -> tuple[str, ...]:
        """The lines of the ```mermaid block."""
        return bar_chart(
            self.title,
            ("calls at once", "p95, seconds"),
            [(str(level), p95) for level, p95 in self.levels],
            self.budget,
            budget_drawn=self.budget_drawn,
            height=CHART_HEIGHT,
        )


@dataclass(frozen=True)
class CapacityView:
    """A run's capacity prepared for the reports."""

    capacity: Capacity
    headline: str
    rows: tuple[LevelRow, ...]
    cost: str
    rests_on: tuple[str, ...]
    queue: str
    chart: CapacityChart | None


def _how(level: CapacityLevel, capacity: Capacity) -> str:
    del capacity  # every level is judged by the same tests
    if level.decided_by == "the run":
        return "by the run's concurrent calls"
    if level.decided_by == "test":
        return "by the test"
    where = "at its last burst" if level.decided_by == "level cap" else "when max-calls stopped it"
    return f"undecided {where}"


def _row(level: CapacityLevel, capacity: Capacity) -> LevelRow:
    return LevelRow(
        concurrency=level.concurrency,
        own=level.decided_by == "the run",
        calls=level.calls,
        bursts=level.bursts,
        p95=fmt_value_beside(level.p95, capacity.limit, "concurrent_p95"),
        errors=level.errors,
        ttft_p95=fmt_duration(level.ttft_p95) if level.ttft_p95 is not None else "—",
        held=level.held,
        near=level.near,
        how=_how(level, capacity),
        seconds=fmt_duration(level.seconds) if level.seconds is not None else "—",
    )


def _cost(capacity: Capacity) -> str:
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


def _chart(capacity: Capacity) -> CapacityChart | None:
    points = sorted(
        {lv.concurrency: lv.p95 for lv in capacity.levels if lv.p95 is not None}.items()
    )
    if len(points) < 2:
        return None
    top = max(p95 for _, p95 in points)
    drawn = capacity.limit <= BUDGET_REACH * top
    budget = fmt_duration(capacity.limit)
    title = (
        f"p95 by calls at once (red: the budget, {budget})"
        if drawn
        else f"p95 by calls at once (budget {budget}, above the chart)"
    )
    return CapacityChart(title, tuple(points), capacity.limit, drawn)


def capacity_view(result: RunResult) -> CapacityView | None:
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
    return CapacityView(
        capacity=capacity,
        headline=capacity_headline(capacity),
        rows=tuple(_row(lv, capacity) for lv in ordered),
        cost=_cost(capacity),
        rests_on=tuple(level_meaning(lv, capacity) for lv in deciding),
        queue=_queue(result, capacity),
        chart=_chart(capacity),
    )
