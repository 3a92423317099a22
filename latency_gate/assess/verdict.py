"""The verdict, written once: budget checks, no data, an interrupted run and regressions.

The checks (decided or resolved by policy, assess/budget/gate.py) and the regressions in, PASS or
FAIL out; no other module writes a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.formatting import fmt_change, fmt_percent, fmt_value
from latency_gate.models import Check, NumberDelta, Verdict

__all__ = [
    "interval_level_text",
    "judge",
    "regression_reason",
    "spoken_number",
    "undecided_reason",
]


def judge(
    checks: Sequence[Check],
    *,
    successful_calls: int,
    interrupted: bool = False,
    regressions: Sequence[NumberDelta] = (),
    deltas: Sequence[NumberDelta] = (),
    relative_limit: float | None = None,
    warnings: Sequence[str] = (),
) -> Verdict:
    """PASS only when every gated check passed (decided, or undecided and passed by policy),
    some call succeeded, the run was not interrupted and nothing regressed against the baseline.
    Reasons say every cause of a FAIL; `undecided` says what the calls could not decide and did
    not fail the run: a check passed by its value or by policy, and each of `deltas` (the
    baseline comparison) still undecided and not counted as a regression, unless the test's
    estimate of it is within `relative_limit` (such a row is shown in the comparison, with what
    the calls rule out, and not warned of: docs/statistics.md, "Undecided"); `warnings` (a creep
    of main's runs, assess/compare/creep.py) are said with them and never fail the run.
    """
    reasons: list[str] = []
    undecided: list[str] = []
    if successful_calls == 0:
        reasons.append("no data: no call succeeded, so no latency could be measured")
    for c in checks:
        if c.passed is True and c.by_policy:
            undecided.append(f"{c.number.replace('_', ' ')}: {c.note}")
        if c.passed is not False:
            continue
        if c.value is None:
            reasons.append(f"{c.number} has no data")
        elif (
            c.number in ("capacity", "goodput") and not c.by_policy
        ):  # a floor: min-capacity, min-rate
            reasons.append(f"{c.number} under its minimum")
        elif c.by_policy:
            how = "by its value" if "by its value" in c.note else "by policy"
            reasons.append(f"{c.number} undecided, failed {how}")
        else:
            reasons.append(f"{c.number} over budget")
    if interrupted:
        reasons.append("the run was interrupted")
    reasons += [regression_reason(delta) for delta in regressions]
    undecided += [
        undecided_reason(delta)
        for delta in deltas
        if delta.left_undecided and (delta.missing or not _estimate_within(delta, relative_limit))
    ]
    undecided += warnings
    passed = (
        successful_calls > 0
        and all(c.passed is not False for c in checks)
        and not interrupted
        and not regressions
    )
    return Verdict(
        passed=passed, checks=tuple(checks), reasons=tuple(reasons), undecided=tuple(undecided)
    )


def _estimate_within(delta: NumberDelta, relative_limit: float | None) -> bool:
    """The test's estimate of head / base is at or under the limit (a regression the calls
    could not rule out, but no sign of one)."""
    return (
        relative_limit is not None
        and delta.estimate is not None
        and delta.estimate <= 1 + relative_limit
    )


# A streamed answer's numbers in words, where their names are jargon ("ttft", "tpot").
_SPOKEN = {
    "ttft_p95": "first-token p95",
    "ttft_warm_p95": "warm first-token p95",
    "tpot_p95": "time per token p95",
}


def spoken_number(number: str) -> str:
    """ "warm p95", "first-token p95", "time per token p95": a number as a sentence names it."""
    return _SPOKEN.get(number, number.replace("_", " "))


def _movement(delta: NumberDelta) -> tuple[str, str]:
    """("warm p95", "1.00 s → 1.50 s (+50 %), head / base 1.3 to 1.7 (96.8 %)"): the interval
    of the outcome's own test, at its level; against a history the bound it went above
    instead."""
    label = spoken_number(delta.number)
    change = f" ({fmt_change(delta.relative)})" if delta.relative is not None else ""
    spread = ""
    if delta.interval is not None and None not in delta.interval:
        low, high = delta.interval
        where = " at the same work" if delta.same_work else ""
        spread = f", head / base{where} {low:.2f} to {high:.2f} ({interval_level_text(delta)})"
    if delta.threshold is not None:  # against a history (assess/compare/history.py)
        bound = fmt_value(delta.threshold, delta.number)
        spread = f" against the history, above its bound of {bound} (the limit included)"
    moved = f"{fmt_value(delta.base, delta.number)} → {fmt_value(delta.head, delta.number)}"
    cause = f"; what changed: {delta.cause}" if delta.cause else ""
    return label, f"{moved}{change}{spread}{cause}"


def interval_level_text(delta: NumberDelta) -> str:
    """ "95 %", or a decision's own levels: "one-sided 99.4 % and 98.0 %, the test's"."""
    if delta.interval_levels is None:
        return "95 %"
    low, high = delta.interval_levels
    return f"one-sided {fmt_percent(low)} and {fmt_percent(high)}, the test's"


def undecided_reason(delta: NumberDelta) -> str:
    """ "warm p95 regression undecided: 1.00 s → 1.30 s (+30 %), head / base 0.95 to 1.71 (96.8 %);
    not called a regression"."""
    label, moved = _movement(delta)
    if delta.missing:
        return f"{label} regression undecided: {delta.missing}, so it was not compared"
    if delta.number in ("capacity", "goodput") and delta.note:  # a search's levels, not noise
        return f"{label} regression undecided: {moved}: {delta.note}; not called a regression"
    return (
        f"{label} regression undecided: {moved}; the calls could not tell it from noise, so it "
        "was not called a regression"
    )


def regression_reason(delta: NumberDelta) -> str:
    """ "regression: warm p95 1.00 s → 1.50 s (+50 %), head / base 1.3 to 1.7 (96.8 %)"."""
    what = (
        "undecided regression, counted as one by policy (on-undecided-regression: fail)"
        if delta.by_policy
        else "regression"
    )
    label, moved = _movement(delta)
    if delta.missing:
        return f"{what}: {label} not compared: {delta.missing}"
    if delta.by_length:
        # The length regressed the row, not its latency at the same work: the reason says the
        # length first, and the p95 as it is (it may have fallen) without the latency test's
        # interval, which did not call it a regression.
        longer = delta.note or "answers longer"  # a file with no note: the sentence says the limit
        change = f", {fmt_change(delta.relative)}" if delta.relative is not None else ""
        itself = f"{fmt_value(delta.base, delta.number)} → {fmt_value(delta.head, delta.number)}"
        return (
            f"{what} by its answers' length: {label}: {longer}, beyond the limit, and an "
            f"answer's tokens are the wait ({label} {itself}{change}; its latency at the same "
            "work not called a regression)"
        )
    if delta.number in ("capacity", "goodput") and delta.note:
        moved += f": {delta.note}"  # a search's figure: its threshold, and the level that broke
    return f"{what}: {label} {moved}"
