"""The annotations a result leaves on the run: an ::error per breached number, per regression and
for failed calls when the verdict is FAIL (one ::error for a run with no successful call, saying
so, rather than one "no data" per number), a ::warning for each undecided item that did not fail
the run, each warning and a missing baseline.
"""

from __future__ import annotations

from typing import TextIO

from latency_gate import github
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_value_beside
from latency_gate.models import RunResult
from latency_gate.report.terminal import failed_call_kinds
from latency_gate.report.view import NUMBER_LABELS, target_view


def annotate(result: RunResult, out: TextIO) -> None:
    """An error annotation per breached number and regression, a warning per warning."""
    name = result.display_name
    view = target_view(result, 0.0)
    if view.no_success:
        print(
            github.annotation(
                "error", f"{view.no_success_line} ({name})", title="latency-gate: no call succeeded"
            ),
            file=out,
        )
    for check in result.verdict.checks:
        if check.passed is not False or view.no_success:
            continue
        label = NUMBER_LABELS.get(check.number, check.number)
        row = next((row for row in view.rows if row.number == check.number), None)
        if check.value is None and row is not None:
            message, title = row.breach, f"latency-gate: {label} not measured"
        elif row is not None and row.minimum:  # the capacity, under its min-capacity
            message, title = row.breach, f"latency-gate: {label} under its minimum"
        else:
            actual = fmt_value_beside(check.value, check.limit, check.number)
            budget = _show(check.number, check.limit) if check.limit is not None else "—"
            message = f"{label} is {actual}, over its budget of {budget}"
            title = f"latency-gate: {label} over budget"
        print(github.annotation("error", f"{message} ({name})", title=title), file=out)
    for reason in result.verdict.reasons:
        if reason.startswith("regression:"):
            print(
                github.annotation(
                    "error",
                    f"{reason} ({name})",
                    title="latency-gate: regression against the baseline",
                ),
                file=out,
            )
    for item in result.verdict.undecided:
        print(
            github.annotation(
                "warning",
                f"{item} ({name}); it did not fail the run",
                title="latency-gate: undecided",
            ),
            file=out,
        )
    if result.baseline is not None and result.baseline.status != "compared":
        what = "baseline" if result.baseline.history is None else "history"
        print(
            github.annotation(
                "warning",
                f"no {what} for {name}: {result.baseline.message}; regressions were not checked",
                title=f"latency-gate: no {what}",
            ),
            file=out,
        )
    for warning in result.warnings:
        print(github.annotation("warning", warning, title="latency-gate"), file=out)
    kinds = failed_call_kinds(result)
    if kinds:
        print(
            github.annotation(
                "error" if not result.verdict.passed else "warning",
                f"failed calls ({name}) by kind: " + "; ".join(kinds),
                title="latency-gate: why calls failed",
            ),
            file=out,
        )


def _show(number: str, value: float) -> str:
    return fmt_percent(value) if number == "error_rate" else fmt_duration(value)
