"""The terminal report: the verdict first, then a small table a person reads in two seconds."""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.assess.cheapest import compare_targets, in_cost_order
from latency_gate.formatting import clean_text, fmt_duration
from latency_gate.models import RunResult
from latency_gate.report.chain import terminal_chain
from latency_gate.report.deltas import regression_limit_text
from latency_gate.report.view import (
    NUMBER_LABELS,
    STAMP_SOURCES,
    Row,
    TargetView,
    target_view,
    union_numbers,
)

__all__ = ["failed_call_kinds", "render_terminal"]

_ANSI = {"PASS": "\x1b[32m", "FAIL": "\x1b[31m"}
_RESET = "\x1b[0m"


def _paint(text: str, word: str, color: bool) -> str:
    return f"{_ANSI[word]}{text}{_RESET}" if color and word in _ANSI else text


def _terminal_cell(row: Row | None) -> str:
    """A side-by-side cell: the value, and for a gated number its result and budget."""
    if row is None:
        return "—"
    if row.passed is None:
        return row.value_text
    return f"{row.value_text} {row.word} (≤ {row.limit_text})"


def _terminal_notes(view: TargetView, prefix: str) -> list[str]:
    result = view.result
    lines = []
    if result.interrupted:
        lines.append(
            f"{prefix}interrupted: the numbers cover only the {view.total_calls:,} calls "
            "made before it stopped"
        )
    excluded = result.excluded_from_latency
    if excluded:
        plural = "s" if excluded != 1 else ""
        lines.append(f"{prefix}{excluded:,} failed call{plural} left out of the percentiles")
    lines += [f"{prefix}{line}" for line in failed_call_kinds(result)]
    return lines


def failed_call_kinds(result: RunResult) -> list[str]:
    """Why calls failed: a line per error kind, most frequent first, with its count and the
    first call's message as the example (untrusted text, made one safe line)."""
    kinds: dict[str, list[str | None]] = {}
    for sample in result.samples:
        if sample.error is not None:
            kinds.setdefault(str(sample.error), []).append(sample.error_detail)
    lines = []
    for kind, details in sorted(kinds.items(), key=lambda item: (-len(item[1]), item[0])):
        example = next((d for d in details if d), None)
        text = f"{len(details):,} {kind}"
        if example:
            text += f": {clean_text(example, 160)}"
        lines.append(text)
    return lines


def _one_line(text: str) -> str:
    return clean_text(text, 40)


def _terminal_extras(results: Sequence[RunResult]) -> list[str]:
    """The comparison of targets and the baseline's outcome, a line each, after the table."""
    lines: list[str] = []
    comparison = compare_targets(results)
    if comparison is not None:
        head = comparison.headline(_one_line, _one_line)
        said = ([head] if head else []) + list(comparison.sentences(_one_line, _one_line))
        if said:
            lines.append("")
            lines += said
    several = len(results) > 1
    for result in results:
        check = result.baseline
        if check is None:
            continue
        who = f" for {clean_text(result.display_name, 40)}" if several else ""
        if check.status != "compared":
            text = f"no baseline{who}: {clean_text(check.message)}; regressions not checked"
        elif check.regressions:
            text = f"baseline{who}: {len(check.regressions)} regressed beyond noise"
        else:
            limit = regression_limit_text(check)
            text = f"baseline{who}: no number regressed beyond noise and the {limit} limit"
        if not lines:
            lines.append("")
        lines.append(text)
    return lines


