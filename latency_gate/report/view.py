"""What the report templates show: each RunResult turned into rows, counts, groups and a chart.

Pure functions of the results; the templates decide layout, these decide content. Strings here
that came from an endpoint or a user stay raw: the templates escape them with the md filter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from latency_gate.assess.budget.checks import budget_meaning
from latency_gate.assess.maths.intervals import error_rate_interval
from latency_gate.assess.numbers.timeline import CHAIN_LABELS
from latency_gate.config.parsing import DEFAULT_MAX_TOKENS, Format, token_limit_field
from latency_gate.formatting import fmt_duration, fmt_percent
from latency_gate.models import (
    CallPhase,
    ErrorKind,
    PhaseStats,
    RunResult,
    Sample,
    StampSource,
)
from latency_gate.report.chain import chart_lines
from latency_gate.report.cost import cost_lines
from latency_gate.report.load import LoadView, capacity_view, goodput_view
from latency_gate.report.rows import NUMBER_LABELS, Row, humane, rows_of, streamed
from latency_gate.report.trend import TrendChart, trend_charts

__all__ = [
    "NUMBER_LABELS",
    "STAMP_SOURCES",
    "Row",
    "TargetView",
    "target_view",
    "time_to_verdict",
    "union_numbers",
]

STAMP_SOURCES = {
    StampSource.KERNEL: "the kernel's receive timestamps (SO_TIMESTAMPNS)",
    StampSource.READ_RETURN: "the moment each socket read returned (portable fallback)",
}


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
    trend: tuple[TrendChart, ...] = ()  # against a history: its runs and this one, charted
    capacity: LoadView | None = None  # --capacity: the capacity at the budget
    goodput: LoadView | None = None  # --rate, --goodput: calls at a rate

    @property
    def cost_lines(self) -> tuple[str, ...]:
        """What the answers cost, in sentences (report/cost.py); () when not priced."""
        return cost_lines(self.result)

    @property
    def breaches(self) -> tuple[Row, ...]:
        return tuple(row for row in self.rows if row.passed is False)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Verdict reasons a reader needs beside the breached rows: "no data", or every reason
        when a failed verdict has no breached row to explain it. Untrusted: escape them."""
        verdict = self.result.verdict
        no_data = tuple(r for r in verdict.reasons if r.startswith(("no data", "regression:")))
        if self.no_success:
            no_data = tuple(r for r in no_data if not r.startswith("no data"))
        if not verdict.passed and not no_data and not self.breaches:
            return verdict.reasons
        return no_data

    @property
    def successful(self) -> int:
        return sum(s.ok for s in self.result.samples)

    @property
    def no_success(self) -> bool:
        """No call succeeded (or none was made): every latency is missing for one reason."""
        return self.successful == 0

    @property
    def no_success_line(self) -> str:
        """ "no call succeeded: 6 of 6 failed (4 connection_refused, 2 read_timeout), so no
        latency could be measured"; ours only (error kinds, counts)."""
        total = self.total_calls
        if not total:
            return "no call was made, so no latency could be measured"
        kinds = ", ".join(f"{group.count:,} {group.kind}" for group in self.errors)
        return (
            f"no call succeeded: {total:,} of {total:,} failed ({kinds}), "
            "so no latency could be measured"
        )

    @property
    def problems(self) -> tuple[str, ...]:
        """What failed the run, a line each, for the verdict's first lines: with no successful
        call that alone (every latency is missing for it); otherwise the verdict reasons a
        reader needs (see `reasons`) and every breached row."""
        if self.no_success:
            regressions = tuple(r for r in self.result.verdict.reasons if r.startswith("regr"))
            return (self.no_success_line, *regressions)
        return (*self.reasons, *(row.breach for row in self.breaches))

    @property
    def failures(self) -> tuple[tuple[str, str], ...]:
        """`problems`, each with what its outcome ruled out ("" when the check says nothing)."""
        meaning = {row.breach: row.meaning for row in self.breaches}
        return tuple((text, meaning.get(text, "")) for text in self.problems)

    @property
    def meanings(self) -> tuple[tuple[str, str], ...]:
        """(number's label, what its outcome ruled out) for every row whose check says so."""
        return tuple((row.label, row.meaning) for row in self.rows if row.meaning)

    @property
    def search_calls(self) -> int:
        """The capacity search's calls (0 without --capacity): counted against the cap too."""
        return 0 if self.result.capacity is None else self.result.capacity.calls

    @property
    def rate_calls(self) -> int:
        """The calls at a rate (0 without --rate and --goodput): counted against the cap too."""
        return 0 if self.result.goodput is None else self.result.goodput.calls

    @property
    def calls_against_cap(self) -> str:
        """ "81 of at most 300 calls"; "31 calls (the first look's; cap 10)" when a cap below the
        first look's calls let it finish; "81 calls" for a result without sampling; with the
        capacity search, "265 of at most 1,380 calls (135 of them for the capacity search)"."""
        sampling = self.result.sampling
        total = self.total_calls + self.search_calls + self.rate_calls
        search = (
            f" ({self.search_calls:,} of them for the capacity search)"
            if self.result.capacity is not None
            else ""
        )
        if self.result.goodput is not None:
            search += f" ({self.rate_calls:,} of them at a rate)"
        if sampling is None:
            return f"{total:,} call{'s' if total != 1 else ''}{search}"
        if self.total_calls > sampling.max_calls:  # the first look is made whole, whatever the cap
            return f"{total:,} calls (the first look's; cap {sampling.max_calls:,}){search}"
        return f"{total:,} of at most {sampling.max_calls:,} calls{search}"

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
                humane(sampling.reasons[0].removeprefix("undecided: ")) if sampling.reasons else ""
            )
            text = (
                f"Sampling: {total:,} calls in {sampling.looks} looks (the first "
                f"{sampling.first_look_calls:,}, then {sampling.extra_calls:,} more"
                + (f" while {why} could not be decided)" if why else ")")
            )
        stopped = humane(sampling.stopped) if sampling.stopped else "the run ended"
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
        check = next((c for c in self.result.verdict.checks if c.number == "error_rate"), None)
        text = "Errors: " + counts.describe()
        if check is not None and check.interval is not None and check.interval[1] is not None:
            # The bound the check shows: valid wherever the run stopped (split over its looks).
            text = (
                f"Errors: {counts.failed} of {counts.calls} calls failed "
                f"({fmt_percent(counts.rate)}); 95 % upper bound {fmt_percent(check.interval[1])}"
            )
        if check is not None and check.limit is not None:
            rule = budget_meaning(len(self.result.samples), check.limit)
            text += f". {rule[:1].upper()}{rule[1:]}"
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
        if link == "first_token" and not streamed(result):
            continue  # a plain body's first byte is its "first token": the link is not there
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


