"""Calls at a rate and the goodput search, without a network: the settings, the plan worked out
before the first call, the search's rates, one level's judged calls (latency from due, calls in
flight past the budget, the warm-up, the hold), the client that fell behind, the verdict's rows
and the two capacities side by side. The engine's side is in tests/test_goodput_probe.py."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from goodput_driver import Clocked, drive, drive_one_slot, goodput_against_history
from result_factory import make_result

from latency_gate.action.outputs import output_values
from latency_gate.assess.load.headline import goodput_headline, littles_law
from latency_gate.assess.load.levels import (
    HOLD_TEST,
    LevelLimits,
    clumped_decision,
    level_decision,
)
from latency_gate.assess.load.open_level import OpenLevel, judged_calls
from latency_gate.assess.load.per_second import RateRun, RateSearch, start_rates
from latency_gate.assess.load.regression import search_delta
from latency_gate.assess.load.verdict import goodput_checks
from latency_gate.assess.maths.sequential import Decision
from latency_gate.config import Target, build_target
from latency_gate.config.parsing import parse_rate, parse_rate_for
from latency_gate.config.plan.feasible import plan_warnings
from latency_gate.config.plan.hypotheses import hold_calls
from latency_gate.config.plan.needs import effective_max_calls
from latency_gate.config.plan.search import goodput_plan
from latency_gate.config.regression import RegressionLimit
from latency_gate.config.targets_file import parse_targets
from latency_gate.errors import ConfigError
from latency_gate.measure.limits import largest_burst
from latency_gate.models import Capacity, Goodput
from latency_gate.report.load import goodput_view
from latency_gate.report.markdown import render_summary

URL = "http://127.0.0.1:1/"
URL_PATH = Path("/tmp/workspace/result.json")


def _target(**raw: str) -> Target:
    return build_target({"url": URL, **raw})


def _problem(**raw: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _target(**raw)
    return str(caught.value)


# --- settings and the plan -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rate"), [("5/s", 5.0), ("300/min", 5.0), ("0.5", 0.5), ("7200/h", 2.0)]
)
def test_rates_are_read_in_requests_a_second(text: str, rate: float) -> None:
    """A rate per second, minute or hour, or a bare number of requests a second."""
    assert parse_rate(text) == rate


def test_a_bad_rate_is_named_with_what_was_expected() -> None:
    """A rate that is not one names the input and gives examples (exit 2 at the edges)."""
    message = _problem(rate="fast")
    assert "rate" in message
    assert "expected a rate such as 5/s, 300/min or 0.5" in message


def test_rate_for_takes_calls_or_a_duration() -> None:
    """`200` and `200 calls` are calls, `60s` and `2m` durations, auto neither."""
    assert parse_rate_for("200") == (200, None)
    assert parse_rate_for("200 calls") == (200, None)
    assert parse_rate_for("60s") == (None, 60.0)
    assert parse_rate_for("2m") == (None, 120.0)
    assert parse_rate_for("auto") == (None, None)
    assert "a number of calls (200), a duration (60s, 2m) or auto" in _problem(
        **{"rate": "5/s", "rate-for": "soon"}
    )


def test_a_minimum_rate_implies_the_search() -> None:
    """min-rate alone searches the goodput: a minimum to hold is a search to make."""
    target = _target(**{"min-rate": "4/s"})
    assert (target.goodput, target.min_rate) == (True, 4.0)


def test_calls_at_a_rate_need_a_budget_under_load() -> None:
    """With max-concurrent-p95 off there is nothing to hold a level to: refused, named."""
    message = _problem(rate="5/s", **{"max-concurrent-p95": "off"})
    assert "rate" in message
    assert "max-concurrent-p95, and it is off" in message


def test_a_goodput_time_with_no_room_for_arrivals_is_refused() -> None:
    """Ten levels that may each wait out a 30 s timeout cannot fit in 5 minutes of arrivals."""
    message = _problem(goodput="true", **{"goodput-time": "5m"})
    assert "goodput-time" in message
    assert "leaves no time for arrivals" in message


def test_auto_max_calls_leaves_room_for_the_worst_case_and_says_it() -> None:
    """The search's worst case (10 levels of 1,000 calls) is added to the checks' 500, and
    the report says both, and what a level is, before the first call."""
    target = _target(goodput="true")
    assert effective_max_calls(target) == 10_500
    assert plan_warnings(target) == [
        "max-calls sized to 10,500: 500 for the checks and up to 10,000 for the calls at a rate",
        "the goodput search can take up to 10,000 calls and 51.5 min (10 levels of at most "
        "1,000 calls and 4.7 min of arrivals, the first 9 s of them not judged); at rates under "
        "0.481/s a level lasts until about 130 calls are due after its warm-up (the tests need "
        "about 90 to hold), longer than that",
    ]


def test_a_slow_level_lasts_until_its_tests_can_hold_it() -> None:
    """The tests need about 90 calls to hold a level: at 0.25/s against a 3 s budget (279 s of
    arrivals, 68 of them judged) the auto length runs on until 130 are due after the warm-up;
    a fast level keeps its 279 s; a length fitted to goodput-time is not lengthened."""
    length = goodput_plan(_target(goodput="true"))
    assert length is not None
    auto = length.length
    assert auto.seconds_at(0.25) == pytest.approx(9.0 + 130 / 0.25)
    assert auto.calls_at(0.25) == math.ceil(0.25 * (9.0 + 130 / 0.25))
    assert auto.seconds_at(5.0) == 279.0
    timed = goodput_plan(_target(goodput="true", **{"goodput-time": "10m"}))
    assert timed is not None
    assert timed.length.seconds_at(0.25) == timed.length.seconds


def test_levels_are_fitted_to_max_calls_and_goodput_time() -> None:
    """Under a given cap and time, each level is shortened so the worst case fits both."""
    target = _target(goodput="true", **{"max-calls": "3000", "goodput-time": "10m"})
    plan = goodput_plan(target, 2_500)
    assert plan is not None
    assert (plan.length.calls, plan.length.seconds) == (250, 30.0)
    assert plan.worst_calls <= 2_500
    assert plan.worst_seconds <= 600
    assert "levels fitted to the caps" in " ".join(plan_warnings(target))


def test_rate_settings_are_not_compared_with_a_baseline() -> None:
    """A run with calls at a rate measures its five numbers as one without: a baseline of
    either compares; a run without them does not gain their settings in its file."""
    assert _target(rate="5/s", goodput="true").comparable() == _target().comparable()
    assert "rate" not in _target().redacted()
    assert _target(rate="5/s").redacted()["rate"] == 5.0


def test_a_targets_file_gives_each_target_its_own_rate() -> None:
    """`rate:` per target in a targets file; a bad one names the file and the line."""
    text = (
        "targets:\n  - name: a\n    url: http://127.0.0.1:1/\n    rate: 5/s\n"
        "  - name: b\n    url: http://127.0.0.1:2/\n    goodput: true\n    min-rate: 2/s\n"
    )
    a, b = parse_targets(text, name="t.yml", suffix=".yml", environ={})
    assert (a.rate, a.goodput, b.rate, b.goodput, b.min_rate) == (5.0, False, None, True, 2.0)
    with pytest.raises(ConfigError) as caught:
        parse_targets(text.replace("5/s", "fast"), name="t.yml", suffix=".yml", environ={})
    assert "t.yml:4: target 'a', rate: expected a rate such as 5/s" in str(caught.value)


def test_the_open_files_check_counts_the_calls_in_flight_at_a_rate() -> None:
    """A run at a rate may hold 256 calls at once, a connection each: the limit check counts
    them, naming the setting."""
    assert largest_burst(_target(rate="5/s")) == (256, "rate")
    assert largest_burst(_target(goodput="true")) == (256, "goodput")
    assert largest_burst(_target()) == (10, "concurrency")


# --- the search ------------------------------------------------------------------------------


def _searched(start: float, truth: float) -> tuple[list[float], float]:
    search = RateSearch(start)
    tried = []
    while (rate := search.next_rate()) is not None:
        tried.append(rate)
        search.record(rate, "held" if rate <= truth else "broke")
    return tried, search.found


def test_the_search_doubles_then_bisects_to_ten_percent() -> None:
    """From 1/s against a truth of 5.3/s: 1, 2, 4, 8 (broke), then geometric middles until
    the rate that broke is within 10 % of the one that held."""
    tried, found = _searched(1.0, 5.3)
    assert tried == [1.0, 2.0, 4.0, 8.0, 5.66, 4.76, 5.19]
    assert found == 5.19


def test_a_broken_start_halves_first() -> None:
    """From 10/s against 1.3/s: halved until one holds, then bisected."""
    tried, found = _searched(10.0, 1.3)
    assert tried[:4] == [10.0, 5.0, 2.5, 1.25]
    assert 1.25 <= found <= 1.3


def test_the_search_goes_six_steps_either_way() -> None:
    """Every level holding stops at 64 times the start; every one breaking at a 64th of it,
    with nothing held."""
    assert _searched(1.0, 1e9) == ([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0], 64.0)
    tried, found = _searched(1.0, 1e-9)
    assert (tried[-1], found) == (0.0156, 0.0)


# --- one level -------------------------------------------------------------------------------

LIMITS = LevelLimits(concurrent_p95=1.0)
# Calls all over the budget are one run of them, one event per 10 calls (clumped_decision): 41
# in a row are the fewest that break a level (5 events); 60 break it at their look.
LONG_RUN = 60


def _calls(latencies: list[float | None], *, lag: float = 0.0, at: float = 100.0) -> list[Clocked]:
    """Calls due a second apart; None: still in flight at `at`."""
    clock = [at]
    return [
        Clocked(float(i), math.inf if lat is None else lat, i, clock, lag)
        for i, lat in enumerate(latencies)
    ]


def test_a_call_in_flight_past_the_budget_is_judged_over_it() -> None:
    """A call that has waited longer than the budget cannot come back within it: it is in the
    judged calls, over the budget, though it has not ended."""
    calls = _calls([0.2, None, 0.3], at=2.5)  # the second, due at 1, has waited 1.5 s
    judged, last = judged_calls(calls, 2.5, LIMITS, warmup=0.0)
    assert judged.calls == 3
    assert sum(lat > 1.0 for lat in judged.latencies) == 1
    assert last == 2.0


def test_a_call_that_may_still_come_back_stops_the_judged_calls() -> None:
    """The judged calls are a prefix of the arrivals: a slow call not yet past the budget keeps
    the faster calls after it out, so a judgement never leaves out the slow ones."""
    calls = _calls([0.2, None, 0.1, 0.1], at=1.5)  # the second has waited 0.5 s
    judged, _ = judged_calls(calls, 1.5, LIMITS, warmup=0.0)
    assert judged.calls == 1


def test_latency_counts_from_when_the_call_was_due() -> None:
    """0.8 s from t0, sent 0.3 s late: 1.1 s from due, over a 1 s budget."""
    judged, _ = judged_calls(_calls([0.8], lag=0.3), 100.0, LIMITS, warmup=0.0)
    assert len(judged.latencies) == 1
    assert judged.latencies[0] == pytest.approx(1.1)


def test_the_warm_up_s_calls_are_made_not_judged() -> None:
    """Calls due in the warm-up are left out of the judgement."""
    judged, _ = judged_calls(_calls([5.0, 5.0, 0.1, 0.1]), 100.0, LIMITS, warmup=2.0)
    assert (judged.calls, judged.latencies) == (2, (0.1, 0.1))


def test_a_level_holds_only_once_its_calls_span_the_hold_time() -> None:
    """Ninety-five clean calls pass the hold test (it needs 89), but a level whose judged calls
    span 94 s of a 100 s hold is not held yet; by 101 s it is."""
    level = OpenLevel(1.0, LIMITS, warmup=0.0, hold=100.0, lag_limit=1.0)
    assert not level.look(_calls([0.1] * 95, at=200.0), 200.0)
    level = OpenLevel(1.0, LIMITS, warmup=0.0, hold=100.0, lag_limit=1.0)
    assert level.look(_calls([0.1] * 102, at=200.0), 200.0)
    assert level.judged is not None
    assert level.judged.held


def test_calls_over_the_budget_in_a_run_are_one_clump_of_evidence() -> None:
    """Eight calls of twenty over the budget break a level called one by one, and when they are
    apart; eight in a row, as a queue's slow stretch gives them, are one clump: not broken yet."""
    within, over = [0.5] * 12, [1.5] * 8
    in_a_run = within[:6] + over + within[6:]
    apart = [value for pair in zip(over, within, strict=False) for value in pair] + within[8:]
    assert level_decision(in_a_run, 1.0) is Decision.FAIL
    assert clumped_decision(apart, 1.0) is Decision.FAIL
    assert clumped_decision(in_a_run, 1.0) is Decision.UNDECIDED


