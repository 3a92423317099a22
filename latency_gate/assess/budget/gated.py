"""Each gated number by itself: what it is, its decision at a look, its interval, its row's words.

A number a budget can gate is a name, its budget's field, its percentile and the calls behind it
(`GATED_NUMBERS`, in the order reports show them). The gate (gate.py) judges each at every look
with `judge`, and at the end shows its `interval`; the sentences of a row with no data or one
settled by its interval are here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latency_gate.assess.budget.checks import cold_start_check, error_rate_check, percentile_check
from latency_gate.assess.budget.clumps import clumps_of
from latency_gate.assess.budget.meaning import Judged, tail_ratio
from latency_gate.assess.budget.sampling import Phase
from latency_gate.assess.maths.intervals import error_rate_interval, percentile_interval
from latency_gate.assess.numbers.stats import first_tokens, latencies, per_token_times
from latency_gate.formatting import fmt_interval, fmt_value
from latency_gate.models import CallPhase, Sample

__all__ = [
    "GATED_NUMBERS",
    "NO_DATA",
    "SETTLED",
    "GatedNumber",
    "interval",
    "judge",
    "p95_tail_ratio",
    "settled",
    "settled_meaning",
]

Pick = Callable[[Sequence[Sample]], list[float]]


def _warm(samples: Sequence[Sample]) -> list[float]:
    return latencies(samples, CallPhase.WARM)


def _concurrent(samples: Sequence[Sample]) -> list[float]:
    return latencies(samples, CallPhase.CONCURRENT)


@dataclass(frozen=True)
class GatedNumber:
    """A number a budget can gate: its budget's field, its percentile, its calls' values and
    where more calls for it come from."""

    name: str
    budget_field: str
    q: float | None  # the percentile; None for cold start and the error rate
    pick: Pick | None  # the calls' values behind the number
    phase: Phase  # where more calls for it come from


# In the order reports show them.
GATED_NUMBERS = (
    GatedNumber("cold_start", "max_cold_start", None, None, Phase.WARM),
    GatedNumber("warm_p50", "max_warm_p50", 50, _warm, Phase.WARM),
    GatedNumber("warm_p95", "max_warm_p95", 95, _warm, Phase.WARM),
    GatedNumber("concurrent_p95", "max_concurrent_p95", 95, _concurrent, Phase.CONCURRENT),
    GatedNumber("error_rate", "max_error_rate", None, None, Phase.ALL),
    GatedNumber("ttft_p95", "max_ttft_p95", 95, first_tokens, Phase.WARM),
    GatedNumber("tpot_p95", "max_tpot_p95", 95, per_token_times, Phase.WARM),
)


def judge(number: GatedNumber, limit: float, samples: Sequence[Sample]) -> Judged | None:
    """One look's decision on `number` against its budget `limit`, over every call so far; None
    where there is nothing to gate (a first-token budget when no call streamed)."""
    if number.name == "cold_start":
        cold = latencies(samples, CallPhase.COLD)
        check = cold_start_check(cold[0] if cold else None, limit)
        return Judged(check.decision, check.n, check.exceedances)
    if number.name == "error_rate":
        clumps = clumps_of(s.ok for s in samples)
        errors = error_rate_check(clumps.failed, len(samples), limit, clumps)
        return Judged(errors.decision, len(samples), errors.counts.failed, clumps)
    if number.pick is None or number.q is None:
        return None
    values = number.pick(samples)
    if number.name in ("ttft_p95", "tpot_p95") and not values:
        return None  # not a stream: nothing to gate
    found = percentile_check(values, number.q, limit)
    return Judged(found.decision, found.n, found.exceedances)


def interval(
    number: GatedNumber, samples: Sequence[Sample], level: float
) -> tuple[tuple[float | None, float | None] | None, int]:
    """The interval at `level` a check's row shows (None for cold start, a single call), and
    the calls behind it."""
    if number.name == "cold_start":
        return None, len(latencies(samples, CallPhase.COLD))
    if number.name == "error_rate":
        counts = error_rate_interval(_failed(samples), len(samples), level)
        return (counts.interval.low, counts.interval.high), len(samples)
    values = [] if number.pick is None else number.pick(samples)
    if number.q is None or not values:
        return (None, None), len(values)
    found = percentile_interval(values, number.q, level)
    return (found.low, found.high), len(values)


def _failed(samples: Sequence[Sample]) -> int:
    return sum(not s.ok for s in samples)


SETTLED = "by its interval"  # undecided by its test when another check failed the run


def settled(interval: tuple[float | None, float | None] | None, limit: float) -> bool | None:
    """Whether a check's 95 % interval (the one its row shows) lies wholly within its budget
    (True) or wholly over it (False); None when it straddles the budget or is unbounded there."""
    if interval is None:
        return None
    low, high = interval
    if low is not None and low > limit:
        return False
    if high is not None and high <= limit:
        return True
    return None


def settled_meaning(
    number: str,
    interval: tuple[float | None, float | None] | None,
    limit: float,
    *,
    passed: bool,
) -> str:
    """ "FAIL: its 95 % interval, 14.1 % to 100.0 %, lies wholly over the 1.0 % budget (the run
    stopped, on another check's FAIL, before this check's test decided)"."""
    side = "within" if passed else "over"
    return (
        f"{'PASS' if passed else 'FAIL'}: its 95 % interval, {fmt_interval(interval, number)}, "
        f"lies wholly {side} the {fmt_value(limit, number)} budget (the run stopped, on another "
        "check's FAIL, before this check's test decided)"
    )


def p95_tail_ratio(number: GatedNumber, samples: Sequence[Sample]) -> float | None:
    """The p98 / p95 of a p95 check's calls (None for other checks, or too few calls)."""
    if number.q != 95 or number.pick is None:
        return None
    return tail_ratio(number.pick(samples))


NO_DATA = {
    "cold_start": "the cold call failed: there is no cold start to hold against its budget",
    "warm_p50": "no warm call succeeded: there is no latency to hold against the budget",
    "warm_p95": "no warm call succeeded: there is no latency to hold against the budget",
    "concurrent_p95": "no concurrent call succeeded: there is no latency to hold against "
    "the budget",
    "error_rate": "no call was made",
    "ttft_p95": "no streamed call delivered a first token",
    "tpot_p95": "no warm streamed call delivered two tokens or more",
}
