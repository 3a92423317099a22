"""The terminal report: the first screen says it all.

First the verdict, how long it took and how many calls it spent, what failed and what stayed
undecided; then the numbers (one target: value, interval, budget, result; several: a column
each) and the comparison of the targets. The detail of a target (what each outcome rules out,
where the time went, findings with their evidence, sampling, errors, the floor) follows for a
failing target only, or for every target with `verbose` (`-v`).
"""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.assess.compare.cheapest import compare_targets, in_cost_order
from latency_gate.formatting import SENTENCE_CAP, clean_text, fmt_duration
from latency_gate.models import RunResult
from latency_gate.report.chain import terminal_chain
from latency_gate.report.deltas import (
    ONE_EARLIER_RUN,
    history_heading,
    no_regression_text,
    origins_text,
    regressed_text,
    what_changed_sentence,
)
from latency_gate.report.load import load_lines
from latency_gate.report.text_lines import WIDTH
from latency_gate.report.text_lines import wrap as _wrap
from latency_gate.report.upgrade import Upgrade, upgrade_of
from latency_gate.report.view import (
    NUMBER_LABELS,
    STAMP_SOURCES,
    Row,
    TargetView,
    target_view,
    time_to_verdict,
    union_numbers,
)

__all__ = ["VERBOSE_HINT", "failed_call_kinds", "render_terminal"]

VERBOSE_HINT = "-v for the detail: where the time went, how many calls and why, errors, the floor."
# Prose wraps here, continued lines indented; the tables do not (a row is read across).

_ANSI = {"PASS": "\x1b[32m", "FAIL": "\x1b[31m"}
_RESET = "\x1b[0m"
_NAME_LIMIT = 40


def _paint(text: str, word: str, color: bool) -> str:
    return f"{_ANSI[word]}{text}{_RESET}" if color and word in _ANSI else text


def _one_line(text: str) -> str:
    return clean_text(text, _NAME_LIMIT)


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


def render_terminal(
    results: Sequence[RunResult], *, color: bool = False, verbose: bool = False, hint: str = ""
) -> str:
    """Plain text whose first screen says it all: the verdict, the numbers, the comparison.

    One target: number, value, 95 % interval, budget, result (PASS, FAIL, or — when not
    gated). Several: a column per target (cheapest first when every target states a price),
    each cell the value, its result and its budget. A failing target's detail follows, every
    target's with `verbose`; `hint` (e.g. VERBOSE_HINT) closes a report that left detail out.
    """
    if not results:
        raise ValueError("no results to report")
    results = in_cost_order(results)
    views = [target_view(result, 0.0) for result in results]
    names = [_one_line(view.result.display_name) for view in views]
    several = len(views) > 1
    # One run of two requests (a model against another) is said as an upgrade (report/upgrade.py).
    upgrade = None if several else upgrade_of(views[0].result, views[0].problems)
    lines = _verdict(views, names, color) if upgrade is None else _upgrade(views[0], upgrade, color)
    lines += ["", *_table(views, names, color)]
    lines += _comparison(results)
    lines += _baselines(results, names, upgrade)
    lines += [] if upgrade is not None else _costs(views, names)
    lines += _loads(views, names, verbose=verbose)
    detailed = [verbose or not view.result.verdict.passed for view in views]
    # The findings of a target whose detail is not shown: with several targets their titles (the
    # evidence is detail), with one its evidence too (there is room on the screen).
    found: list[str] = []
    for view, name, shown in zip(views, names, detailed, strict=True):
        for finding in [] if shown else view.result.findings:
            found += _wrap(f"{name + ': ' if several else ''}{clean_text(finding.title)}", "  ")
            if not several:
                found += _wrap(clean_text(finding.evidence, SENTENCE_CAP), "    ")
    if found:
        lines += ["", "findings:", *found]
    if verbose and several:
        lines += terminal_chain(results, names)
    for view, name, shown in zip(views, names, detailed, strict=True):
        if shown:
            lines += _detail(view, name if several else "", verbose=verbose)
    if hint and not all(detailed):
        lines += ["", hint]
    return "\n".join(lines) + "\n"


def _one_line_long(text: str) -> str:
    return clean_text(text, SENTENCE_CAP)