def test_a_clean_level_holds_after_as_many_calls_as_before() -> None:
    """With no call over the budget the clumps change nothing: 90 clean calls hold (89 do not),
    as the calls counted one by one do (config.plan.hypotheses.hold_calls says so before a run)."""
    assert hold_calls() == 90
    assert clumped_decision([0.5] * 89, 1.0) is Decision.UNDECIDED
    assert clumped_decision([0.5] * 90, 1.0) is Decision.PASS


def test_a_run_over_the_budget_asks_more_calls_before_a_hold() -> None:
    """Two calls over the budget in a row weigh as a clump of two: the level holds later than
    it would with the two counted as independent calls. Two apart are two clumps of one, and
    hold as soon as calls counted one by one do."""

    def first_held(decide: Callable[[list[float], float], Decision]) -> int:
        return next(
            n for n in range(10, 2000) if decide([1.5, 1.5] + [0.5] * (n - 2), 1.0) is Decision.PASS
        )

    alone, clumped = first_held(level_decision), first_held(clumped_decision)
    assert alone < clumped
    apart = [1.5, 0.5, 1.5] + [0.5] * (alone - 3)
    assert clumped_decision(apart, 1.0) is Decision.PASS
    assert clumped_decision(apart[:-1], 1.0) is not Decision.PASS


