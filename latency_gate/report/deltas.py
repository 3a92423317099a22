"""The comparison with a baseline as report text: a row per number (base, head, delta, the
interval of head / base, the outcome), the limit a number must pass to regress, and where the
base came from (an earlier run's file, or a base endpoint measured side by side in this run);
against a history, the same rows with the history's typical run as base and its prediction
bound."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latency_gate.formatting import (
    fmt_bounds,
    fmt_change,
    fmt_duration,
    fmt_ratio,
    fmt_value,
    md_escape,
    plural,
)
from latency_gate.models import BaselineCheck, NumberDelta
from latency_gate.report.markup import md_text, md_url
from latency_gate.report.view import NUMBER_LABELS

__all__ = [
    "ONE_EARLIER_RUN",
    "DeltaRow",
    "HistoryRow",
    "PartRow",
    "baseline_source_markdown",
    "delta_rows",
    "history_heading",
    "history_rows",
    "length_sentence",
    "no_regression_text",
    "origins_text",
    "part_rows",
    "regression_limit_text",
    "what_changed_sentence",
]


@dataclass(frozen=True)
class DeltaRow:
    """One number against the baseline, as text for a report row."""

    label: str
    base: str
    head: str
    delta: str
    interval: str
    result: str


def delta_rows(check: BaselineCheck | None) -> tuple[DeltaRow, ...]:
    """Base, head and delta of every compared number, the interval of head / base, the outcome."""
    if check is None:
        return ()
    rows = []
    for d in check.deltas:
        delta = "—"
        if d.delta is not None:
            sign = "+" if d.delta > 0 else "-" if d.delta < 0 else "±"
            delta = sign + fmt_value(abs(d.delta), d.number)
            if d.relative is not None:
                delta += f" ({fmt_change(d.relative)})"
        if d.regressed and d.by_length:
            result = "❌ regressed: its answers are longer beyond the limit"
        elif d.regressed:
            result = "❌ regressed"
        elif d.note:
            result = md_escape(d.note)  # ours, or a result file's text read back
        else:
            result = "✅ not regressed"
        rows.append(
            DeltaRow(
                label=NUMBER_LABELS.get(d.number, d.number.replace("_", " ")),
                base=fmt_value(d.base, d.number),
                head=fmt_value(d.head, d.number),
                delta=delta,
                interval=_ratio_text(d.interval),
                result=result,
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class HistoryRow:
    """One number against a history, as text for a report row."""

    label: str
    history: str  # the history's typical run (geometric mean)
    head: str
    ratio: str  # head / history
    above: str  # the value a regression must exceed: "377 ms (bound x1.19, +10 %)"
    result: str


def history_rows(check: BaselineCheck | None) -> tuple[HistoryRow, ...]:
    """Against a history: the history's typical run, head, head / history, the value the head
    had to exceed (the prediction bound as a ratio, the limit on top), the outcome."""
    rows = []
    for row, d in zip(delta_rows(check), () if check is None else check.deltas, strict=True):
        ratio = above = "—"
        if d.base and d.head is not None and d.number != "error_rate":
            ratio = fmt_ratio(d.head / d.base)
        if d.bound is not None and d.threshold is not None and d.base and check is not None:
            above = (
                f"{fmt_value(d.threshold, d.number)} (bound {fmt_ratio(d.bound / d.base)}, "
                f"+{regression_limit_text(check)})"
            )
        elif d.number == "error_rate":
            ratio = row.interval
        rows.append(HistoryRow(row.label, row.base, row.head, ratio, above, row.result))
    return tuple(rows)


def history_heading(check: BaselineCheck) -> str:
    """ "against the history of 10 runs (prediction interval, drift between runs included)"."""
    runs = 0 if check.history is None else len(check.history.runs)
    return f"against the history of {runs} runs (prediction interval, drift between runs included)"


def _ratio_text(bounds: tuple[float | None, float | None] | None) -> str:
    """head / base as "x1.31 to x1.72", one side "≥ x1.31", or "—"."""
    return fmt_bounds(bounds, fmt_ratio)


@dataclass(frozen=True)
class PartRow:
    """One part of the calls, head against base, as text for a report row."""

    label: str
    base: str
    head: str
    interval: str
    moved: str


_PART_LABELS = {
    "length": "answer length",
    "first_token": "first token (warm)",
    "per_token": "time per token (warm)",
}


def _part_value(value: float | None, part: str, unit: str) -> str:
    if value is None:
        return "—"
    if part == "length":
        return f"{value:,.0f} {unit}"
    return f"{value * 1000:.1f} ms" if value < 0.1 else fmt_duration(value)


def part_rows(check: BaselineCheck | None) -> tuple[PartRow, ...]:
    """What changed: each part's geometric means, head / base (98 %) and whether it moved."""
    if check is None:
        return ()
    return tuple(
        PartRow(
            label=_PART_LABELS[p.part],
            base=_part_value(p.base, p.part, p.unit),
            head=_part_value(p.head, p.part, p.unit),
            interval=_ratio_text(p.interval),
            moved=p.moved,
        )
        for p in check.parts
    )


def what_changed_sentence(check: BaselineCheck | None) -> str:
    """ "answers 48 % longer (36 to 53 tokens); time per token and first token unchanged",
    the same for every row compared at the same work; empty without one."""
    if check is None:
        return ""
    return next((d.cause for d in check.deltas if d.cause), "")


