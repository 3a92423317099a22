"""A slow creep of main's runs (assess/compare/creep.py): the trend of a history's runs is tested
beside the head against their spread, warned of, never failing the run."""

from __future__ import annotations

import math
import random

import pytest
from result_factory import make_result, make_target, samples_for

from latency_gate.assess.compare.creep import MIN_TREND_RUNS, TREND_ALPHA, creep
from latency_gate.assess.compare.history import HistoryPlan, TargetHistory
from latency_gate.assess.result import assess_run
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.measurement import Measurement
from latency_gate.models import RunResult, StampSource
from latency_gate.report.markdown import render_summary

DAY = 86_400.0
SCATTER = (1.00, 0.97, 1.03, 1.01, 0.98, 1.02, 0.99, 1.00, 1.03, 0.97)


def test_two_percent_a_run_is_a_creep() -> None:
    """Ten runs growing 2 % a run, scattered by 3 %: clear growth, 20 % across the window,
    more than the 10 % limit: flagged."""
    values = [1.02**i * s for i, s in enumerate(SCATTER)]
    found = creep("warm_p95", values)
    assert found is not None
    assert found.flagged
    assert found.runs == 10
    assert found.per_run == pytest.approx(0.02, abs=0.006)
    assert found.across == pytest.approx((1 + found.per_run) ** 9 - 1)
    assert found.t > found.threshold


def test_runs_that_only_scatter_are_not_a_creep() -> None:
    """The same scatter without growth: not flagged."""
    found = creep("warm_p95", list(SCATTER))
    assert found is not None
    assert not found.flagged


def test_a_clear_but_small_trend_is_not_a_creep() -> None:
    """0.5 % a run, no scatter at all: clear, but 4.6 % across ten runs, under the 10 % limit."""
    found = creep("warm_p95", [1.005**i for i in range(10)])
    assert found is not None
    assert found.t > found.threshold
    assert not found.flagged
    smaller_limit = creep("warm_p95", [1.005**i for i in range(10)], max_relative=0.04)
    assert smaller_limit is not None
    assert smaller_limit.flagged


def test_too_few_runs_have_no_trend() -> None:
    """Fewer than five runs: no trend is tested."""
    assert MIN_TREND_RUNS == 5
    assert creep("warm_p95", [1.0, 1.1, 1.2, 1.3]) is None
    assert creep("warm_p95", [1.0, 1.1, 1.2, 1.3, 1.4]) is not None


def test_false_alarms_held_at_alpha() -> None:
    """20,000 histories of ten runs scattered log-normally (tau 0.1) without a trend: flagged in
    at most 1 % (one-sided alpha, the limit not counted)."""
    rng = random.Random(27)
    draws = 20_000
    flagged = 0
    for _ in range(draws):
        values = [math.exp(rng.gauss(0.0, 0.1)) for _ in range(10)]
        found = creep("warm_p95", values, max_relative=0.0)
        flagged += found is not None and found.flagged
    assert 0.006 <= flagged / draws <= TREND_ALPHA + 0.003


def _run(factor: float, days_ago: float) -> RunResult:
    result = make_result(
        "local",
        samples=samples_for(
            cold=0.42 * factor,
            warm=[(0.100 + 0.005 * i) * factor for i in range(40)],
            concurrent=[(0.150 + 0.005 * i) * factor for i in range(40)],
        ),
    )
    return result.model_copy(update={"started_at": result.started_at - days_ago * DAY})


def _judged(factors: list[float], head: float) -> RunResult:
    runs = [_run(f, len(factors) - i) for i, f in enumerate(factors)]
    newest_first = tuple(sorted(runs, key=lambda r: r.started_at, reverse=True))
    plan = HistoryPlan(
        ".latency-history", DEFAULT_LIMIT, targets={"local": TargetHistory(newest_first)}
    )
    return assess_run(
        make_target(),
        Measurement(list(_run(head, 0).samples), started_at=_run(head, 0).started_at),
        finished_at=_run(head, 0).finished_at,
        stamp_source=StampSource.KERNEL,
        history=plan,
    )


def test_a_creeping_history_warns_and_passes() -> None:
    """Main's ten runs creeping 2 % a run and a head like the newest: the head is not a
    regression, the run passes, and the verdict warns of the creep of each gated percentile."""
    factors = [1.02**i * s for i, s in enumerate(SCATTER)]
    judged = _judged(factors, factors[-1])
    assert judged.verdict.passed
    assert judged.baseline is not None
    assert judged.baseline.regressions == ()
    notes = [n for n in judged.verdict.undecided if "crept up" in n]
    assert [n.split(" crept up")[0] for n in notes] == ["warm p95", "concurrent p95"]
    assert notes[0].startswith("warm p95 crept up over main's last 10 runs: ")
    assert notes[0].endswith("a trend of main's runs, not of this change: warned, not failed")
    assert "crept up over main's last 10 runs" in render_summary([judged])


def test_a_steady_history_says_nothing_of_a_trend() -> None:
    """The same runs without growth: no warning."""
    judged = _judged(list(SCATTER), 1.0)
    assert judged.verdict.passed
    assert not [n for n in judged.verdict.undecided if "crept up" in n]