def test_a_client_that_fell_behind_is_named_not_the_endpoint() -> None:
    """Calls sent 0.9 s late to an endpoint answering in 0.2 s break a 1 s budget from due,
    but not from t0: the level is the client's, neither held nor broken by the endpoint."""
    level = OpenLevel(50.0, LIMITS, warmup=0.0, hold=1.0, lag_limit=0.01)
    calls = _calls([0.2] * LONG_RUN, lag=0.9)
    level.look(calls, 100.0)
    record = level.close(calls, 40.0)
    assert (record.client_behind, record.held, record.decided_by) == (True, False, "client")
    assert record.send_lag_p95 == pytest.approx(0.9)


def test_a_slow_endpoint_with_a_late_client_is_still_the_endpoint_s() -> None:
    """When the endpoint's own latencies break the budget too, the level broke: a late client
    does not excuse a slow endpoint."""
    level = OpenLevel(50.0, LIMITS, warmup=0.0, hold=1.0, lag_limit=0.01)
    calls = _calls([1.5] * LONG_RUN, lag=0.9)
    level.look(calls, 100.0)
    record = level.close(calls, 40.0)
    assert (record.client_behind, record.held, record.decided_by) == (False, False, "test")


@pytest.mark.parametrize(("lag", "behind"), [(0.05, False), (0.2, True)])
def test_a_lag_under_a_tenth_of_the_budget_is_not_the_client_falling_behind(
    lag: float, behind: bool
) -> None:
    """Calls the endpoint answers in 0.97 s against a 1 s budget: from due they are over it. A
    send lag of 50 ms (a loaded machine's, the gate's floor 0.4 ms) is under a tenth of the
    budget: the level broke, the endpoint's, as the search goes on. A lag of 200 ms is the
    client's: the level is neither held nor broken."""
    run = _run(goodput="true", rate="1/s")
    run.floor = 0.0004
    assert run.lag_limit == pytest.approx(0.1)
    level = OpenLevel(50.0, LIMITS, warmup=0.0, hold=1.0, lag_limit=run.lag_limit)
    calls = _calls([0.97] * LONG_RUN, lag=lag)
    level.look(calls, 100.0)
    record = level.close(calls, 40.0)
    assert (record.client_behind, record.held) == (behind, False)
    assert record.decided_by == ("client" if behind else "test")