_DURATION_SETTINGS = frozenset({"timeout", "idle", "wait_ready", "max_time"})


def _sent_limits(config: Mapping[str, object]) -> dict[str, str]:
    """What a body built from --prompt carried when --max-tokens and --token-limit-field were
    not given: the default length, in the format's field ("64 (the default with a prompt)");
    {} for any other body (sent as the user wrote it)."""
    fmt = config.get("format")
    url = config.get("url")
    if config.get("prompt") is None or fmt not in set(Format) - {Format.AUTO, Format.RAW}:
        return {}
    sent = {}
    if config.get("max_tokens") is None:
        sent["max_tokens"] = f"{DEFAULT_MAX_TOKENS} (the default with a prompt)"
    if config.get("token_limit_field") is None:
        field = token_limit_field(Format(str(fmt)), url if isinstance(url, str) else "")
        sent["token_limit_field"] = f"{field} (the format's)"
    return sent


def _settings(config: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    # The budget has its own table; the name is the section's heading; the cost note is shown
    # beside the comparison of targets. The answer's length limit is what the body carried; a
    # default prompt is the prompt's row, said as one.
    sent = _sent_limits(config)
    default = config.get("default_prompt")
    if isinstance(default, str):
        config = {
            key: f"default: {default}" if key == "prompt" else value
            for key, value in config.items()
            if key != "default_prompt"
        }
    return tuple(
        (
            key.replace("_", " "),
            fmt_duration(value)
            if key in _DURATION_SETTINGS and isinstance(value, int | float)
            else "auto"
            if key == "max_calls" and value is None  # sized to the checks: the sampling line
            else sent[key]
            if key in sent
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
        rows=rows_of(result),
        calls=calls,
        retries=sum(s.retries for s in result.samples),
        errors=_errors(result.samples),
        phase_columns=columns,
        boundary_rows=boundary_rows,
        chart=chart_lines(result, scale),
        settings=_settings(result.config),
        started=datetime.fromtimestamp(result.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        duration=max(0.0, result.finished_at - result.started_at),
        trend=trend_charts(result),
        capacity=capacity_view(result),
        goodput=goodput_view(result),
    )


def union_numbers(views: Sequence[TargetView]) -> list[str]:
    numbers: list[str] = []
    for view in views:
        numbers += [row.number for row in view.rows if row.number not in numbers]
    return numbers


def time_to_verdict(views: Sequence[TargetView]) -> str:
    """How long the run took and how many calls it spent against the cap: "Verdict in 12.3 s,
    after 81 of at most 300 calls"; with several targets, from the first start to the last
    finish, the calls and caps summed; "Interrupted after …" for an interrupted run."""
    started = min(view.result.started_at for view in views)
    finished = max(view.result.finished_at for view in views)
    took = fmt_duration(max(0.0, finished - started))
    if len(views) == 1:
        calls = views[0].calls_against_cap
    else:
        total = sum(view.total_calls + view.search_calls for view in views)
        caps = [view.result.sampling.max_calls for view in views if view.result.sampling]
        calls = (
            f"{total:,} of at most {sum(caps):,} calls"
            if len(caps) == len(views)
            else f"{total:,} calls"
        )
    if any(view.result.interrupted for view in views):
        return f"Interrupted after {took} and {calls}"
    return f"Verdict in {took}, after {calls}"
