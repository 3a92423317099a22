"""The capacity search as a state machine (assess/capacity.py), and its levels judged burst by
burst (assess/capacity_levels.py), with scripted levels: no endpoint."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from latency_gate.assess.capacity import CapacityRun, CapacitySearch, judged_again
from latency_gate.assess.capacity_levels import LevelCalls, LevelLimits, judge_level, level_record
from latency_gate.config.plan import (
    LEVEL_BURSTS,
    LEVEL_CALLS,
    level_bursts,
    search_worst_calls,
)
from latency_gate.models import CallPhase, CapacityLevel, ErrorKind, Sample

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


def _walk(start: int, maximum: int, holds: Callable[[int], bool]) -> list[int]:
    """The levels the search tries after `start`, against an endpoint that holds below some
    concurrency."""
    search = CapacitySearch(start=start, maximum=maximum)
    search.record(start, holds(start))
    tried = []
    while (level := search.next_level()) is not None:
        tried.append(level)
        search.record(level, holds(level))
    return tried


def test_doubles_from_the_run_then_halves_the_gap_to_one_call() -> None:
    """From 10, which held: 20, 40 (broke), then 30, 35, 37, 38: the capacity is 37."""
    search = CapacitySearch(start=10, maximum=64)
    search.record(10, True)
    tried = []
    while (level := search.next_level()) is not None:
        tried.append(level)
        search.record(level, level <= 37)
    assert tried == [20, 40, 30, 35, 37, 38]
    assert search.found == 37
    assert search.broke == 38


def test_a_broken_start_tries_one_call_first_then_halves() -> None:
    """From 10, which broke: level 1 first, then the middle of 1..10 down to one call."""
    assert _walk(10, 64, lambda c: c <= 3) == [1, 5, 3, 4]
    assert _walk(10, 64, lambda c: c <= 9) == [1, 5, 7, 8, 9]


def test_capacity_zero_when_even_one_call_breaks() -> None:
    """Level 1 breaking ends the search at 0; a start of 1 that broke ends it at once."""
    search = CapacitySearch(start=10, maximum=64)
    search.record(10, False)
    assert search.next_level() == 1
    search.record(1, False)
    assert search.next_level() is None
    assert search.found == 0
    assert _walk(1, 64, lambda c: False) == []


def test_capacity_max_ends_the_doubling() -> None:
    """Every level holding: 20, 40, then capacity-max itself (64), and no higher."""
    search = CapacitySearch(start=10, maximum=64)
    search.record(10, True)
    tried = []
    while (level := search.next_level()) is not None:
        tried.append(level)
        search.record(level, True)
    assert tried == [20, 40, 64]
    assert search.found == 64
    assert _walk(64, 64, lambda c: True) == []


@pytest.mark.parametrize(("start", "maximum"), [(1, 16), (3, 20), (10, 64), (16, 64), (5, 5)])
def test_every_capacity_is_found_for_a_monotone_endpoint(start: int, maximum: int) -> None:
    """Whatever the truth (0 to capacity-max), an endpoint that holds exactly up to it is found
    at it, in about log2 levels."""
    for truth in range(maximum + 1):
        search = CapacitySearch(start=start, maximum=maximum)
        search.record(start, start <= truth)
        levels = 0
        while (level := search.next_level()) is not None:
            levels += 1
            search.record(level, level <= truth)
        assert search.found == truth
        assert levels <= 2 * maximum.bit_length() + 1


@pytest.mark.parametrize(("start", "maximum"), [(1, 16), (4, 24), (10, 64), (16, 40)])
def test_the_plan_s_worst_case_is_the_search_s_costliest_path(start: int, maximum: int) -> None:
    """config/plan.search_worst_calls (what `max-calls: auto` adds) is the most calls any
    sequence of outcomes can make the search take, every level to its cap."""
    worst = 0
    for outcomes in itertools.product([True, False], repeat=14):
        search = CapacitySearch(start=start, maximum=maximum)
        given = iter(outcomes)
        search.record(start, next(given))
        calls = 0
        while (level := search.next_level()) is not None:
            calls += level * level_bursts(level)
            search.record(level, next(given))
        worst = max(worst, calls)
    assert search_worst_calls(start, maximum) == worst


def test_a_level_s_cap_in_bursts_and_calls() -> None:
    """16 bursts at most, none once a level has 80 calls; one burst of 64 or more."""
    assert (LEVEL_BURSTS, LEVEL_CALLS) == (16, 80)
    assert [level_bursts(c) for c in (1, 4, 5, 6, 10, 40, 41, 64)] == [16, 16, 16, 14, 8, 2, 2, 2]
    assert level_bursts(80) == 1
    assert level_bursts(200) == 1


# --- a level, burst by burst -----------------------------------------------------------------


def _calls(latencies: list[float], failed: int = 0) -> LevelCalls:
    return LevelCalls(latencies=tuple(latencies), failed=failed, calls=len(latencies) + failed)


def test_a_level_far_under_its_budget_holds_by_the_test_after_33_calls() -> None:
    """32 calls under the budget leave the p95 undecided; the 33rd decides PASS."""
    assert judge_level(_calls([0.2] * 32), LIMITS, looks=[32], last=False).held is None
    held = judge_level(_calls([0.2] * 33), LIMITS, looks=[33], last=False)
    assert (held.held, held.by, held.wrong_at_most) == (True, "test", 0.03)


def test_a_level_over_its_budget_breaks_at_once() -> None:
    """Four of ten calls over the budget break the level by the test, at its first burst."""
    broke = judge_level(_calls([0.5] * 6 + [1.5] * 4), LIMITS, looks=[10], last=False)
    assert (broke.held, broke.by, broke.broke_on, broke.wrong_at_most) == (
        False,
        "test",
        ("concurrent_p95",),
        0.01,
    )


def test_an_undecided_level_is_decided_by_its_value_at_its_last_burst() -> None:
    """Two of 20 over (10 %, undecided): at the last burst `estimate` holds the p95 against the
    budget; `pass` holds it whatever; the exact error rate of those looks is given."""
    calls = _calls([0.5] * 18 + [1.2, 1.3])
    looks = [10, 20]
    assert judge_level(calls, LIMITS, looks=looks, last=False).held is None
    at_cap = judge_level(calls, LIMITS, looks=looks, last=True)
    assert (at_cap.held, at_cap.by, at_cap.broke_on) == (False, "level cap", ("concurrent_p95",))
    assert at_cap.wrong_at_most is not None
    assert 0 < at_cap.wrong_at_most < 0.5
    passing = LevelLimits(concurrent_p95=BUDGET, on_undecided="pass")
    assert judge_level(calls, passing, looks=looks, last=True).held is True


def test_failures_break_a_level_and_ask_for_more_calls_only_once_one_failed() -> None:
    """A clean level is not held back by its error rate (127 clean calls pass a 1 % budget);
    one failure keeps it open; three of 20 break it by the test."""
    clean = judge_level(_calls([0.2] * 40), LIMITS, looks=[40], last=False)
    assert clean.held is True
    one = judge_level(_calls([0.2] * 39, failed=1), LIMITS, looks=[40], last=False)
    assert one.held is None
    three = judge_level(_calls([0.2] * 17, failed=3), LIMITS, looks=[20], last=False)
    assert (three.held, three.broke_on, three.wrong_at_most) == (False, ("error_rate",), 0.02)


def test_first_token_p95_is_held_when_budgeted() -> None:
    """A level whose first tokens come late breaks on first-token p95, its latency within."""
    limits = LevelLimits(concurrent_p95=BUDGET, ttft_p95=0.1)
    calls = LevelCalls(latencies=(0.5,) * 10, first_tokens=(0.4,) * 10, calls=10)
    judged = judge_level(calls, limits, looks=[10], last=False)
    assert (judged.held, judged.broke_on) == (False, ("ttft_p95",))


def test_a_level_with_no_successful_call_breaks() -> None:
    """Every call failed: no p95 to hold, the level breaks."""
    judged = judge_level(_calls([], failed=5), LIMITS, looks=[5], last=False)
    assert judged.held is False


# --- the search with calls, under the cap ----------------------------------------------------


def _start(concurrency: int, held: bool) -> CapacityLevel:
    return level_record(
        concurrency,
        _calls([0.2] * concurrency),
        held=held,
        by="the run",
        bursts=1,
        seconds=None,
        wrong_at_most=None,
    )


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
    """One slot, 0.3 s a call, a 1 s budget: 3 calls end within it, so 3 hold and 4 break."""
    run = CapacityRun(LIMITS, maximum=64, room=2_000, start_level=_start(10, held=False))
    bursts = _drive(run, _queue(1, 0.3))
    capacity = run.capacity()
    assert capacity.found == 3
    assert capacity.breaking == 4
    assert capacity.complete
    assert not capacity.stopped_by_cap
    assert [lv.concurrency for lv in capacity.levels] == [10, 1, 5, 3, 4]
    assert [lv.held for lv in capacity.levels] == [False, True, False, True, False]
    assert capacity.calls == sum(bursts)
    assert capacity.seconds == pytest.approx(0.5 * len(bursts))
    assert capacity.stopped == "3 held and 4 broke"
    # The levels' calls are their own, numbered from 0 within each level.
    one = capacity.levels[1]
    assert [s.index for s in one.samples] == list(range(one.calls))


def test_the_cap_stops_the_search_at_least_the_highest_level_that_held() -> None:
    """With room for 70 calls, the 20-call level holds after two bursts (40 calls: the test
    passes at 33 clean ones) and the next, 40 at once, does not fit: at least 20, said so."""
    run = CapacityRun(LIMITS, maximum=64, room=70, start_level=_start(10, held=True))
    _drive(run, lambda _c, _i: 0.2)
    capacity = run.capacity()
    assert capacity.found == 20
    assert capacity.stopped_by_cap
    assert not capacity.complete
    assert capacity.calls == 40
    assert capacity.stopped == (
        "max-calls stopped the search: the next burst, 40 calls at once, did not fit in the 30 "
        "calls left"
    )


def test_a_level_cut_by_the_cap_is_decided_by_the_policy_on_its_calls() -> None:
    """Room for two bursts of 20 with 4 of 40 calls over: the level is cut, decided by its
    value (p95 over the budget: it broke), and the search is stopped."""
    run = CapacityRun(LIMITS, maximum=64, room=40, start_level=_start(10, held=True))
    _drive(run, lambda _c, i: 1.5 if i < 2 else 0.2)
    capacity = run.capacity()
    cut = capacity.levels[-1]
    assert (cut.concurrency, cut.calls, cut.decided_by) == (20, 40, "max-calls")
    assert capacity.found == 10
    assert capacity.stopped_by_cap


def test_capacity_max_reached_is_said() -> None:
    """Every level holding up to capacity-max 16: found 16, the most searched."""
    run = CapacityRun(LIMITS, maximum=16, room=10_000, start_level=_start(8, held=True))
    _drive(run, lambda _c, _i: 0.1)
    capacity = run.capacity()
    assert (capacity.found, capacity.reached_max, capacity.complete) == (16, True, True)
    assert capacity.stopped == "every level held up to --capacity-max 16, the most searched"


def test_an_interrupted_search_keeps_its_levels_and_says_so() -> None:
    """An interrupt drops the level in progress; the capacity is at least what held."""
    run = CapacityRun(LIMITS, maximum=64, room=10_000, start_level=_start(4, held=True))
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


def test_a_file_s_capacity_judged_again_from_its_levels_calls() -> None:
    """A result file claiming a level held whose calls broke the budget: judged again, that level
    breaks and the capacity is the highest level that held below it."""
    run = CapacityRun(LIMITS, maximum=64, room=2_000, start_level=_start(10, held=False))
    _drive(run, _queue(1, 0.3))
    honest = run.capacity()
    edited = honest.model_copy(
        update={
            "found": 5,
            "levels": tuple(
                lv.model_copy(update={"held": True}) if lv.concurrency == 5 else lv
                for lv in honest.levels
            ),
        }
    )
    again = judged_again(edited, LIMITS, concurrent=[], looks=[10], run_check=None)
    assert again.found == 3
    assert again.breaking == 4
    assert [lv.held for lv in again.levels] == [lv.held for lv in honest.levels]


def test_the_simulation_of_the_search_runs(tmp_path: Path) -> None:
    """bench/capacitysim.py, a few runs a cell: every table comes out, the clear cells right."""
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "capacitysim.py"), "--runs", "20"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for table in ("## levels", "## accuracy", "## cost", "## caps"):
        assert table in done.stdout
    assert "| queued | 1 | 1.5 s | 1 | 0.0 % / 49.9 % | 100.0 % | 0.0 % | 0.0 % |" in done.stdout