# --- a run of levels -------------------------------------------------------------------------


def _run(**raw: str) -> RateRun:
    target = _target(**{"max-concurrent-p95": "1s", **raw})
    return start_rates(target, [], max_calls=effective_max_calls(target))


def test_the_goodput_of_a_one_slot_queue_is_an_interval_where_levels_were_near() -> None:
    """One slot, 0.25 s a call, a 1 s budget (M/D/1, whose p95 reaches 1 s near 2.5/s): from
    1/s the levels hold, then 2/s and 1.83/s end near the budget (a call or two of ~130 over
    it: the tests can neither hold nor break them), so the search bisects below them and, no
    level broken, says the goodput is at least the highest rate that held: a near level bounds
    nothing, so there is no upper end."""
    run = _run(goodput="true", rate="1/s")
    drive_one_slot(run)
    goodput = run.goodput()
    assert goodput.complete
    near = [level.rate for level in goodput.levels if level.near]
    assert near == [2.0, 1.83]
    assert all(level.decided_by == "level cap" for level in goodput.levels if level.near)
    assert (goodput.found, goodput.upper, goodput.breaking) == (1.68, None, None)
    assert min(near) / goodput.found <= 1.1
    assert goodput.tokens_per_s == pytest.approx(goodput.found * 64)
    assert goodput.calls == sum(level.calls for level in goodput.levels)
    assert goodput_headline(goodput).startswith(
        "holds p95 ≤ 1.00 s up to at least 1.68/s (poisson arrivals): 1.68/s held, 108 output "
        "tokens/s (rules out a p95 over 1.00 s; wrong at most 2.5 %)"
    )
    assert goodput_headline(goodput).endswith(
        "1.83/s and 2/s were near the budget (their calls could not tell); no rate tried broke it"
    )
    assert goodput.stopped == (  # the stop sentence names the near rates as the headline does
        "1.68/s held, 1.83/s and 2/s near the budget and no rate tried broke it: at least 1.68/s"
    )


