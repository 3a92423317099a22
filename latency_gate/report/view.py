"""What the report templates show: each RunResult turned into rows, counts, groups and a chart.

Pure functions of the results; the templates decide layout, these decide content. Strings here
that came from an endpoint or a user stay raw: the templates escape them with the md filter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from latency_gate.assess.checks import budget_meaning
from latency_gate.assess.intervals import error_rate_interval
from latency_gate.assess.timeline import CHAIN_LABELS
from latency_gate.formatting import (
    fmt_duration,
    fmt_interval,
    fmt_value,
    fmt_value_beside,
)
from latency_gate.models import (
    CallPhase,
    ErrorKind,
    PhaseStats,
    RunResult,
    Sample,
    StampSource,
)
from latency_gate.report.chain import chart_lines

NUMBER_LABELS = {
    "cold_start": "cold start",
    "warm_p50": "warm p50",
    "warm_p95": "warm p95",
    "concurrent_p95": "concurrent p95",
    "error_rate": "error rate",
    "ttft_p95": "first-token p95",
    # At most 15 characters, as wide as "first-token p95": the terminal's columns stay put.
    "ttft_warm_p95": "warm ttft p95",
    "ttft_concurrent_p95": "conc. ttft p95",
    "itl_p95": "inter-token p95",
    "longest_stall": "longest stall",
}
# Streamed runs only: shown when measured, never gated (yet).
_TOKEN_TIMING = ("ttft_warm_p95", "ttft_concurrent_p95", "itl_p95", "longest_stall")
_FIVE = ("cold_start", "warm_p50", "warm_p95", "concurrent_p95", "error_rate")

STAMP_SOURCES = {
    StampSource.KERNEL: "the kernel's receive timestamps (SO_TIMESTAMPNS)",
    StampSource.READ_RETURN: "the moment each socket read returned (portable fallback)",
}


@dataclass(frozen=True)
class Row:
    """One number against its budget, as a report row."""

    number: str
    value: float | None
    limit: float | None
    passed: bool | None
    note: str
    n: int
    interval: tuple[float | None, float | None] | None = None
    by_policy: bool = False
    decided: bool = True

    @property
    def label(self) -> str:
        return NUMBER_LABELS.get(self.number, self.number.replace("_", " "))

    @property
    def value_text(self) -> str:
        return fmt_value_beside(self.value, self.limit, self.number)

    @property
    def limit_text(self) -> str:
        return fmt_value(self.limit, self.number)

    @property
    def interval_text(self) -> str:
        """The 95 % interval: "50 ms to 65 ms", "≥ 72 ms" (one side bounded), or "—"."""
        return fmt_interval(self.interval, self.number)

    @property
    def word(self) -> str:
        """PASS, FAIL, or "—" for a number that is reported, not gated; "undecided" said."""
        if self.passed is None and not self.decided:
            return "undecided"
        word = {True: "PASS", False: "FAIL", None: "—"}[self.passed]
        return f"{word} (undecided)" if self.by_policy else word

    @property
    def mark(self) -> str:
        if self.passed is None and not self.decided:
            return "undecided (not needed)"
        mark = {True: "✅ PASS", False: "❌ FAIL", None: "reported"}[self.passed]
        return f"⚠️ undecided → {mark}" if self.by_policy else mark

    @property
    def breach(self) -> str:
        """What went wrong, for a failed row: "warm p95 3.41 s, over its 3.00 s budget"."""
        if self.value is None:
            return f"{self.label}: no data"
        if self.by_policy:
            return (
                f"{self.label} {self.value_text}: undecided against its {self.limit_text} "
                "budget when sampling stopped, failed by policy"
            )
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


def _humane(text: str) -> str:
    """Number keys in a sentence as readers know them: warm_p95 -> warm p95."""
    for key, label in NUMBER_LABELS.items():
        text = text.replace(key, label)
    return text


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
        no_data = tuple(r for r in verdict.reasons if r.startswith(("no data", "regression:")))
        if not verdict.passed and not no_data and not self.breaches:
            return verdict.reasons
        return no_data

    @property
    def sampling_line(self) -> str:
        """How many calls were made and why: "Sampling: 131 calls in 3 looks (the first 31,
        then 100 more while warm p95 was undecided); stopped: every gated check is decided
        (cap 300 calls)." "" for a result without sampling (an older file)."""
        sampling = self.result.sampling
        if sampling is None:
            return ""
        total = sampling.first_look_calls + sampling.extra_calls
        if sampling.looks <= 1:
            text = f"Sampling: {total:,} calls in one look"
        else:
            why = (
                _humane(sampling.reasons[0].removeprefix("undecided: ")) if sampling.reasons else ""
            )
            text = (
                f"Sampling: {total:,} calls in {sampling.looks} looks (the first "
                f"{sampling.first_look_calls:,}, then {sampling.extra_calls:,} more"
                + (f" while {why} could not be decided)" if why else ")")
            )
        stopped = _humane(sampling.stopped) if sampling.stopped else "the run ended"
        return f"{text}; stopped: {stopped} (cap {sampling.max_calls:,} calls)."

    @property
    def error_line(self) -> str:
        """ "2 of 91 calls failed (2.2 %); 95 % upper bound 7.7 %", and what the budget means at
        this many calls."""
        failed = sum(not s.ok for s in self.result.samples)
        counts = (
            error_rate_interval(failed, len(self.result.samples)) if self.result.samples else None
        )
        if counts is None:
            return ""
        text = "Errors: " + counts.describe()
        check = next((c for c in self.result.verdict.checks if c.number == "error_rate"), None)
        if check is not None and check.limit is not None:
            text += f". {budget_meaning(len(self.result.samples), check.limit).capitalize()}"
        return text + "."

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
    wanted += [number for number in _TOKEN_TIMING if numbers.get(number) is not None]
    n["ttft_warm_p95"] = sum(
        s.phase is CallPhase.WARM and s.timings.first_token is not None for s in ok
    )
    n["ttft_concurrent_p95"] = sum(
        s.phase is CallPhase.CONCURRENT and s.timings.first_token is not None for s in ok
    )
    n["itl_p95"] = sum(s.phase is not CallPhase.COLD and s.token_gaps is not None for s in ok)
    n["longest_stall"] = sum(s.token_gaps is not None for s in ok)
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
                n=check.n if check and check.n is not None else n.get(number, len(ok)),
                interval=check.interval if check else None,
                by_policy=check.by_policy if check else False,
                decided=check.decided if check else True,
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
    stats = result.chain
    columns = tuple(p.value for p in CallPhase if stats.get(p.value))
    rows = []
    for link, label in CHAIN_LABELS.items():
        cells = tuple(stats[column].get(link) for column in columns)
        if any(cell is not None and cell.n for cell in cells):
            rows.append(BoundaryRow(label, cells))
    return columns, tuple(rows)


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
    # The budget has its own table; the name is the section's heading; the cost note is shown
    # beside the comparison of targets.
    return tuple(
        (
            key.replace("_", " "),
            fmt_duration(value)
            if key in _DURATION_SETTINGS and isinstance(value, int | float)
            else _setting_text(value),
        )
        for key, value in config.items()
        if key not in {"budget", "name", "cost"}
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
        chart=chart_lines(result, scale),
        settings=_settings(result.config),
        started=datetime.fromtimestamp(result.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        duration=max(0.0, result.finished_at - result.started_at),
    )


def union_numbers(views: Sequence[TargetView]) -> list[str]:
    numbers: list[str] = []
    for view in views:
        numbers += [row.number for row in view.rows if row.number not in numbers]
    return numbers
