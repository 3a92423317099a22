"""The verdict, written once: budget checks, no data, an interrupted run and regressions.

Numbers and a budget in, PASS or FAIL per number and overall out; the regressions found against
a baseline and an interruption fail the run here too, so no other module writes a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.config import Budget
from latency_gate.formatting import fmt_value
from latency_gate.models import Check, NumberDelta, Numbers, Verdict

__all__ = ["GATED_NUMBERS", "judge", "regression_reason"]

# (number, budget field), in the order reports show them.
GATED_NUMBERS = (
    ("cold_start", "max_cold_start"),
    ("warm_p50", "max_warm_p50"),
    ("warm_p95", "max_warm_p95"),
    ("concurrent_p95", "max_concurrent_p95"),
    ("error_rate", "max_error_rate"),
    ("ttft_p95", "max_ttft_p95"),
)


def budget_checks(numbers: Numbers, budget: Budget) -> tuple[Check, ...]:
    """Each number against its limit: passes when at or under it; no value means no data."""
    checks: list[Check] = []
    for number, field in GATED_NUMBERS:
        value: float | None = getattr(numbers, number)
        limit: float | None = getattr(budget, field)
        if limit is None:
            if number == "ttft_p95" and value is None:
                continue
            checks.append(Check(number=number, value=value, limit=None, passed=None))
        elif value is None:
            checks.append(
                Check(number=number, value=None, limit=limit, passed=False, note="no data")
            )
        else:
            checks.append(Check(number=number, value=value, limit=limit, passed=value <= limit))
    return tuple(checks)


def judge(
    numbers: Numbers,
    budget: Budget,
    *,
    successful_calls: int,
    interrupted: bool = False,
    regressions: Sequence[NumberDelta] = (),
) -> Verdict:
    """PASS only when every gated number is within budget, some call succeeded, the run was not
    interrupted and nothing regressed against the baseline. Reasons say every cause of a FAIL.
    """
    checks = budget_checks(numbers, budget)
    reasons: list[str] = []
    if successful_calls == 0:
        reasons.append("no data: no call succeeded, so no latency could be measured")
    reasons += [
        f"{c.number} has no data" if c.value is None else f"{c.number} over budget"
        for c in checks
        if c.passed is False
    ]
    if interrupted:
        reasons.append("the run was interrupted")
    reasons += [regression_reason(delta) for delta in regressions]
    passed = (
        successful_calls > 0
        and all(c.passed is not False for c in checks)
        and not interrupted
        and not regressions
    )
    return Verdict(passed=passed, checks=checks, reasons=tuple(reasons))


def regression_reason(delta: NumberDelta) -> str:
    """ "regression: warm p95 1.00 s → 1.50 s (+50 %), beyond noise, p = 0.001"."""
    label = delta.number.replace("_", " ")
    change = f" ({delta.relative * 100:+.0f} %)" if delta.relative is not None else ""
    p_value = f", p = {delta.p_value:.2g}" if delta.p_value is not None else ""
    return (
        f"regression: {label} {fmt_value(delta.base, delta.number)} → "
        f"{fmt_value(delta.head, delta.number)}{change}, beyond noise{p_value}"
    )