def test_max_calls_stops_the_search_and_the_figure_is_at_least() -> None:
    """When the run's looks left fewer calls than the levels were fitted to (250 here), the
    search stops when the next level does not fit, and says the goodput is at least what held."""
    run = _run(goodput="true", rate="1/s", **{"max-calls": "3000"})
    run.room = 250
    drive_one_slot(run)
    goodput = run.goodput()
    assert (goodput.complete, goodput.stopped_by_cap) == (False, True)
    assert "max-calls left" in goodput.stopped
    assert goodput_headline(goodput).startswith("holds p95 ≤ 1.00 s up to at least ")


def test_a_client_that_falls_behind_stops_the_search() -> None:
    """Above 8/s the simulated client sends 2 s late: the search stops there, the goodput is
    at least the highest rate that held, and the level at 8/s is not counted as broken."""
    run = _run(goodput="true", rate="2/s")
    drive(run, 64, lambda _: 0.1, lag=lambda rate: 2.0 if rate >= 8 else 0.0)
    goodput = run.goodput()
    assert goodput.client_limit == 8.0
    assert (goodput.found, goodput.complete) == (4.0, False)
    assert "the client could not send 8/s" in goodput.stopped
    assert goodput.breaking is None


def test_a_level_holds_only_where_it_judges_enough_calls() -> None:
    """A hold needs 90 clean judged calls (the hold test's own count); a level fitted to a
    90 s goodput-time (7 s of arrivals, 2.3 s of them warm-up) judges 93 at 20/s, and the
    rates it can hold at start where even two Poisson deviations short leave 90: 23.8/s.
    Above 381/s its warm-up (2.3 s) leaves too few of its 1,000 calls; with max-calls' 250 a
    level and a 3 s budget's 9 s warm-up, above 15.4/s."""
    assert hold_calls() == HOLD_TEST.clean_trials_to_pass()
    timed = goodput_plan(_target(goodput="true", timeout="2s", **{"goodput-time": "90s"}))
    assert timed is not None
    length = timed.length
    assert length.judged_at(20.0) == pytest.approx(20 * (7 - 7 / 3))
    lowest, highest = length.holding_rates()
    assert lowest == pytest.approx(23.8, abs=0.01)
    assert highest == pytest.approx((1000 - 111.1) / (7 / 3), abs=0.1)  # its 1,000 calls
    assert (length.holds_at(lowest * 0.99), length.holds_at(lowest * 1.01)) == (False, True)
    auto = goodput_plan(_target(goodput="true"))
    assert auto is not None
    assert auto.length.holding_rates()[0] == 0.0  # lengthened to 130 judged calls at low rates
    capped = goodput_plan(_target(goodput="true", **{"max-calls": "3000"}), 2_500)
    assert capped is not None
    low, high = capped.length.holding_rates()
    assert low == 0.0
    assert high == pytest.approx((250 - 111.1) / 9.0, abs=0.1)


def _fitted(rate: str, slots: int, service: float) -> Goodput:
    """The search under a 90 s goodput-time (levels of 7 s) from `rate`, against `slots` slots
    of `service` seconds a call and a 1 s budget."""
    run = _run(goodput="true", rate=rate, timeout="2s", **{"goodput-time": "90s"})
    drive(run, slots, lambda _: service)
    return run.goodput()


def test_levels_too_short_to_hold_at_the_start_start_where_they_can() -> None:
    """From 15/s, levels of 7 s judge about 70 calls and end near the budget whatever the
    endpoint does: the search used to halve under them down to a level with no call judged,
    call it broken and report a goodput of 0 against two slots of 50 ms (a p95 a tenth of the
    budget; the nightly workflow's act run). After 15/s (near: its row is what a `--rate 15/s`
    gate reads), it goes on from 23.9/s, the lowest rate whose level can hold, and finds the
    goodput near the two slots' 40/s: 47.8/s held here (p95 0.75 s), as a level this short can
    (in 4.7 s of judged arrivals a queue growing by 8 calls a second has not reached the budget's
    wait; docs/design.md says what short levels cannot see)."""
    goodput = _fitted("15/s", 2, 0.05)
    assert (goodput.start, goodput.restarted_at) == (15.0, 23.9)
    first, *searched = goodput.levels
    assert (first.rate, first.near, first.judged < 90) == (15.0, True, True)
    assert searched[0].rate == 23.9
    assert searched[0].held
    assert goodput.complete
    assert 35.0 <= goodput.found <= 48.0
    assert goodput.breaking is not None
    assert goodput.breaking / goodput.found <= 1.1
    view = goodput_view(make_result().model_copy(update={"goodput": goodput}))
    assert view is not None
    assert view.cost.endswith(
        "A level this short judges too few calls to hold under 23.9/s: after 15/s, the search "
        "went on from 23.9/s."
    )


