"""One number's regression at one look, written once: the gate's looks (gate.py) and the
comparison the reports show (baseline.py) both call `judge_number`, so a decision, its interval
and the sampling line that names it come from the same test on the same calls.

A whole-call percentile of a run whose answers have a length is judged at the same work with the
length beside it (same_work.py); any other percentile by the permutation test of its calls, the
error rate by the exact conditional test (regression.py). The interval is the decision's own:
its low side at the "regressed" alpha of that look, its high side at the "not regressed" one, on
the same calls, so that "regressed" is "the low side is over the limit" and "not regressed" is
"the high side is within it".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latency_gate.assess.compare.regression import (
    Alphas,
    PercentileRegression,
    Regression,
    error_rate_regression,
    percentile_regression,
)
from latency_gate.assess.compare.same_work import RatioTest, SameWork, combine
from latency_gate.assess.numbers.stats import (
    first_tokens,
    first_tokens_of,
    latencies,
    per_token_times,
)
from latency_gate.config.regression import RegressionLimit
from latency_gate.models import CallPhase, Sample

__all__ = ["PERCENTILES", "Judged", "Look", "judge_number"]

PERCENTILES: dict[str, tuple[float, Callable[[Sequence[Sample]], list[float]]]] = {
    "warm_p50": (50.0, lambda s: latencies(s, CallPhase.WARM)),
    "warm_p95": (95.0, lambda s: latencies(s, CallPhase.WARM)),
    "concurrent_p95": (95.0, lambda s: latencies(s, CallPhase.CONCURRENT)),
    "ttft_p95": (95.0, first_tokens),
    "ttft_warm_p95": (95.0, lambda s: first_tokens_of(s, CallPhase.WARM)),
    "tpot_p95": (95.0, per_token_times),
}
_WHOLE_CALL = frozenset({"warm_p50", "warm_p95", "concurrent_p95"})


@dataclass(frozen=True)
class Look:
    """The calls of each arm and the alphas of the look a decision was reached at."""

    head_calls: int
    base_calls: int
    alpha: Alphas


@dataclass(frozen=True)
class Judged:
    """A number's outcome at one look, with what it rests on."""

    outcome: Regression
    interval: tuple[float | None, float | None] | None = None
    same_work: bool = False
    length: RatioTest | None = None
    length_outcome: Regression | None = None
    # head / base as the test estimates it (at the same work, the larger of the latency's ratio
    # at the same work and the answers' length ratio); None: no estimate (no failure on one side)
    estimate: float | None = None
    # head / base of the test whose interval this is (at the same work: the latency's)
    ratio: float | None = None
    # regressed by the answers' length alone: the latency's own test (its interval) did not
    by_length: bool = False


def _failed(samples: Sequence[Sample]) -> int:
    return sum(not s.ok for s in samples)


def _clamped(
    interval: tuple[float | None, float | None], outcome: Regression, limit: float
) -> tuple[float | None, float | None]:
    """The interval held to the decision at the limit itself: the test there is exact, the
    interval's sides are found by bisection (and, at the same work, with the line refitted at
    each limit tried), so at the edge they may fall a hair on the other side."""
    low, high = interval
    if outcome is Regression.REGRESSED and low is not None and low <= limit:
        low = limit * (1 + 1e-9)
    if outcome is not Regression.REGRESSED and low is not None and low > limit:
        low = limit
    if outcome is Regression.NOT_REGRESSED and high is not None and high > limit:
        high = limit
    if outcome is not Regression.NOT_REGRESSED and high is not None and high <= limit:
        high = limit * (1 + 1e-9)
    return low, high


def judge_number(
    name: str,
    head: Sequence[Sample],
    base: Sequence[Sample],
    limit: RegressionLimit,
    alpha: Alphas,
    *,
    concurrency: int,
    paired: bool,
    interval: bool = False,
) -> Judged | None:
    """`name`'s regression on these calls at `alpha`; None when there is nothing to test (too
    few calls a side, or a number with no test: cold start)."""
    if name == "error_rate":
        errors = error_rate_regression(
            _failed(head),
            max(len(head), 1),
            _failed(base),
            max(len(base), 1),
            max_relative=limit.relative or 0.0,
            alpha=alpha.regressed,
            alpha_within=alpha.within,
        )
        bounds = errors.decision_interval
        if bounds is not None and limit.relative is not None:
            bounds = _clamped(bounds, errors.outcome, 1 + limit.relative)
        head_rate = _failed(head) / max(len(head), 1)
        base_rate = _failed(base) / max(len(base), 1)
        estimate = head_rate / base_rate if base_rate > 0 else (1.0 if head_rate == 0 else None)
        return Judged(
            errors.outcome, bounds if interval else None, estimate=estimate, ratio=estimate
        )
    if name not in PERCENTILES:
        return None
    q, pick = PERCENTILES[name]
    same = SameWork(head, base, concurrency=concurrency, paired=paired)
    if name in _WHOLE_CALL and same.applies:
        # An answer's tokens are the wait (an LLM writes them one after the other): longer
        # answers regress the number. A body's bytes only adjust the comparison: a larger JSON
        # document is not a longer wait the way a longer answer is, so it does not regress a
        # number on its own (it is named among what changed).
        tokens = same.unit == "tokens"
        half = Alphas(alpha.regressed / 2, alpha.within) if tokens else alpha
        varies = same.at_same_work(name)
        found = (
            same.regression(name, q, limit, half, interval=interval)
            if varies
            else _calls_as_they_are(pick(head), pick(base), q, limit, half, interval=interval)
        )
        if found is None:
            return None
        length = same.length_test(half) if tokens else None
        relative = limit.relative if limit.relative is not None else 0.10
        length_outcome = (
            None
            if not tokens
            else Regression.UNDECIDED
            if length is None
            else length.against(1 + relative)
        )
        outcome = combine(found.outcome, length_outcome)
        ratios = [r for r in (found.ratio, None if length is None else length.ratio) if r]
        return Judged(
            outcome,
            _interval_of(found, limit) if interval else None,
            same_work=varies,
            length=length,
            length_outcome=length_outcome,
            estimate=max(ratios) if ratios else None,
            ratio=found.ratio,
            by_length=outcome is Regression.REGRESSED and found.outcome is not Regression.REGRESSED,
        )
    plain = _calls_as_they_are(pick(head), pick(base), q, limit, alpha, interval=interval)
    if plain is None:
        return None
    return Judged(
        plain.outcome,
        _interval_of(plain, limit) if interval else None,
        estimate=plain.ratio,
        ratio=plain.ratio,
    )


def _calls_as_they_are(
    head: Sequence[float],
    base: Sequence[float],
    q: float,
    limit: RegressionLimit,
    alpha: Alphas,
    *,
    interval: bool,
) -> PercentileRegression | None:
    """The permutation test of the `q` percentile of the calls as they are."""
    return percentile_regression(
        head,
        base,
        q,
        max_relative=limit.relative,
        max_absolute=limit.absolute,
        alpha=alpha.regressed,
        alpha_within=alpha.within,
        interval=interval,
    )


def _interval_of(
    found: PercentileRegression, limit: RegressionLimit
) -> tuple[float | None, float | None]:
    """The ratio's interval at the decision's levels, held to the test's own outcome at the
    relative limit (the absolute one, when alone, is judged on the difference)."""
    bounds = (found.ratio_interval.low, found.ratio_interval.high)
    if limit.relative is not None and limit.absolute is None:
        return _clamped(bounds, found.outcome, 1 + limit.relative)
    return bounds
