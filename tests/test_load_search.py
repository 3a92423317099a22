"""The one load search (assess/load/search.py), asked of both strategies: calls at once and
requests a second answer the same question, "given the levels so far, which level next, or
none", and their runs stop the same way."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from latency_gate.assess.budget.clumps import Clumps
from latency_gate.assess.load.at_once import CapacityRun, CapacitySearch, RunLevel
from latency_gate.assess.load.levels import LevelCalls, LevelLimits
from latency_gate.assess.load.per_second import RateSearch
from latency_gate.assess.load.search import LoadSearch, outcome_of
from latency_gate.models import CapacityLevel

Strategy = Callable[[], LoadSearch[int] | LoadSearch[float]]
STRATEGIES: dict[str, Strategy] = {
    "at once": lambda: CapacitySearch(start=10, maximum=64),
    "per second": lambda: RateSearch(10.0),
}


@pytest.mark.parametrize("strategy", STRATEGIES.values(), ids=list(STRATEGIES))
def test_a_search_first_asks_its_start(strategy: Strategy) -> None:
    """With no level tried, the next level is the start, and nothing is found yet."""
    search = strategy()
    assert search.next_level() == 10
    assert not search.over


@pytest.mark.parametrize("strategy", STRATEGIES.values(), ids=list(STRATEGIES))
def test_a_search_whose_levels_all_hold_ends_at_its_highest(strategy: Strategy) -> None:
    """Every level held: the search climbs to its highest level, holds it and is over, its
    figure that highest level (64 at once; 64 times the start a second)."""
    search = strategy()
    tried = []
    while (level := search.next_level()) is not None:
        tried.append(level)
        search.record(level, "held")  # type: ignore[arg-type]
    assert search.over
    assert search.found == tried[-1] == max(tried)
    assert tried[-1] in (64, 640.0)


@pytest.mark.parametrize("strategy", STRATEGIES.values(), ids=list(STRATEGIES))
def test_a_search_whose_first_level_breaks_goes_down(strategy: Strategy) -> None:
    """The start broke: the next level is lower, and nothing held yet (a figure of 0)."""
    search = strategy()
    search.record(10, "broke")
    following = search.next_level()
    assert following is not None
    assert following < 10
    assert search.found == 0


def test_an_interrupted_run_keeps_its_first_reason_and_drops_its_level() -> None:
    """interrupt() stops the run where it is, drops the level in progress, and a second
    interrupt does not replace the first reason."""
    start = RunLevel(10, LevelCalls(latencies=(0.1,) * 10, clumps=Clumps(10)), (10,))
    run = CapacityRun(LevelLimits(concurrent_p95=1.0), maximum=64, room=10_000, start=start)
    assert run.next_burst() == 10
    in_progress = run.current
    assert in_progress is not None
    run.interrupt("the job was cancelled")
    run.interrupt()
    assert (run.stopped, run.current, run.next_burst()) == ("the job was cancelled", None, None)
    assert run.left_open(run.search)
    assert not run.capacity().complete


@pytest.mark.parametrize(
    ("held", "near", "outcome"),
    [(True, False, "held"), (False, True, "near"), (False, False, "broke")],
)
def test_a_judged_level_s_outcome(held: bool, near: bool, outcome: str) -> None:
    """held, near the budget, or broke: what a search records of a judged level."""
    level = CapacityLevel(
        concurrency=4,
        calls=90,
        bursts=23,
        p95=0.5,
        errors=0,
        held=held,
        near=near,
        decided_by="test",
    )
    assert outcome_of(level) == outcome