def test_a_search_never_halves_below_the_rates_its_levels_can_hold() -> None:
    """One slot of 50 ms (20/s at most) under the same cap: 15/s is near, 23.9/s breaks, and the
    next level, 11.9/s, could not hold in 7 s; the search stops there, cut by its cap, and says
    the goodput is under the rate that broke, not 0 from a level that judged nothing."""
    goodput = _fitted("15/s", 1, 0.05)
    assert [(lv.rate, lv.held, lv.near) for lv in goodput.levels] == [
        (15.0, False, True),
        (23.9, False, False),
    ]
    assert (goodput.found, goodput.breaking, goodput.upper) == (0.0, 23.9, 23.9)
    assert (goodput.complete, goodput.stopped_by_cap) == (False, True)
    assert goodput.stopped.startswith(
        "a level at 11.9/s would judge about 56 calls after its warm-up, under the 90 a level "
        "needs to hold (goodput-time 90 s: at most 7 s of arrivals a level): levels can hold "
        "only from 23.8/s to 381/s, so the search stops there"
    )
    headline = goodput_headline(goodput)
    assert headline.startswith("was not shown to hold p95 ≤ 1.00 s at any rate (a level at 11.9/s")
    assert headline.endswith("so the search stops there); breaks at 23.9/s (p95 1.52 s)")


def test_a_level_with_no_call_judged_is_near_not_broken() -> None:
    """Every call due in the warm-up: the level judged nothing, and says nothing (it used to
    break for want of data)."""
    level = OpenLevel(1.0, LIMITS, warmup=10.0, hold=1.0, lag_limit=1.0)
    record = level.close(_calls([0.1] * 5), 6.0)
    assert record.judged == 0
    assert (record.held, record.near, record.decided_by) == (False, True, "level cap")


# --- the verdict's rows ----------------------------------------------------------------------


def _goodput(found: float, breaking: float | None, **update: object) -> Goodput:
    """The search of the one-slot queue above, its highest level that held said to be at
    `found` and one near level said to have broken at `breaking`, none near (the levels told
    apart), then `update`."""
    run = _run(goodput="true", rate="1/s")
    drive_one_slot(run)
    goodput = run.goodput()
    top = max((lv for lv in goodput.levels if lv.held), key=lambda lv: lv.rate)
    levels = [
        lv.model_copy(update={"rate": found}) if lv is top else lv
        for lv in goodput.levels
        if not lv.near
    ]
    if breaking is not None:
        near = next(lv for lv in goodput.levels if lv.near)
        broke = {"rate": breaking, "near": False, "decided_by": "test"}
        levels.append(near.model_copy(update={**broke, "broke_on": ("concurrent_p95",)}))
    fields = {"found": found, "breaking": breaking, "upper": None, "levels": tuple(levels)}
    return goodput.model_copy(update={**fields, **update})


def test_min_rate_passes_at_or_above_and_fails_below() -> None:
    """The goodput row is a floor: 2.6/s held passes a 2.5/s minimum and 2.83/s broke fails a
    3/s one, saying what the levels ruled out; without a minimum it is reported."""
    goodput = _goodput(2.6, 2.83)
    (row,) = goodput_checks(goodput, asked=None, min_rate=2.5, searched=True)
    assert (row.number, row.passed, row.value, row.limit) == ("goodput", True, 2.6, 2.5)
    (row,) = goodput_checks(goodput, asked=None, min_rate=3.0, searched=True)
    assert (row.passed, row.decided) == (False, True)
    assert row.meaning.startswith(
        "FAIL: 2.6/s (held; 2.83/s broke); 2.83/s broke, at or under the 3/s asked"
    )
    (row,) = goodput_checks(goodput, asked=None, min_rate=None, searched=True)
    assert row.passed is None


def test_min_rate_inside_the_search_s_last_step_is_undecided() -> None:
    """2.7/s asked, 2.6/s held and 2.83/s broke (no level near): neither rate says anything of
    2.7/s, so it is undecided and on-undecided decides (it was a FAIL before: the search's
    precision taken for a bound); the same above every rate tried when none broke."""
    goodput = _goodput(2.6, 2.83)
    (row,) = goodput_checks(goodput, asked=None, min_rate=2.7, searched=True)
    assert (row.passed, row.decided, row.by_policy) == (True, False, True)
    assert row.meaning.startswith(
        "PASS: undecided, the goodput is 2.6/s (held; 2.83/s broke) and the 2.7/s asked lies "
        "between the rate held and the rate broken"
    )
    failing = goodput.model_copy(update={"on_undecided": "fail"})
    (row,) = goodput_checks(failing, asked=None, min_rate=2.7, searched=True)
    assert (row.passed, row.decided) == (False, False)
    (row,) = goodput_checks(_goodput(2.6, None), asked=None, min_rate=3.0, searched=True)
    assert (row.passed, row.decided) == (True, False)
    assert "every rate tried held, the highest under 3/s, and none broke" in row.meaning