def length_sentence(check: BaselineCheck | None) -> str:
    """The answers' length held to the limit, as a whole-call number is: "the answers' length
    against the 10 % limit: not regressed, head / base x0.98 to x1.03 (one-sided ...)"."""
    if check is None or check.length is None or check.length.outcome is None:
        return ""
    low, high = check.length.interval or (None, None)
    shown = _ratio_text((low, high))
    pairs = "pairs of the same prompt" if check.length.paired else "calls"
    return (
        f"the answers' length against the {regression_limit_text(check)} limit: "
        f"{check.length.outcome}, head / base {shown} over {check.length.n:,} {pairs}; a "
        "whole-call number regresses on longer answers too"
    )


def regression_limit_text(check: BaselineCheck) -> str:
    """ "10 %", "200 ms" or "20 % and 200 ms": what a number must be worse by to regress."""
    parts = []
    if check.max_relative is not None:
        parts.append(f"{check.max_relative * 100:g} %")
    if check.max_absolute is not None:
        parts.append(fmt_duration(check.max_absolute))
    return " and ".join(parts) or "any amount"


# A search's figure is held to its base less the limit, by its levels' tests: not to noise or
# to the runs' spread as a percentile is (assess/load/regression.py).
SEARCH_FIGURES = ("capacity", "goodput")


def regressed_text(
    check: BaselineCheck, beyond: str, regressions: Sequence[NumberDelta] | None = None
) -> str:
    """What regressed (`check.regressions`, or the `regressions` given), `beyond` "noise" or
    "the runs' spread": "2 numbers regressed beyond noise and the 10 % limit"; a search's
    figure said apart, as it was judged: "the goodput fell under the runs' median less the 10 %
    limit, by its levels' tests"."""
    regressed = check.regressions if regressions is None else regressions
    limit = regression_limit_text(check)
    numbers = [d for d in regressed if d.number not in SEARCH_FIGURES]
    figures = [d.number for d in regressed if d.number in SEARCH_FIGURES]
    said = []
    if numbers:
        said.append(
            f"{plural(len(numbers), 'number')} regressed beyond {beyond} and the {limit} limit"
        )
    if figures:
        several = check.history is not None and check.history.judged == "prediction"
        base = "the runs' median" if several else "the base's"
        said.append(
            f"the {' and the '.join(figures)} fell under {base} less the {limit} limit, by "
            "its levels' tests"
        )
    return "; ".join(said)


def no_regression_text(check: BaselineCheck, beyond: str) -> str:
    """What a comparison that called nothing a regression found, `beyond` "noise" or "the runs'
    spread": "no number regressed beyond noise and the 10 % limit" only when none is undecided;
    else "2 numbers undecided (warm p95, concurrent p95), not called regressions; 1 not
    regressed beyond noise and the 10 % limit"."""
    limit = f"beyond {beyond} and the {regression_limit_text(check)} limit"
    undecided = check.undecided
    if not undecided:
        return f"no number regressed {limit}"
    names = ", ".join(NUMBER_LABELS.get(d.number, d.number.replace("_", " ")) for d in undecided)
    called = "a regression" if len(undecided) == 1 else "regressions"
    text = f"{plural(len(undecided), 'number')} undecided ({names}), not called {called}"
    decided = sum(d.outcome == "not regressed" for d in check.deltas)
    return f"{text}; {decided} not regressed {limit}" if decided else text


# One earlier run as the base: what its comparison cannot see, said with it (docs/statistics.md,
# tables f and j measure what it costs).
ONE_EARLIER_RUN = (
    "one earlier run: drift between runs is not accounted for (the endpoint's load, the network "
    "or the runner moving between the two reads as a change; --baseline-url or --history account "
    "for it)"
)


def baseline_source_markdown(check: BaselineCheck) -> str:
    """Where the base came from, as Markdown: the file as given (escaped) and what one earlier
    run cannot see, or for an A/B run the base URL (redacted) in a code span and the words that
    both were measured side by side, interleaved, in this run."""
    if check.kind != "side-by-side":
        if check.history is None:
            return f"{md_escape(check.source)}; {md_escape(ONE_EARLIER_RUN)}"
        return md_escape(check.source)
    if not check.base_request:
        return (
            f"the base endpoint {md_url(check.source)}, measured side by side with the head in "
            "this run (the same request, the calls of the two interleaved)"
        )
    changes = md_text("; ".join(check.base_request))
    where = (
        "the head's endpoint"
        if check.source == ", ".join(check.base_request)
        else f"the base endpoint {md_url(check.source)}"
    )
    return (
        f"{where} asked its own request ({changes}), measured side by side with the head in "
        "this run (the same prompts, the calls of the two interleaved)"
    )


def origins_text(check: BaselineCheck, show: Callable[[str], str]) -> str:
    """Which origin each side measured, when the runs held against measured another (a pull
    request's preview against main's runs of production), each origin written by `show`; ""
    when they measured this run's."""
    if not check.base_origins or check.head_origin is None:
        return ""
    base = "the history's runs" if check.history is not None else "the baseline run"
    return (
        f"This run measured {show(check.head_origin)}; {base} measured "
        f"{', '.join(show(origin) for origin in check.base_origins)}: the same request (path, "
        "method, body and settings) at another origin"
    )
