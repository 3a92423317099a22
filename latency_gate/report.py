"""Reports: the Jinja environment, its filters, and a renderer for each place a run is shown.

Markdown goes where GitHub renders it (the job summary, a PR comment). Every string that an
endpoint or a user supplied (error details, target names, URLs, header values, evidence) passes
through `md_escape` in the templates, so it cannot break a table, open an HTML tag, fake our
hidden comment marker, or notify anyone.

Sizes: GitHub drops a step summary over 1 MiB whole and refuses a comment over 65,536
characters. The renderers measure UTF-8 bytes (never fewer than characters) and cut, in order,
the raw samples, then whole sections, then the tail, saying what was cut.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import jinja2

from latency_gate.models import CallPhase, ErrorKind, PhaseStats, RunResult, Sample, StampSource

__all__ = [
    "environment",
    "fmt_duration",
    "fmt_percent",
    "md_escape",
    "render_comment",
    "render_markdown",
    "render_summary",
    "render_terminal",
]

SUMMARY_LIMIT = 1_000_000
COMMENT_LIMIT = 65_000
ESCAPE_CAP = 300

NUMBER_LABELS = {
    "cold_start": "cold start",
    "warm_p50": "warm p50",
    "warm_p95": "warm p95",
    "concurrent_p95": "concurrent p95",
    "error_rate": "error rate",
    "ttft_p95": "first-token p95",
}
_FIVE = ("cold_start", "warm_p50", "warm_p95", "concurrent_p95", "error_rate")

BOUNDARY_LABELS = {
    "dns": "DNS",
    "connect": "TCP connect",
    "tls": "TLS",
    "request_sent": "request sent",
    "headers": "response headers (TTFB)",
    "first_byte": "first body byte",
    "first_token": "first token",
    "last_byte": "last byte",
}

# The chart's segments: glyph, legend, and the boundary that ends the segment.
CHART_SEGMENTS = (
    ("░", "connect", "connect"),
    ("▒", "TLS", "tls"),
    ("█", "waiting for headers", "headers"),
    ("▓", "headers → first byte", "first_byte"),
    ("▄", "first byte → first token", "first_token"),
    ("─", "rest of the body", "last_byte"),
)
CHART_WIDTH = 48

STAMP_SOURCES = {
    StampSource.KERNEL: "the kernel's receive timestamps (SO_TIMESTAMPNS)",
    StampSource.READ_RETURN: "the moment each socket read returned (portable fallback)",
}

SUMMARY_CUT_NOTE = "cut to fit GitHub's 1 MiB summary limit"
COMMENT_CUT_NOTE = "cut to fit GitHub's 65,536-character comment limit"
# Sections dropped whole, in this order, when raw samples alone do not bring a report under
# its limit. "details" is every per-target section but the numbers.
SUMMARY_SECTIONS = ("settings", "errors", "phases", "findings", "details")
COMMENT_SECTIONS = ("findings",)


# --- filters ---------------------------------------------------------------------------------


def fmt_duration(seconds: float | None) -> str:
    """A duration for people: "—" for None.

    Under 1 ms (after rounding to 0.1 ms): one decimal ("0.4 ms"); under 1 s: whole
    milliseconds ("850 ms"); under 10 s: two decimals ("1.23 s"); under 100 s: one ("12.3 s");
    beyond: whole seconds ("123 s"). A value that rounds up to the next unit moves to it.
    """
    if seconds is None or math.isnan(seconds):
        return "—"
    ms = seconds * 1000
    tenths = f"{ms:.1f}"
    if abs(float(tenths)) < 1:
        return f"{tenths} ms"
    if abs(round(ms)) < 1000:
        return f"{round(ms)} ms"
    if abs(round(seconds, 2)) < 10:
        return f"{seconds:.2f} s"
    if abs(round(seconds, 1)) < 100:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s"


def fmt_percent(fraction: float | None) -> str:
    """A fraction as a percentage with one decimal and a space: 0.032 -> "3.2 %"."""
    if fraction is None or math.isnan(fraction):
        return "—"
    return f"{fraction * 100:.1f} %"


_WHITESPACE = re.compile(r"\s+")
# Control, format (bidi overrides, zero-width), private-use and lone surrogate code points.
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})
_ZWJ = "\u200d"
_ESCAPES = {
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "~": "\\~",
    "[": "\\[",
    "]": "\\]",
    "|": "\\|",
    "&": "&amp;",  # so "&#35;123" or "&lt;" arrive as text, not as # or <
    "<": "&lt;",  # no tag, no HTML comment, no copy of our marker
    ">": "&gt;",
    # GitHub links #123 and notifies @name in rendered text; a zero-width joiner breaks both.
    "#": "#" + _ZWJ,
    "@": "@" + _ZWJ,
}


def clean_text(text: str, limit: int = ESCAPE_CAP) -> str:
    """Untrusted text on one line: white space runs become one space, control and format
    characters go, and anything past `limit` characters becomes "…"."""
    one_line = _WHITESPACE.sub(" ", text).strip()
    kept = "".join(ch for ch in one_line if unicodedata.category(ch) not in _DROPPED_CATEGORIES)
    if len(kept) > limit:
        return kept[:limit].rstrip() + "…"
    return kept


def md_escape(text: str, limit: int = ESCAPE_CAP) -> str:
    """Untrusted text made safe inside a Markdown table cell and in prose.

    One line (see `clean_text`), at most `limit` characters before escaping; Markdown
    punctuation backslash-escaped (the pipe too, so a table keeps its cells); `& < >` as HTML
    entities (no tag, no HTML comment can open); `#` and `@` followed by a zero-width joiner so
    GitHub neither links an issue nor notifies anyone.
    """
    return "".join(_ESCAPES.get(ch, ch) for ch in clean_text(text, limit))


def _md_filter(value: object) -> str:
    return "—" if value is None else md_escape(str(value))


def fmt_value(value: float | None, number: str) -> str:
    """A number's value in its unit: a percentage for rates, a duration for the rest."""
    return fmt_percent(value) if number.endswith("rate") else fmt_duration(value)