def test_a_search_stopped_below_the_minimum_is_undecided() -> None:
    """Stopped by a cap at 2.6/s, nothing at or under a 3/s minimum broke: undecided, failed
    only with on-undecided fail."""
    goodput = _goodput(2.6, None, complete=False, stopped="max-calls left 12 calls")
    (row,) = goodput_checks(goodput, asked=None, min_rate=3.0, searched=True)
    assert (row.passed, row.decided, row.by_policy) == (True, False, True)
    failing = goodput.model_copy(update={"on_undecided": "fail"})
    (row,) = goodput_checks(failing, asked=None, min_rate=3.0, searched=True)
    assert row.passed is False


def test_a_goodput_held_within_the_limit_of_the_base_s_is_not_a_regression() -> None:
    """Against an earlier search that held 2.1/s, with a 10 % limit, the goodput regresses below
    2.1 / 1.1 = 1.91/s: 2/s held there is NOT REGRESSED, whatever broke above it."""
    delta = search_delta(
        "goodput", _goodput(2.0, 2.2), [_goodput(2.1, 2.3)], RegressionLimit(0.10, None)
    )
    assert delta is not None
    assert (delta.number, delta.base, delta.head) == ("goodput", 2.1, 2.0)
    assert (delta.outcome, delta.regressed, delta.decided) == ("not regressed", False, True)


def test_a_rate_under_the_threshold_that_broke_is_a_regression() -> None:
    """1.6/s broke, under the 1.82/s a 2/s base less 10 % sets: the goodput is under it,
    REGRESSED, and the row says the threshold, the base and the rate that broke; a near level
    above the rate held bounds it the same way (`upper`)."""
    limit = RegressionLimit(0.10, None)
    delta = search_delta("goodput", _goodput(1.41, 1.6), [_goodput(2.0, 2.2)], limit)
    assert delta is not None
    assert (delta.outcome, delta.regressed, delta.by_policy) == ("regressed", True, False)
    assert delta.note == (
        "regresses below 1.82/s (the base's 2/s, the rate it held, less the 10 % limit); "
        "1.6/s broke"
    )
    near = _goodput(1.41, 2.0, upper=1.7)
    delta = search_delta("goodput", near, [_goodput(2.0, 2.2)], limit)
    assert delta is not None
    assert delta.regressed
    assert delta.note.endswith("; 1.7/s broke")


def test_a_threshold_inside_the_search_s_last_step_is_undecided() -> None:
    """1.68/s held and 2/s broke around the 1.82/s threshold: neither level says on which side
    the goodput lies, so it is undecided; not a regression but said beside the verdict, and a
    regression by policy with on-undecided-regression: fail. A search a cap stopped under the
    threshold is undecided the same way."""
    limit = RegressionLimit(0.10, None)
    head, bases = _goodput(1.68, 2.0), [_goodput(2.0, 2.2)]
    delta = search_delta("goodput", head, bases, limit)
    assert delta is not None
    assert (delta.outcome, delta.decided, delta.regressed) == ("undecided", False, False)
    assert delta.left_undecided
    assert delta.note.endswith("this run's goodput is 1.68/s (held; 2/s broke)")
    failing = search_delta("goodput", head, bases, limit, on_undecided="fail")
    assert failing is not None
    assert (failing.outcome, failing.regressed, failing.by_policy) == ("undecided", True, True)
    assert failing.note.endswith("(on-undecided-regression: fail)")
    capped = _goodput(1.41, None, complete=False, stopped="max-calls left 12 calls")
    delta = search_delta("goodput", capped, bases, limit)
    assert delta is not None
    assert delta.outcome == "undecided"
    assert "this run's search did not end (max-calls left 12 calls): at least 1.41/s" in delta.note


def test_against_a_history_the_base_is_the_median_of_the_rates_held() -> None:
    """Three earlier searches that held 1.9, 2.1 and 2/s: the base is 2/s, and the row says it
    is the history's median."""
    bases = [_goodput(rate, 2.3) for rate in (1.9, 2.1, 2.0)]
    delta = search_delta(
        "goodput", _goodput(1.41, 1.6), bases, RegressionLimit(0.10, None), history=True
    )
    assert delta is not None
    assert (delta.base, delta.regressed) == (2.0, True)
    assert "the median of the rates the history's runs held" in delta.note


