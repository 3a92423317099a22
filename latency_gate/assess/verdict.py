"""The verdict, written once: budget checks, no data, an interrupted run and regressions.

The checks (decided or resolved by policy, assess/gate.py) and the regressions in, PASS or FAIL
out; no other module writes a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.formatting import fmt_value
from latency_gate.models import Check, NumberDelta, Verdict

__all__ = ["judge", "regression_reason"]


def judge(
    checks: Sequence[Check],
    *,
    successful_calls: int,
    interrupted: bool = False,
    regressions: Sequence[NumberDelta] = (),
) -> Verdict:
    """PASS only when every gated check passed (decided, or undecided and passed by policy),
    some call succeeded, the run was not interrupted and nothing regressed against the baseline.
    Reasons say every cause of a FAIL.
    """
    reasons: list[str] = []
    if successful_calls == 0:
        reasons.append("no data: no call succeeded, so no latency could be measured")
    for c in checks:
        if c.passed is not False:
            continue
        if c.value is None:
            reasons.append(f"{c.number} has no data")
        elif c.by_policy:
            reasons.append(f"{c.number} undecided, failed by policy")
        else:
            reasons.append(f"{c.number} over budget")
    if interrupted:
        reasons.append("the run was interrupted")
    reasons += [regression_reason(delta) for delta in regressions]
    passed = (
        successful_calls > 0
        and all(c.passed is not False for c in checks)
        and not interrupted
        and not regressions
    )
    return Verdict(passed=passed, checks=tuple(checks), reasons=tuple(reasons))


def regression_reason(delta: NumberDelta) -> str:
    """ "regression: warm p95 1.00 s → 1.50 s (+50 %), head / base 1.3 to 1.7 (95 %)"."""
    label = delta.number.replace("_", " ")
    change = f" ({delta.relative * 100:+.0f} %)" if delta.relative is not None else ""
    spread = ""
    if delta.interval is not None and None not in delta.interval:
        low, high = delta.interval
        spread = f", head / base {low:.2f} to {high:.2f} (95 %)"
    return (
        f"regression: {label} {fmt_value(delta.base, delta.number)} → "
        f"{fmt_value(delta.head, delta.number)}{change}{spread}"
    )
