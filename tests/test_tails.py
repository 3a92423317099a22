"""Tails heavier than sigma 0.6: a p95 check that fails says when its calls' tail is heavier
than the shapes the gate's figures hold for (docs/statistics.md, "Tails heavier than sigma
0.6")."""

from __future__ import annotations

from latency_gate.assess.budget.gate import Gate, plan_for
from latency_gate.assess.budget.meaning import HEAVY_TAIL
from latency_gate.assess.numbers.stats import numbers
from latency_gate.config import Budget
from latency_gate.models import CallPhase, Sample

BUDGET = Budget(max_warm_p95=3.0, max_concurrent_p95=None, max_error_rate=None)


def _warm(values: list[float]) -> list[Sample]:
    return [
        Sample.model_construct(
            phase=CallPhase.WARM, index=i, started_at=float(i), ok=True, latency=v, status=200
        )
        for i, v in enumerate(values)
    ]


def _warm_check_meaning(tail: list[float]) -> str:
    samples = _warm([1.0] * 90 + tail)
    gate = Gate(
        budget=BUDGET, plan=plan_for(max_calls=500, concurrency=10, on_undecided="estimate")
    )
    gate.look(samples)
    check = next(c for c in gate.checks(samples, numbers(samples)) if c.number == "warm_p95")
    assert check.passed is False
    return check.meaning


def test_a_fail_with_a_heavy_tail_says_the_figures_do_not_hold() -> None:
    """Ten of 100 calls over 3 s, the slowest up to 12 s: p98 / p95 = 2.06, past 1.4: the FAIL
    says the tail is heavy and what that costs a healthy endpoint."""
    meaning = _warm_check_meaning([3.5, 3.6, 3.7, 3.8, 3.9, 4.0, 6.0, 8.0, 10.0, 12.0])
    assert "the tail is heavy: the p98 of these calls is 2.06x their p95" in meaning
    assert meaning.endswith("fails it in up to 5 % of runs, not 1 %")


def test_a_fail_with_a_light_tail_says_nothing_of_it() -> None:
    """The same ten calls over 3 s, all near 3.5 s: no word of the tail."""
    meaning = _warm_check_meaning([3.5] * 5 + [3.6] * 5)
    assert "tail" not in meaning
    assert HEAVY_TAIL == 1.4