def test_a_goodput_not_searched_on_both_sides_or_at_another_budget_is_not_compared() -> None:
    """No search on either side: no row. One side without one (or a run at --rate alone), or a
    base held to another budget: a row that says why it was not compared, never a regression."""
    limit = RegressionLimit(0.10, None)
    assert search_delta("goodput", None, [], limit) is None
    at_a_rate = _goodput(1.0, None, search=False)
    assert search_delta("goodput", at_a_rate, [], limit) is None
    cases = [
        (None, [_goodput(2.0, 2.2)], "not compared: this run did not search the goodput"),
        (_goodput(2.0, 2.2), [], "not compared: the base did not search the goodput"),
        (
            _goodput(1.41, 1.6),
            [_goodput(2.0, 2.2, limit=2.0)],
            "not compared: the base held its levels to another budget than this run's 1.00 s",
        ),
    ]
    for head, bases, said in cases:
        delta = search_delta("goodput", head, bases, limit)
        assert delta is not None
        assert delta.note.startswith(said), delta.note
        assert (delta.regressed, delta.outcome) == (False, None)


def test_the_rate_row_is_the_level_at_the_rate_asked() -> None:
    """--rate's row: that level's p95 from due against the budget, PASS when it held."""
    goodput = _goodput(2.6, 2.83)
    rows = goodput_checks(goodput, asked=1.0, min_rate=None, searched=False)
    assert [(r.number, r.passed, r.limit) for r in rows] == [("rate_p95", True, 1.0)]
    assert rows[0].note.startswith("at 1/s, from due")


def test_the_two_capacities_side_by_side() -> None:
    """Little's law: the calls in flight at the rate held (rate x mean latency from due)
    beside the calls at once that held, and which figure is for what."""
    goodput = _goodput(2.6, 2.83)
    held = next(level for level in goodput.levels if level.rate == 2.6)
    capacity = Capacity(
        found=4,
        complete=True,
        reached_max=False,
        stopped_by_cap=False,
        breaking=5,
        breaking_p95=1.2,
        limit=1.0,
        start=4,
        maximum=64,
        calls=0,
        seconds=0.0,
        levels=(),
    )
    said = littles_law(goodput, capacity)
    assert f"had {2.6 * (held.mean_latency or 0):.1f} calls in flight on average" in said
    assert "while 4 calls started together held the budget" in said
    assert "Use the capacity for users who press send together" in said


def test_the_goodput_output_is_the_rate_held() -> None:
    """Output `goodput`: the rate found, in requests a second; empty without the search."""
    result = make_result().model_copy(update={"goodput": _goodput(2.6, 2.83)})
    values = output_values([result], True, URL_PATH, URL_PATH.parent, None)
    assert values["goodput"] == "2.6"
    assert output_values([make_result()], True, URL_PATH, URL_PATH.parent, None)["goodput"] == ""


def test_a_nightly_goodput_under_its_history_s_fails_the_run() -> None:
    """A run whose search broke at 1.6/s against a history that held 1.9, 2.1 and 2/s: the
    comparison's goodput row is REGRESSED and the verdict names it; the history's median
    held again passes with the row NOT REGRESSED; an undecided one is said beside the verdict
    and fails it with on-undecided-regression: fail."""
    result = goodput_against_history([1.9, 2.1, 2.0], head=_goodput(1.41, 1.6))
    assert result.baseline is not None
    (row,) = [d for d in result.baseline.deltas if d.number == "goodput"]
    assert (row.base, row.head, row.outcome) == (2.0, 1.41, "regressed")
    assert not result.verdict.passed
    assert result.verdict.reasons == (
        "regression: goodput 2/s → 1.41/s (-30 %): regresses below 1.82/s (the base's 2/s, the "
        "median of the rates the history's runs held, less the 10 % limit); 1.6/s broke",
    )
    summary = render_summary([result])
    assert "regresses below 1.82/s" in summary
    assert (  # held to the runs' median by its levels' tests, not to the runs' spread
        "- Against the history of 3 runs (prediction interval, drift between runs included): "
        "the goodput fell under the runs' median less the 10 % limit, by its levels' tests."
    ) in summary

    result = goodput_against_history([1.9, 2.1, 2.0], head=_goodput(2.0, 2.2))
    assert result.verdict.passed, result.verdict.reasons
    assert result.baseline is not None
    (row,) = [d for d in result.baseline.deltas if d.number == "goodput"]
    assert row.outcome == "not regressed"

    result = goodput_against_history([1.9, 2.1, 2.0])  # 1.68/s held, at least: none broke
    assert result.verdict.passed, result.verdict.reasons
    assert result.verdict.undecided == (
        "goodput regression undecided: 2/s → 1.68/s (-16 %): regresses below 1.82/s (the base's "
        "2/s, the median of the rates the history's runs held, less the 10 % limit); this run's "
        "goodput is at least 1.68/s (held; none broke); not called a regression",
    )
    failing = goodput_against_history([1.9, 2.1, 2.0], on_undecided_regression="fail")
    assert not failing.verdict.passed
    assert any("counted as one by policy" in r for r in failing.verdict.reasons)
