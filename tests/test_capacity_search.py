"""The capacity search as a state machine (assess/load/at_once.py), and its levels judged burst by
burst (assess/load/levels.py), with scripted levels: no endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from latency_gate.assess.budget.clumps import Clumps
from latency_gate.assess.load.at_once import CapacityRun, CapacitySearch, RunLevel
from latency_gate.assess.load.levels import LevelCalls, LevelLimits, judge_level
from latency_gate.assess.load.replay import judged_again
from latency_gate.config.plan.levels import LEVEL_CALLS, level_bursts
from latency_gate.config.plan.search import Bracket, LevelOutcome, search_worst_calls
from latency_gate.models import CallPhase, ErrorKind, Sample

BUDGET = 1.0
LIMITS = LevelLimits(concurrent_p95=BUDGET, error_rate=0.01)


def _sample(latency: float | None, index: int = 0) -> Sample:
    if latency is None:
        return Sample(
            phase=CallPhase.CONCURRENT,
            index=index,
            started_at=1_700_000_000.0,
            ok=False,
            status=503,
            error=ErrorKind.HTTP_5XX,
        )
    return Sample(
        phase=CallPhase.CONCURRENT,
        index=index,
        started_at=1_700_000_000.0,
        ok=True,
        latency=latency,
        status=200,
    )


def _exact(truth: int) -> Callable[[int], LevelOutcome]:
    """An endpoint whose levels are told apart: held up to `truth`, broke above."""
    return lambda c: "held" if c <= truth else "broke"


def _walk(start: int, maximum: int, outcome: Callable[[int], LevelOutcome]) -> CapacitySearch:
    """The search from `start` against an endpoint whose level c ends `outcome(c)`."""
    search = CapacitySearch(start=start, maximum=maximum)
    search.record(start, outcome(start))
    while (level := search.next_level()) is not None:
        search.record(level, outcome(level))
    return search


def _tried(search: CapacitySearch) -> list[int]:
    return [level for level, _ in search.tried[1:]]


def test_doubles_from_the_run_then_halves_the_gap_to_one_call() -> None:
    """From 10, which held: 20, 40 (broke), then 30, 35, 37, 38: the capacity is 37."""
    search = _walk(10, 64, _exact(37))
    assert _tried(search) == [20, 40, 30, 35, 37, 38]
    assert search.found == 37
    assert search.bracket == Bracket(low=37, top=38)
    assert search.bracket.exact


def test_a_broken_start_halves_down_from_it() -> None:
    """From 10, which broke: the middle of 0..10, then down to one call apart."""
    assert _tried(_walk(10, 64, _exact(3))) == [5, 2, 3, 4]
    assert _tried(_walk(10, 64, _exact(9))) == [5, 7, 8, 9]


def test_capacity_zero_when_even_one_call_breaks() -> None:
    """Every level breaking ends at level 1: the capacity is 0; a start of 1 that broke ends at
    once."""
    search = _walk(10, 64, lambda _c: "broke")
    assert _tried(search) == [5, 2, 1]
    assert search.found == 0
    assert _tried(_walk(1, 64, lambda _c: "broke")) == []


def test_capacity_max_ends_the_doubling() -> None:
    """Every level holding: 20, 40, then capacity-max itself (64), and no higher."""
    search = _walk(10, 64, lambda _c: "held")
    assert _tried(search) == [20, 40, 64]
    assert search.found == 64
    assert _tried(_walk(64, 64, lambda _c: "held")) == []


def test_levels_near_the_budget_leave_an_interval() -> None:
    """Held up to 12, near the budget from 13 to 16, broke from 17: the search closes the gap
    below the near levels to one call and the one above to one call (under 16): the capacity
    is between 12 and 16."""

    def outcome(c: int) -> LevelOutcome:
        return "held" if c <= 12 else "near" if c <= 16 else "broke"

    search = _walk(10, 64, outcome)
    assert _tried(search) == [20, 15, 12, 13, 17, 16]
    assert search.bracket == Bracket(low=12, top=17, near_low=13, near_high=16)
    assert search.found == 12
    assert search.bracket.upper == 16
    assert not search.bracket.exact


def test_the_gap_above_wide_near_levels_closes_to_an_eighth() -> None:
    """Near from 33 to 47: above 40 near, the gap to 48 (broke) is 8, within an eighth of 40:
    the search stops there rather than try every call."""

    def outcome(c: int) -> LevelOutcome:
        return "held" if c <= 32 else "near" if c <= 47 else "broke"

    search = _walk(10, 64, outcome)
    bracket = search.bracket
    assert (bracket.low, bracket.near_low) == (32, 33)
    assert bracket.top is not None
    assert bracket.near_high is not None
    assert bracket.top - bracket.near_high <= max(1, bracket.near_high // 8)


@pytest.mark.parametrize(("start", "maximum"), [(1, 16), (3, 20), (10, 64), (16, 64), (5, 5)])
def test_every_capacity_is_found_for_a_monotone_endpoint(start: int, maximum: int) -> None:
    """Whatever the truth (0 to capacity-max), an endpoint whose levels are told apart is found
    at it, in about log2 levels."""
    for truth in range(maximum + 1):
        search = _walk(start, maximum, _exact(truth))
        assert search.found == truth
        assert len(search.tried) - 1 <= 2 * maximum.bit_length() + 1


@pytest.mark.parametrize(("start", "maximum"), [(1, 16), (4, 24), (10, 40)])
def test_the_plan_s_worst_case_is_the_search_s_costliest_path(start: int, maximum: int) -> None:
    """config/plan/search.py search_worst_calls (what `max-calls: auto` adds) is the most calls any
    sequence of outcomes can make the search take, every level to its cap, the run's own level
    (which may take bursts of its own) included."""
    outcomes: tuple[LevelOutcome, ...] = ("held", "near", "broke")

    def cost(level: int) -> int:
        return level * level_bursts(level)

    def worst(tried: list[tuple[int, LevelOutcome]]) -> int:
        search = CapacitySearch(start=start, maximum=maximum, tried=list(tried))
        level = search.next_level()
        if level is None:
            return 0
        return cost(level) + max(worst([*tried, (level, o)]) for o in outcomes)

    first = min(start, maximum)
    found = cost(first) + max(worst([(first, o)]) for o in outcomes)
    assert search_worst_calls(start, maximum) == found


def test_a_level_s_cap_in_calls() -> None:
    """No level takes a burst once it has 130 calls, whatever its concurrency: level 1 takes
    130 calls one at a time (it took 16)."""
    assert LEVEL_CALLS == 130
    assert [level_bursts(c) for c in (1, 4, 5, 6, 10, 40, 64, 130, 200)] == [
        130,
        33,
        26,
        22,
        13,
        4,
        3,
        1,
        1,
    ]


# --- a level, burst by burst -----------------------------------------------------------------


def _calls(latencies: list[float], failed: int = 0) -> LevelCalls:
    return LevelCalls(
        latencies=tuple(latencies), clumps=Clumps.apart(failed, len(latencies) + failed)
    )


def test_a_level_far_under_its_budget_holds_by_the_test_after_90_calls() -> None:
    """89 calls under the budget leave the level undecided; the 90th rules out a p95 over it
    (5 % against 1 % of calls over, wrong at most 2.5 %). It took 33 calls, which ruled out only
    12 % over."""
    assert judge_level(_calls([0.2] * 89), LIMITS, looks=[89], last=False).held is None
    held = judge_level(_calls([0.2] * 90), LIMITS, looks=[90], last=False)
    assert (held.held, held.by, held.wrong_at_most) == (True, "test", 0.025)


def test_a_level_over_its_budget_breaks_at_once() -> None:
    """Five of ten calls over the budget, apart, rule out a p95 within it, at the first burst;
    four do not yet. (In a row they are one clump of evidence: levels.clumped_decision.)"""
    broke = judge_level(_calls([0.5, 1.5] * 5), LIMITS, looks=[10], last=False)
    assert (broke.held, broke.by, broke.broke_on, broke.wrong_at_most) == (
        False,
        "test",
        ("concurrent_p95",),
        0.01,
    )
    assert (
        judge_level(_calls([0.5, 1.5] * 4 + [0.5] * 2), LIMITS, looks=[10], last=False).held is None
    )


def test_a_burst_s_slow_calls_in_a_row_are_one_clump_of_evidence() -> None:
    """Five of ten calls over the budget in a row, as a queue ends them (the calls that waited
    for a slot last), are one clump: not broken at the first burst, as the calls at a rate are
    judged (levels.LEVEL_TEST). Counted one by one they broke it."""
    judged = judge_level(_calls([0.5] * 5 + [1.5] * 5), LIMITS, looks=[10], last=False)
    assert judged.held is None


def test_an_undecided_level_is_near_the_budget_at_its_last_burst() -> None:
    """Four of 130 over (3 %): neither side ruled out; at the last burst the level is near the
    budget, neither held nor broken, whatever the policy (no coin is tossed)."""
    calls = _calls([0.5] * 126 + [1.2] * 4)
    assert judge_level(calls, LIMITS, looks=[130], last=False).held is None
    at_cap = judge_level(calls, LIMITS, looks=[130], last=True)
    assert (at_cap.held, at_cap.near, at_cap.by, at_cap.broke_on) == (
        False,
        True,
        "level cap",
        (),
    )
    passing = LevelLimits(concurrent_p95=BUDGET, on_undecided="pass")
    assert judge_level(calls, passing, looks=[130], last=True).near


def test_failures_break_a_level_and_ask_for_more_calls_only_once_one_failed() -> None:
    """A clean level is not held back by its error rate (127 clean calls pass a 1 % budget);
    one failure keeps it open; three of 20, apart, break it by the test."""
    clean = judge_level(_calls([0.2] * 90), LIMITS, looks=[90], last=False)
    assert clean.held is True
    one = judge_level(_calls([0.2] * 89, failed=1), LIMITS, looks=[90], last=False)
    assert one.held is None
    three = judge_level(_calls([0.2] * 17, failed=3), LIMITS, looks=[20], last=False)
    assert (three.held, three.broke_on, three.wrong_at_most) == (False, ("error_rate",), 0.02)


def test_first_token_p95_is_held_when_budgeted() -> None:
    """A level whose first tokens come late (every other call) breaks on first-token p95, its
    latency within."""
    limits = LevelLimits(concurrent_p95=BUDGET, ttft_p95=0.1)
    calls = LevelCalls(latencies=(0.5,) * 10, first_tokens=(0.4, 0.05) * 5, clumps=Clumps(10))
    judged = judge_level(calls, limits, looks=[10], last=False)
    assert (judged.held, judged.broke_on) == (False, ("ttft_p95",))


def test_a_level_with_no_successful_call_breaks() -> None:
    """Every call failed: no p95 to hold, the level breaks."""
    judged = judge_level(_calls([], failed=5), LIMITS, looks=[5], last=False)
    assert judged.held is False


# --- the search with calls, under the cap ----------------------------------------------------


def _start(concurrency: int, latencies: list[float]) -> RunLevel:
    """Level c0 as the run leaves it: these concurrent calls, at one look."""
    return RunLevel(concurrency, _calls(latencies), (len(latencies),))


def _drive(run: CapacityRun, latency: Callable[[int, int], float | None]) -> list[int]:
    """Feed the run bursts from a scripted endpoint: latency(concurrency, i) for call i."""
    bursts = []
    while (concurrency := run.next_burst()) is not None:
        bursts.append(concurrency)
        run.add_burst([_sample(latency(concurrency, i), i) for i in range(concurrency)], 0.5)
    return bursts


def _queue(slots: int, service: float) -> Callable[[int, int], float]:
    """Call i of a burst ends after ceil((i + 1) / slots) service times."""
    return lambda _c, i: (i // slots + 1) * service


def test_the_run_finds_a_queue_s_capacity_with_calls_and_seconds() -> None:
    """One slot, 0.3 s a call, a 1 s budget: 3 calls end within it, so 3 hold and 4 break.
    Level 10 breaks on bursts of its own (the run's 10 calls end over the budget in one run of
    7, one clump); level 2 and 3 hold after 90 calls each."""
    queue = _queue(1, 0.3)
    run = CapacityRun(
        LIMITS, maximum=64, room=2_000, start=_start(10, [queue(10, i) for i in range(10)])
    )
    bursts = _drive(run, queue)
    capacity = run.capacity()
    assert capacity.found == 3
    assert capacity.upper is None
    assert capacity.breaking == 4
    assert capacity.complete
    assert not capacity.stopped_by_cap
    assert [lv.concurrency for lv in capacity.levels] == [10, 5, 2, 3, 4]
    assert [lv.held for lv in capacity.levels] == [False, False, True, True, False]
    assert capacity.levels[0].decided_by == "test"
    assert [lv.calls for lv in capacity.levels[2:4]] == [90, 90]
    assert capacity.calls == sum(bursts)
    assert capacity.seconds == pytest.approx(0.5 * len(bursts))
    assert capacity.stopped == "3 held and 4 broke"
    # The levels' calls are their own, numbered from 0 within each level.
    two = capacity.levels[2]
    assert [s.index for s in two.samples] == list(range(two.calls))


def test_a_start_the_run_left_undecided_takes_bursts_of_its_own() -> None:
    """The run's 20 clean calls at 10 at once do not show a p95 within the budget (90 do): level
    10 takes bursts of its own to 90 calls, then the search doubles."""
    run = CapacityRun(LIMITS, maximum=20, room=10_000, start=_start(10, [0.2] * 20))
    assert run.next_burst() == 10
    _drive(run, lambda _c, _i: 0.2)
    capacity = run.capacity()
    first = capacity.levels[0]
    assert (first.concurrency, first.calls, first.held, first.decided_by) == (10, 90, True, "test")
    assert len(first.samples) == 70
    assert capacity.found == 20


def test_the_cap_stops_the_search_at_least_the_highest_level_that_held() -> None:
    """With room for 70 calls after a start that held, 20 at once takes three bursts (60 calls,
    undecided) and the fourth does not fit: the level is cut, near; the next level, 15, does
    not fit either, and the capacity is at least 10, said so."""
    run = CapacityRun(LIMITS, maximum=64, room=70, start=_start(10, [0.2] * 90))
    _drive(run, lambda _c, _i: 0.2)
    capacity = run.capacity()
    assert capacity.found == 10
    assert capacity.stopped_by_cap
    assert not capacity.complete
    assert capacity.calls == 60
    cut = capacity.levels[-1]
    assert (cut.concurrency, cut.calls, cut.decided_by, cut.near) == (20, 60, "max-calls", True)
    assert capacity.stopped == (
        "max-calls stopped the search: the next burst, 15 calls at once, did not fit in the 10 "
        "calls left"
    )


def test_capacity_max_reached_is_said() -> None:
    """Every level holding up to capacity-max 16: found 16, the most searched."""
    run = CapacityRun(LIMITS, maximum=16, room=10_000, start=_start(8, [0.1] * 96))
    _drive(run, lambda _c, _i: 0.1)
    capacity = run.capacity()
    assert (capacity.found, capacity.reached_max, capacity.complete) == (16, True, True)
    assert capacity.stopped == "every level held up to --capacity-max 16, the most searched"


def test_an_interrupted_search_keeps_its_levels_and_says_so() -> None:
    """An interrupt drops the level in progress; the capacity is at least what held."""
    run = CapacityRun(LIMITS, maximum=64, room=10_000, start=_start(4, [0.1] * 92))
    assert run.next_burst() == 8
    run.add_burst([_sample(0.1, i) for i in range(8)], 0.1)  # undecided: 8 calls
    run.interrupt()
    capacity = run.capacity()
    assert (capacity.found, capacity.complete, capacity.stopped) == (
        4,
        False,
        "the run was interrupted",
    )
    assert [lv.concurrency for lv in capacity.levels] == [4]


def test_levels_near_the_budget_are_said_as_an_interval() -> None:
    """An endpoint whose p95 sits at its budget from 13 calls at once on: 3 % of calls over it
    is near, 12 % too (neither side ruled out in 130 calls), 30 % breaks: between 12 and 16."""

    def latency(c: int, i: int) -> float:
        share = 0.0 if c <= 12 else 0.03 if c <= 16 else 0.3
        return 1.5 if (i * 7919 % 100) < share * 100 else 0.5

    start = [latency(10, i) for i in range(90)]
    run = CapacityRun(LIMITS, maximum=64, room=100_000, start=_start(10, start))
    _drive(run, latency)
    capacity = run.capacity()
    assert (capacity.found, capacity.upper, capacity.breaking) == (12, 16, 17)
    assert capacity.stopped == "12 held and 13 to 16 near the budget: between 12 and 16"


def test_a_file_s_capacity_judged_again_from_its_levels_calls() -> None:
    """A result file claiming a level held whose calls broke the budget: judged again, that
    level breaks and the capacity is the highest level that held below it."""
    queue = _queue(1, 0.3)
    concurrent = [_sample(queue(10, i), i) for i in range(10)]
    run = CapacityRun(
        LIMITS, maximum=64, room=2_000, start=_start(10, [queue(10, i) for i in range(10)])
    )
    _drive(run, queue)
    honest = run.capacity()
    edited = honest.model_copy(
        update={
            "found": 4,
            "levels": tuple(
                lv.model_copy(update={"held": True}) if lv.concurrency == 4 else lv
                for lv in honest.levels
            ),
        }
    )
    again = judged_again(edited, LIMITS, concurrent=concurrent, looks=[10])
    assert again.found == 3
    assert again.breaking == 4
    assert [lv.held for lv in again.levels] == [lv.held for lv in honest.levels]


@pytest.mark.slow
def test_the_simulation_of_the_search_runs(tmp_path: Path) -> None:
    """bench/capacitysim.py, a few runs a cell: every table comes out, a clear cell right."""
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "capacitysim.py"), "--runs", "3", "--no-caps"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for table in ("## levels", "## accuracy", "## minimum", "## cost"):
        assert table in done.stdout
    assert "| batched | 1 | 0.3 | 2.46 s | 1 | 0.1 % / 24.6 % | 100.0 % | 0.0 % |" in done.stdout