@functools.cache
def environment() -> jinja2.Environment:
    """The Jinja environment for the Markdown templates shipped in the package.

    Autoescape is off (the output is Markdown, not HTML); untrusted strings go through the `md`
    filter instead. StrictUndefined turns a misspelt variable into an error, not a blank.
    """
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("latency_gate", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # noqa: S701 - Markdown; untrusted text is escaped by the md filter
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = _md_filter
    env.filters["duration"] = fmt_duration
    env.filters["percent"] = fmt_percent
    env.filters["value"] = fmt_value
    env.filters["thousands"] = lambda n: f"{n:,}"
    return env


# --- what the templates show -----------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One number against its budget, as a report row."""

    number: str
    value: float | None
    limit: float | None
    passed: bool | None
    note: str
    n: int

    @property
    def label(self) -> str:
        return NUMBER_LABELS.get(self.number, self.number.replace("_", " "))

    @property
    def value_text(self) -> str:
        return fmt_value(self.value, self.number)

    @property
    def limit_text(self) -> str:
        return fmt_value(self.limit, self.number)

    @property
    def word(self) -> str:
        """PASS, FAIL, or "—" for a number that is reported, not gated."""
        return {True: "PASS", False: "FAIL", None: "—"}[self.passed]

    @property
    def mark(self) -> str:
        return {True: "✅ PASS", False: "❌ FAIL", None: "reported"}[self.passed]

    @property
    def breach(self) -> str:
        """What went wrong, for a failed row: "warm p95 3.41 s, over its 3.00 s budget"."""
        if self.value is None:
            return f"{self.label}: no data"
        return f"{self.label} {self.value_text}, over its {self.limit_text} budget"


@dataclass(frozen=True)
class ErrorGroup:
    kind: str
    count: int
    example: str | None


@dataclass(frozen=True)
class BoundaryRow:
    label: str
    cells: tuple[PhaseStats | None, ...]


@dataclass(frozen=True)
class TargetView:
    """One RunResult prepared for the templates: rows, counts, groups, chart."""

    result: RunResult
    rows: tuple[Row, ...]
    calls: Mapping[str, tuple[int, int]]  # call phase -> (calls, successful)
    retries: int
    errors: tuple[ErrorGroup, ...]
    phase_columns: tuple[str, ...]
    boundary_rows: tuple[BoundaryRow, ...]
    chart: tuple[str, ...]
    settings: tuple[tuple[str, str], ...]
    started: str
    duration: float

    @property
    def breaches(self) -> tuple[Row, ...]:
        return tuple(row for row in self.rows if row.passed is False)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Verdict reasons a reader needs beside the breached rows: "no data", or every reason
        when a failed verdict has no breached row to explain it. Untrusted: escape them."""
        verdict = self.result.verdict
        no_data = tuple(r for r in verdict.reasons if r.startswith("no data"))
        if not verdict.passed and not no_data and not self.breaches:
            return verdict.reasons
        return no_data

    @property
    def total_calls(self) -> int:
        return len(self.result.samples)

    @property
    def phase_counts(self) -> str:
        """Successful calls per phase: "1 cold, 20 warm, 10 concurrent"; "19 of 20 warm" when
        some failed."""
        parts = []
        for phase in CallPhase:
            calls, ok = self.calls.get(phase.value, (0, 0))
            if calls:
                parts.append(
                    f"{ok:,} {phase.value}" if ok == calls else f"{ok:,} of {calls:,} {phase.value}"
                )
        return ", ".join(parts) or "no calls"


def _rows(result: RunResult) -> tuple[Row, ...]:
    ok = [s for s in result.samples if s.ok]
    n = {
        "cold_start": sum(s.phase is CallPhase.COLD for s in ok),
        "warm_p50": sum(s.phase is CallPhase.WARM for s in ok),
        "warm_p95": sum(s.phase is CallPhase.WARM for s in ok),
        "concurrent_p95": sum(s.phase is CallPhase.CONCURRENT for s in ok),
        "error_rate": len(result.samples),
        "ttft_p95": sum(
            s.phase is not CallPhase.COLD and s.timings.first_token is not None for s in ok
        ),
    }
    checks = {check.number: check for check in result.verdict.checks}
    numbers = result.numbers.model_dump()
    wanted = list(_FIVE)
    if "ttft_p95" in checks or result.numbers.ttft_p95 is not None:
        wanted.append("ttft_p95")
    wanted += [number for number in checks if number not in wanted]
    rows = []
    for number in wanted:
        check = checks.get(number)
        rows.append(
            Row(
                number=number,
                value=check.value if check else numbers.get(number),
                limit=check.limit if check else None,
                passed=check.passed if check else None,
                note=check.note if check else "",
                n=n.get(number, len(ok)),
            )
        )
    return tuple(rows)


def _errors(samples: Sequence[Sample]) -> tuple[ErrorGroup, ...]:
    counts: dict[ErrorKind, int] = {}
    examples: dict[ErrorKind, str | None] = {}
    for sample in samples:
        if sample.ok:
            continue
        kind = sample.error or ErrorKind.OTHER
        counts[kind] = counts.get(kind, 0) + 1
        if examples.get(kind) is None:
            examples[kind] = sample.error_detail or None
    order = list(ErrorKind)
    ranked = sorted(counts, key=lambda kind: (-counts[kind], order.index(kind)))
    return tuple(ErrorGroup(kind.value, counts[kind], examples[kind]) for kind in ranked)


def _phase_table(result: RunResult) -> tuple[tuple[str, ...], tuple[BoundaryRow, ...]]:
    columns = tuple(p.value for p in CallPhase if result.phases.get(p.value))
    rows = []
    for boundary, label in BOUNDARY_LABELS.items():
        cells = tuple(result.phases[column].get(boundary) for column in columns)
        if any(cell is not None and cell.n for cell in cells):
            rows.append(BoundaryRow(label, cells))
    return columns, tuple(rows)


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


def _chart_scale(results: Sequence[RunResult]) -> float:
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


def _chart(result: RunResult, scale: float) -> tuple[str, ...]:
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


def _setting_text(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return "; ".join(_setting_text(item) for item in value) or "—"
    if isinstance(value, dict):
        return ", ".join(f"{key}: {_setting_text(item)}" for key, item in value.items()) or "—"
    return str(value)


_DURATION_SETTINGS = frozenset({"timeout", "idle"})


def _settings(config: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    # The budget has its own table; the name is the section's heading.
    return tuple(
        (
            key.replace("_", " "),
            fmt_duration(value)
            if key in _DURATION_SETTINGS and isinstance(value, int | float)
            else _setting_text(value),
        )
        for key, value in config.items()
        if key not in {"budget", "name"}
    )


def target_view(result: RunResult, scale: float) -> TargetView:
    calls: dict[str, tuple[int, int]] = {}
    for sample in result.samples:
        total, ok = calls.get(sample.phase.value, (0, 0))
        calls[sample.phase.value] = (total + 1, ok + sample.ok)
    columns, boundary_rows = _phase_table(result)
    return TargetView(
        result=result,
        rows=_rows(result),
        calls=calls,
        retries=sum(s.retries for s in result.samples),
        errors=_errors(result.samples),
        phase_columns=columns,
        boundary_rows=boundary_rows,
        chart=_chart(result, scale),
        settings=_settings(result.config),
        started=datetime.fromtimestamp(result.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        duration=max(0.0, result.finished_at - result.started_at),
    )


def _union_labels(views: Sequence[TargetView]) -> list[str]:
    numbers: list[str] = []
    for view in views:
        numbers += [row.number for row in view.rows if row.number not in numbers]
    return numbers


def _context(results: Sequence[RunResult]) -> dict[str, object]:
    if not results:
        raise ValueError("no results to report")
    scale = _chart_scale(results)
    views = [target_view(result, scale) for result in results]
    passing = [view for view in views if view.result.verdict.passed]
    return {
        "views": views,
        "several": len(views) > 1,
        "passed": len(passing) == len(views),
        "failed_count": len(views) - len(passing),
        "numbers": _union_labels(views),
        "labels": NUMBER_LABELS,
        "scale": scale,
        "segments": CHART_SEGMENTS,
        "stamp_sources": STAMP_SOURCES,
    }


# --- renderers -------------------------------------------------------------------------------


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _truncate(text: str, limit: int, note: str) -> str:
    """The head of `text` that fits with `note` after it, cut at a line end."""
    tail = f"\n\n_… the rest of this report was {note}._\n"
    budget = limit - _size(tail)
    head = text.encode("utf-8")[: max(budget, 0)].decode("utf-8", "ignore")
    head = head[: head.rfind("\n")] if "\n" in head else ""
    return head + tail


def _fit(
    template: jinja2.Template,
    context: dict[str, object],
    *,
    limit: int,
    sections: Sequence[str],
    note: str,
    samples: int = 0,
    targets: int = 1,
) -> str:
    """Render, cutting raw samples (as few as possible), then whole sections, then the tail."""
    cut: list[str] = []
    text = template.render(context, cut=cut, sample_cap=None, note=note)
    if _size(text) <= limit:
        return text
    if samples:
        without = template.render(context, cut=cut, sample_cap=0, note=note)
        per_sample = max(1.0, (_size(text) - _size(without)) / samples)
        cap = int((limit - _size(without)) / per_sample * 0.98) // targets
        text = without
        # The estimate is close; each miss shrinks the cap by a fifth, a few renders at most.
        while cap > 0:
            attempt = template.render(context, cut=cut, sample_cap=cap, note=note)
            if _size(attempt) <= limit:
                return attempt
            cap = int(cap * 0.8)
        if _size(text) <= limit:
            return text
    cut.append("samples")
    for section in sections:
        cut.append(section)
        text = template.render(context, cut=cut, sample_cap=0, note=note)
        if _size(text) <= limit:
            return text
    return _truncate(text, limit, note)


def render_summary(results: Sequence[RunResult], *, limit: int = SUMMARY_LIMIT) -> str:
    """The job summary: verdict, numbers per target, where the time went, findings, samples.

    At most `limit` UTF-8 bytes: raw samples are cut first (with a note), then whole sections.
    Raises ValueError for an empty `results`.
    """
    context = _context(results)
    template = environment().get_template("summary.md.j2")
    return _fit(
        template,
        context,
        limit=limit,
        sections=SUMMARY_SECTIONS,
        note=SUMMARY_CUT_NOTE,
        samples=sum(len(result.samples) for result in results),
        targets=len(results),
    )


def render_markdown(results: Sequence[RunResult]) -> str:
    """The `--markdown` report file: the job summary, so both read the same."""
    return render_summary(results)


_MARKER = re.compile(r"<!--(?:(?!--).)*-->", re.DOTALL)


def render_comment(results: Sequence[RunResult], *, marker: str, limit: int = COMMENT_LIMIT) -> str:
    """The PR comment: `marker` (a hidden HTML comment) first, then the compact report.

    At most `limit` UTF-8 bytes. Raises ValueError when `marker` is not one HTML comment.
    """
    if not _MARKER.fullmatch(marker):
        raise ValueError(f"the comment marker must be one HTML comment, got {marker!r}")
    context = _context(results)
    context["marker"] = marker
    template = environment().get_template("comment.md.j2")
    return _fit(template, context, limit=limit, sections=COMMENT_SECTIONS, note=COMMENT_CUT_NOTE)


# --- terminal --------------------------------------------------------------------------------

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
    return lines


def render_terminal(results: Sequence[RunResult], *, color: bool = False) -> str:
    """Plain text a person reads in two seconds: the verdict first, then a small table.

    One target: number, value, budget, result (PASS, FAIL, or — when not gated). Several: a
    column per target, each cell the value, its result and its budget.
    """
    if not results:
        raise ValueError("no results to report")
    views = [target_view(result, 0.0) for result in results]
    passed = all(view.result.verdict.passed for view in views)
    word = "PASS" if passed else "FAIL"
    lines: list[str] = []
    table: list[list[tuple[str, str]]] = []  # cells as (text, the word that colors it)
    if len(views) > 1:
        names = [clean_text(view.result.target, 40) for view in views]
        failed = sum(not view.result.verdict.passed for view in views)
        head = f"{failed} of {len(views)} targets over budget" if failed else "all within budget"
        lines.append(f"{_paint(word, word, color)}: {head}")
        for name, view in zip(names, views, strict=True):
            problems = [clean_text(r) for r in view.reasons] + [r.breach for r in view.breaches]
            if problems:
                lines.append(f"  {name}: " + "; ".join(problems))
            lines += _terminal_notes(view, f"  {name}: ")
        table.append([("number", "")] + [(name, "") for name in names])
        by_number = [{row.number: row for row in view.rows} for view in views]
        for number in _union_labels(views):
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
        table.append([("number", ""), ("value", ""), ("budget", ""), ("result", "")])
        table += [
            [(row.label, ""), (row.value_text, ""), (row.limit_text, ""), (row.word, row.word)]
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
    lines.append("")
    lines.append(f"n: {counts} calls. Percentiles: {views[0].result.percentile_method}.")
    return "\n".join(lines) + "\n"