def _verdict(views: Sequence[TargetView], names: Sequence[str], color: bool) -> list[str]:
    """The first lines: the verdict with what failed, the time to the verdict, what stayed
    undecided, and an interrupted run said as such."""
    passed = all(view.result.verdict.passed for view in views)
    word = "PASS" if passed else "FAIL"
    several = len(views) > 1
    if several:
        failed = sum(not view.result.verdict.passed for view in views)
        head = (
            f"{failed} of {len(views)} targets over budget"
            if failed
            else f"all {len(views)} targets within budget"
        )
        more: list[str] = []
    else:
        problems = [_one_line_long(p) for p in views[0].problems]
        head = "; ".join(problems) or "every gated number within budget"
        more = []
        if len(word) + 2 + len(head) > WIDTH:  # then a problem a line
            head, more = problems[0], problems[1:]
    # Wrapped before painting: the escape codes take no room on screen.
    first = _wrap(f"{word}: {head}")
    first[0] = _paint(word, word, color) + first[0][len(word) :]
    lines = first + [line for problem in more for line in _wrap(problem, "  ")]
    lines.append(f"  {time_to_verdict(views)}.")
    for view, name in zip(views, names, strict=True):
        who = f"{name}: " if several else ""
        if several and view.problems:
            lines += _wrap(who + "; ".join(_one_line_long(p) for p in view.problems), "  ")
        for item in view.result.verdict.undecided:
            text = f"{who}undecided, without failing the run: {_one_line_long(item)}"
            lines += _wrap(text, "  ")
        if view.result.interrupted:
            lines += _wrap(
                f"{who}interrupted: the numbers cover only the {view.total_calls:,} calls "
                "made before it stopped",
                "  ",
            )
    return lines


def _upgrade(view: TargetView, upgrade: Upgrade, color: bool) -> list[str]:
    """The first lines of a run of two requests: the verdict line naming the candidate and the
    base ("candidate gpt-b: FAIL: warm p95 31 % slower (...) than gpt-a"), what else failed it,
    what changed, the cost; then the time to the verdict and what stayed undecided."""
    lead = f"{clean_text(upgrade.lead)}: "
    first = _wrap(lead + _one_line_long(upgrade.outcome))
    word = "PASS" if upgrade.passed else "FAIL"
    if first[0].startswith(lead + word):  # painted after wrapping: escape codes take no room
        first[0] = lead + _paint(word, word, color) + first[0][len(lead + word) :]
    lines = first + [line for text in upgrade.more for line in _wrap(_one_line_long(text), "  ")]
    if upgrade.changed:
        lines += _wrap(f"what changed: {clean_text(upgrade.changed)}", "  ")
    if upgrade.costs:
        lines += _wrap(f"cost: {upgrade.costs[0]}", "  ")
        lines += [line for more in upgrade.costs[1:] for line in _wrap(more, "    ")]
    lines.append(f"  {time_to_verdict([view])}.")
    for item in view.result.verdict.undecided:
        lines += _wrap(f"undecided, without failing the run: {_one_line_long(item)}", "  ")
    if view.result.interrupted:
        lines += _wrap(
            f"interrupted: the numbers cover only the {view.total_calls:,} calls made before "
            "it stopped",
            "  ",
        )
    return lines


def _cell(row: Row | None) -> tuple[str, str]:
    """A side-by-side cell: the value, and for a gated number its result and budget."""
    if row is None:
        return "—", ""
    if row.passed is None:
        return row.value_text, ""
    return f"{row.value_text} {row.word} ({row.budget_text})", row.word.split()[0]


def _table(views: Sequence[TargetView], names: Sequence[str], color: bool) -> list[str]:
    table: list[list[tuple[str, str]]] = []  # cells as (text, the word that colors it)
    if len(views) > 1:
        table.append([("number", "")] + [(name, "") for name in names])
        by_number = [{row.number: row for row in view.rows} for view in views]
        for number in union_numbers(views):
            label = NUMBER_LABELS.get(number, number.replace("_", " "))
            table.append([(label, "")] + [_cell(rows.get(number)) for rows in by_number])
    else:
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
            for row in views[0].rows
        ]
    widths = [max(len(cells[i][0]) for cells in table) for i in range(len(table[0]))]
    lines = []
    for cells in table:
        # Pad before painting: escape codes take no room on screen.
        padded = [
            _paint(text if i == len(cells) - 1 else text.ljust(width), word, color)
            for i, ((text, word), width) in enumerate(zip(cells, widths, strict=True))
        ]
        lines.append("  ".join(padded).rstrip())
    return lines


def _comparison(results: Sequence[RunResult]) -> list[str]:
    comparison = compare_targets(results)
    if comparison is None:
        return []
    head = comparison.headline(_one_line, _one_line)
    said = ([head] if head else []) + list(comparison.sentences(_one_line, _one_line))
    return ["", *(line for sentence in said for line in _wrap(sentence))] if said else []


