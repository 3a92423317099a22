"""The annotations a result leaves on the run: an ::error per breached number, per regression and
for failed calls when the verdict is FAIL, a ::warning for each warning and a missing baseline.
"""

from __future__ import annotations

from typing import TextIO

from latency_gate import github
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_value_beside
from latency_gate.models import RunResult
from latency_gate.report.terminal import failed_call_kinds
from latency_gate.report.view import NUMBER_LABELS


def annotate(result: RunResult, out: TextIO) -> None:
    """An error annotation per breached number and regression, a warning per warning."""
    for check in result.verdict.checks:
        if check.passed is False:
            label = NUMBER_LABELS.get(check.number, check.number)
            actual = (
                "no data"
                if check.value is None
                else fmt_value_beside(check.value, check.limit, check.number)
            )
            budget = _show(check.number, check.limit) if check.limit is not None else "—"
            print(
                github.annotation(
                    "error",
                    f"{label} is {actual}, over its budget of {budget} ({result.display_name})",
                    title=f"latency-gate: {label} over budget",
                ),
                file=out,
            )
    for reason in result.verdict.reasons:
        if reason.startswith("regression:"):
            print(
                github.annotation(
                    "error",
                    f"{reason} ({result.display_name})",
                    title="latency-gate: regression against the baseline",
                ),
                file=out,
            )
    if result.baseline is not None and result.baseline.status != "compared":
        print(
            github.annotation(
                "warning",
                f"no baseline for {result.display_name}: {result.baseline.message}; "
                "regressions were not checked",
                title="latency-gate: no baseline",
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
                f"failed calls ({result.display_name}) by kind: " + "; ".join(kinds),
                title="latency-gate: why calls failed",
            ),
            file=out,
        )


def _show(number: str, value: float) -> str:
    return fmt_percent(value) if number == "error_rate" else fmt_duration(value)