def render_terminal(results: Sequence[RunResult], *, color: bool = False) -> str:
    """Plain text a person reads in two seconds: the verdict first, then a small table.

    One target: number, value, budget, result (PASS, FAIL, or — when not gated). Several: a
    column per target, each cell the value, its result and its budget.
    """
    if not results:
        raise ValueError("no results to report")
    results = in_cost_order(results)
    views = [target_view(result, 0.0) for result in results]
    passed = all(view.result.verdict.passed for view in views)
    word = "PASS" if passed else "FAIL"
    lines: list[str] = []
    table: list[list[tuple[str, str]]] = []  # cells as (text, the word that colors it)
    if len(views) > 1:
        names = [clean_text(view.result.display_name, 40) for view in views]
        failed = sum(not view.result.verdict.passed for view in views)
        head = (
            f"{failed} of {len(views)} targets over budget"
            if failed
            else f"all {len(views)} targets within budget"
        )
        lines.append(f"{_paint(word, word, color)}: {head}")
        for name, view in zip(names, views, strict=True):
            problems = [clean_text(r) for r in view.reasons] + [r.breach for r in view.breaches]
            if problems:
                lines.append(f"  {name}: " + "; ".join(problems))
            lines += _terminal_notes(view, f"  {name}: ")
        table.append([("number", "")] + [(name, "") for name in names])
        by_number = [{row.number: row for row in view.rows} for view in views]
        for number in union_numbers(views):
            label = NUMBER_LABELS.get(number, number.replace("_", " "))
            cells = [(label, "")]
            for rows in by_number:
                row = rows.get(number)
                cells.append((_terminal_cell(row), row.word if row else ""))
            table.append(cells)
        counts = "; ".join(
            f"{name}: {view.phase_counts}" for name, view in zip(names, views, strict=True)
        )
    else:
        view = views[0]
        reasons = [clean_text(reason) for reason in view.reasons]
        breaches = [row.breach for row in view.breaches]
        head = "; ".join(breaches or reasons) or "every gated number within budget"
        lines.append(f"{_paint(word, word, color)}: {head}")
        if breaches:
            lines += [f"  {reason}" for reason in reasons]
        lines += _terminal_notes(view, "  ")
        table.append(
            [("number", ""), ("value", ""), ("95 % interval", ""), ("budget", ""), ("result", "")]
        )
        table += [
            [
                (row.label, ""),
                (row.value_text, ""),
                (row.interval_text, ""),
                (row.limit_text, ""),
                (row.word, row.word.split()[0]),
            ]
            for row in view.rows
        ]
        counts = view.phase_counts
    lines.append("")
    widths = [max(len(cells[i][0]) for cells in table) for i in range(len(table[0]))]
    for cells in table:
        # Pad before painting: escape codes take no room on screen.
        padded = [
            _paint(text if i == len(cells) - 1 else text.ljust(width), word, color)
            for i, ((text, word), width) in enumerate(zip(cells, widths, strict=True))
        ]
        lines.append("  ".join(padded).rstrip())
    lines += _terminal_extras(results)
    terminal_names = [clean_text(view.result.display_name, 40) for view in views]
    lines += terminal_chain(results, terminal_names)
    lines += _findings(results, terminal_names)
    lines.append("")
    lines.append(f"n: {counts} calls. Percentiles: {views[0].result.percentile_method}.")
    for view, name in zip(views, terminal_names, strict=True):
        prefix = f"{name}: " if len(views) > 1 else ""
        lines += [
            f"{prefix}{clean_text(text, 400)}"
            for text in (view.sampling_line, view.error_line)
            if text
        ]
    lines += _terminal_floor(results, terminal_names)
    return "\n".join(lines) + "\n"


def _terminal_floor(results: Sequence[RunResult], names: Sequence[str]) -> list[str]:
    """What the numbers can resolve: the gate's own floor and where its timestamps came from."""
    lines = []
    for result, name in zip(results, names, strict=True):
        prefix = f"{name}: " if len(results) > 1 else ""
        source = STAMP_SOURCES[result.stamp_source]
        if result.ready_after is not None:
            lines.append(
                f"{prefix}waited {fmt_duration(result.ready_after)} for the endpoint to answer "
                "before the cold call"
            )
        if result.floor is None:
            lines.append(f"{prefix}measurement floor: not measured; timestamps: {source}")
            continue
        floor = result.floor
        lines.append(
            f"{prefix}measurement floor: {fmt_duration(floor.concurrent_p95)} at p95 under "
            f"{floor.concurrency} concurrent calls, {fmt_duration(floor.sequential_p50)} at p50 "
            f"one at a time; timestamps: {source}"
        )
    return lines


def _findings(results: Sequence[RunResult], names: Sequence[str]) -> list[str]:
    """Each finding's title (with its target's name when there are several), evidence below it.

    Evidence and titles are ours, built from numbers; still one line each.
    """
    lines: list[str] = []
    for result, name in zip(results, names, strict=True):
        who = f"{name}: " if len(results) > 1 else ""
        for f in result.findings:
            lines += [f"  {who}{f.title}", f"    {f.evidence}"]
    return ["", "findings:", *lines] if lines else []