def _baselines(
    results: Sequence[RunResult], names: Sequence[str], upgrade: Upgrade | None = None
) -> list[str]:
    """The baseline's outcome, a line per target that has one; an upgrade's named by its
    candidate and base, what changed said with its verdict."""
    lines: list[str] = []
    for result, name in zip(results, names, strict=True):
        check = result.baseline
        if check is None:
            continue
        who = f" for {name}" if len(results) > 1 else ""
        judged = None if check.history is None else check.history.judged
        if check.status != "compared":
            what = "baseline" if judged is None else "history"
            text = f"no {what}{who}: {_one_line_long(check.message)}; regressions not checked"
        elif judged == "prediction":
            found = (
                regressed_text(check, "the runs' spread")
                if check.regressions
                else no_regression_text(check, "the runs' spread")
            )
            text = f"{history_heading(check)}{who}: {found}"
        elif check.kind == "side-by-side":
            # A number with nothing to compare with is said apart, a regression by policy or not.
            regressed = [d for d in check.regressions if not d.missing]
            found = (
                f"{len(regressed)} regressed beyond noise"
                if regressed
                else no_regression_text(check, "noise")
            )
            if check.not_compared:
                found = f"not compared: {check.not_compared}; of the rest, {found}"
            asked = clean_text("; ".join(check.base_request))
            asked = f" ({asked})" if asked else ""
            text = f"against the base{asked} measured beside it{who}: {found}"
            if upgrade is not None:
                text = f"{_one_line_long(upgrade.against)}, measured side by side: {found}"
        elif check.regressions:
            text = f"baseline{who}: {regressed_text(check, 'noise')}"
        else:
            text = f"baseline{who}: {no_regression_text(check, 'noise')}"
        if check.not_compared and check.kind != "side-by-side":
            text += f"; not compared: {check.not_compared}"
        if judged == "newest":
            text += f"; {_one_line_long(check.message)}"
        lines += _wrap(text)
        changed = what_changed_sentence(check)
        if changed and check.status == "compared" and upgrade is None:
            lines += _wrap(f"  what changed: {clean_text(changed)}")
        if check.status == "compared" and judged is None and check.kind != "side-by-side":
            lines += _wrap(f"  {ONE_EARLIER_RUN}")
        if check.status == "compared" and (origins := origins_text(check, clean_text)):
            lines += _wrap(origins, "  ")
    return ["", *lines] if lines else []


def _costs(views: Sequence[TargetView], names: Sequence[str]) -> list[str]:
    """What each priced target's answers cost (report/cost.py), a block per target."""
    lines: list[str] = []
    for view, name in zip(views, names, strict=True):
        said = view.cost_lines
        if not said:
            continue
        lines += _wrap(f"cost{f' of {name}' if len(views) > 1 else ''}: {said[0]}")
        lines += [line for more in said[1:] for line in _wrap(more, "  ")]
    return ["", *lines] if lines else []


def _loads(views: Sequence[TargetView], names: Sequence[str], *, verbose: bool) -> list[str]:
    """The capacity of each target that searched it, then each target's calls at a rate
    (report/load.py draws each)."""
    lines: list[str] = []
    several = len(views) > 1
    for kind in ("capacity", "goodput"):
        for view, name in zip(views, names, strict=True):
            load = view.capacity if kind == "capacity" else view.goodput
            if load is None:
                continue
            failed = any(row.number in load.numbers and row.passed is False for row in view.rows)
            lines += load_lines(load, name, several=several, verbose=verbose, failed=failed)
    return lines


def _detail(view: TargetView, name: str, *, verbose: bool) -> list[str]:
    """One target's detail: what the outcomes rule out (a failing check's, or every one with
    `verbose`), where the time went, findings with evidence, counts, sampling, errors, the
    floor. Under a heading with the target's name when there are several."""
    result = view.result
    pad = "  " if name else ""
    lines = [""]
    if name:
        lines.append(f"{name} ({result.verdict.label}):")
    for row in view.rows:
        if row.number in ("capacity", "goodput", "rate_p95"):
            continue  # said with their own lines
        if row.meaning and (verbose or row.passed is False):
            lines += _wrap(f"{row.label}: {_one_line_long(row.meaning)}", pad)
    lines += terminal_chain([result], [name], indent=pad)[1:]  # its blank line is the one above
    if result.findings:
        lines += ["", f"{pad}findings:"]
        for finding in result.findings:
            lines += _wrap(clean_text(finding.title), pad + "  ")
            lines += _wrap(clean_text(finding.evidence, SENTENCE_CAP), pad + "    ")
    prose = [
        f"n: {view.phase_counts} calls. Percentiles: {result.percentile_method}.",
        *(_one_line_long(text) for text in (view.sampling_line, view.error_line) if text),
    ]
    excluded = result.excluded_from_latency
    if excluded:
        prose.append(
            f"{excluded:,} failed call{'s' if excluded != 1 else ''} left out of the percentiles"
        )
    if lines[-1]:
        lines.append("")
    for text in prose:
        lines += _wrap(text, pad)
    for text in failed_call_kinds(result):  # under the Errors line, which counts them
        lines += _wrap(text, pad + "  ")
    for text in _floor(result):
        lines += _wrap(text, pad)
    return lines


def _floor(result: RunResult) -> list[str]:
    """What the numbers can resolve: the gate's own floor and where its timestamps came from."""
    lines = []
    source = STAMP_SOURCES[result.stamp_source]
    if result.ready_after is not None:
        lines.append(
            f"waited {fmt_duration(result.ready_after)} for the endpoint to answer "
            "before the cold call"
        )
    if result.floor is None:
        return [*lines, f"measurement floor: not measured; timestamps: {source}"]
    floor = result.floor
    lines.append(
        f"measurement floor: {fmt_duration(floor.concurrent_p95)} at p95 under "
        f"{floor.concurrency} concurrent calls, {fmt_duration(floor.sequential_p50)} at p50 "
        f"one at a time; timestamps: {source}"
    )
    return lines
