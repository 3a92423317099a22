"""The verdict: numbers and a budget in, PASS or FAIL per number and overall out."""

from __future__ import annotations

from latency_gate.config import Budget
from latency_gate.models import Check, Numbers, Verdict

# (number, budget field), in the order reports show them.
GATED_NUMBERS = (
    ("cold_start", "max_cold_start"),
    ("warm_p50", "max_warm_p50"),
    ("warm_p95", "max_warm_p95"),
    ("concurrent_p95", "max_concurrent_p95"),
    ("error_rate", "max_error_rate"),
    ("ttft_p95", "max_ttft_p95"),
)


def evaluate(numbers: Numbers, budget: Budget, *, successful_calls: int) -> Verdict:
    """Hold each number against its limit. A number passes when at or under its limit.

    A gated number with no value (its phase had no successful call) fails; a run with no
    successful call at all fails with the reason "no data", whatever the budget says.
    """
    checks: list[Check] = []
    reasons: list[str] = []
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
    if successful_calls == 0:
        reasons.append("no data: no call succeeded, so no latency could be measured")
    reasons += [
        f"{c.number} has no data" if c.value is None else f"{c.number} over budget"
        for c in checks
        if c.passed is False
    ]
    passed = successful_calls > 0 and all(c.passed is not False for c in checks)
    return Verdict(passed=passed, checks=tuple(checks), reasons=tuple(reasons))
