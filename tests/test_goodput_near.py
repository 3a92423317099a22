"""Rate levels near the budget (issue 29): a level whose calls rule out neither a p95 over the
budget nor one within it ends near, not held or broken by `on-undecided`; the search stays under
it and says the goodput as an interval from the rate held to the lowest that broke ("at least"
the rate held when none broke); `--min-rate` is undecided unless a rate at or above it held or
one at or under it broke, and `--rate` at a near level is undecided; the interval survives the
result file and a replay; a file written before the fields existed still loads."""

from __future__ import annotations

import json

import pytest
from goodput_driver import Clocked, drive_one_slot
from result_factory import make_result

from latency_gate.assess.load.levels import LevelLimits
from latency_gate.assess.load.open_level import OpenLevel, near_rates, rate_bracket
from latency_gate.assess.load.per_second import RateSearch, start_rates
from latency_gate.assess.load.replay import goodput_again
from latency_gate.assess.load.verdict import goodput_checks
from latency_gate.config import build_target
from latency_gate.config.plan.needs import effective_max_calls
from latency_gate.config.plan.search import LevelOutcome
from latency_gate.models import Goodput, RateLevel, RunResult
from latency_gate.report.load import goodput_view

LIMITS = LevelLimits(concurrent_p95=1.0)


def _calls(over_every: int | None, n: int = 200) -> list[Clocked]:
    """`n` calls due a second apart, all ended by t = n + 100: 0.1 s each, but 1.5 s (over the
    1 s budget) every `over_every`-th one."""
    clock = [n + 100.0]
    return [
        Clocked(float(i), 1.5 if over_every and i % over_every == 0 else 0.1, i, clock, 0.0)
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("over_every", "held", "near", "by"),
    [(None, True, False, "test"), (34, False, True, "level cap"), (5, False, False, "test")],
)
def test_a_level_is_held_near_or_broken_by_the_two_tests(
    over_every: int | None, held: bool, near: bool, by: str
) -> None:
    """200 calls: none over the budget holds; 3 % over (between the hold test's 1 % and 5 %)
    ends near the budget at the level's end, neither held nor broken; 20 % over breaks."""
    calls = _calls(over_every)
    level = OpenLevel(1.0, LIMITS, warmup=0.0, hold=10.0, lag_limit=1.0)
    level.look(calls, 300.0)
    record = level.close(calls, 300.0)
    assert (record.held, record.near, record.decided_by) == (held, near, by)
    if near:
        assert record.wrong_at_most is None


def test_a_near_level_is_not_decided_by_on_undecided() -> None:
    """A level near the budget stays near whatever the policy: on-undecided is for the verdict,
    not for the level (the old test held 3 % over with `estimate` and broke it with `fail`)."""
    for policy in ("estimate", "fail", "pass"):
        limits = LevelLimits(concurrent_p95=1.0, on_undecided=policy)
        level = OpenLevel(1.0, limits, warmup=0.0, hold=10.0, lag_limit=1.0)
        record = level.close(_calls(34), 300.0)
        assert (record.held, record.near) == (False, True), policy


def _outcome(rate: float) -> LevelOutcome:
    """Held up to 2.5/s, near up to 5/s, broke above."""
    return "held" if rate <= 2.5 else "near" if rate <= 5.0 else "broke"


def test_the_search_bisects_below_a_near_level_and_never_doubles_past_it() -> None:
    """From 1/s: 1 and 2 hold, 4 is near; the search bisects between 2 and 4 (not on to 8)
    until the lowest near rate is within 10 % of the highest that held."""
    search = RateSearch(1.0)
    tried = []
    while (rate := search.next_rate()) is not None:
        tried.append(rate)
        search.record(rate, _outcome(rate))
    assert tried == [1.0, 2.0, 4.0, 2.83, 2.38, 2.6]
    assert max(tried) == 4.0
    assert search.found == 2.38
    assert search.ceiling is not None
    assert search.ceiling / search.found <= 1.1


def test_a_near_start_halves_like_a_broken_one() -> None:
    """A start near the budget is an upper bracket: the search halves from it."""
    search = RateSearch(4.0)
    search.record(4.0, "near")
    assert search.next_rate() == 2.0


def _level(rate: float, outcome: LevelOutcome, p95: float = 0.8) -> RateLevel:
    return RateLevel(
        rate=rate,
        calls=150,
        judged=130,
        p95=p95,
        mean_latency=0.4,
        errors=0,
        held=outcome == "held",
        near=outcome == "near",
        decided_by="level cap" if outcome == "near" else "test",
        broke_on=("concurrent_p95",) if outcome == "broke" else (),
        seconds=80.0,
    )


def test_the_interval_s_upper_end_is_the_lowest_rate_that_broke() -> None:
    """Held 2.6, near 2.8 and 3.0, broke 3.3 and a near 4 above it: the goodput is between 2.6
    and 3.3, the rate that broke (a near level showed nothing, so 3.0 bounds nothing); no near
    level: no interval; near levels and none broken: no upper end ("at least" 2.6)."""
    levels = [
        _level(2.6, "held"),
        _level(3.3, "broke"),
        _level(3.0, "near"),
        _level(2.8, "near"),
        _level(4.0, "near"),
    ]
    assert rate_bracket(levels) == (2.6, 3.3, 3.3)
    assert near_rates(levels, 2.6, 3.3) == [2.8, 3.0]
    assert rate_bracket([_level(2.6, "held"), _level(2.8, "broke")]) == (2.6, 2.8, None)
    open_ = [_level(2.6, "held"), _level(3.0, "near"), _level(2.8, "near")]
    assert rate_bracket(open_) == (2.6, None, None)
    assert near_rates(open_, 2.6, None) == [2.8, 3.0]


def _interval(**update: object) -> Goodput:
    """A search that held 2.6/s, was near at 2.8/s and 3/s, and broke at 3.3/s."""
    run = start_rates(_target(), [], max_calls=effective_max_calls(_target()))
    levels = (
        _level(2.6, "held"),
        _level(3.3, "broke", p95=1.4),
        _level(3.0, "near"),
        _level(2.8, "near"),
    )
    fields = {"found": 2.6, "upper": 3.3, "breaking": 3.3, "levels": levels, "calls": 600}
    return run.goodput().model_copy(update={**fields, **update})


def _at_least(**update: object) -> Goodput:
    """A search that held 2.6/s and was near at 2.8/s and 3/s, none broken."""
    levels = (_level(2.6, "held"), _level(3.0, "near"), _level(2.8, "near"))
    fields = {"upper": None, "breaking": None, "levels": levels, **update}
    return _interval(**fields)


def _target(**raw: str):  # type: ignore[no-untyped-def]
    return build_target(
        {"url": "http://127.0.0.1:1/", "max-concurrent-p95": "1s", "goodput": "true", **raw}
    )


@pytest.mark.parametrize("min_rate", [2.8, 3.0, 3.2])
def test_min_rate_between_the_rate_held_and_the_rate_broken_is_undecided(min_rate: float) -> None:
    """A minimum above 2.6/s (held) and under 3.3/s (broke), near levels between: nothing at or
    above it held, nothing at or under it broke, so it is undecided, passed (estimate, pass) or
    failed (fail) by policy, said so (3.2/s, above the near levels, was a FAIL before: the
    highest near rate was taken for an upper bound)."""
    (row,) = goodput_checks(_interval(), asked=None, min_rate=min_rate, searched=True)
    assert (row.passed, row.decided, row.by_policy) == (True, False, True)
    assert row.note == "undecided: between 2.6/s (held) and 3.3/s (broke)"
    assert row.meaning.startswith(
        "PASS: undecided, the goodput is between 2.6/s (held) and 3.3/s (broke) and 2.8/s and "
        "3/s near the budget between (their calls could not tell)"
    )
    assert "2.8/s was near the budget" in row.meaning
    failing = _interval(on_undecided="fail")
    (row,) = goodput_checks(failing, asked=None, min_rate=min_rate, searched=True)
    assert (row.passed, row.decided, row.by_policy) == (False, False, True)


def test_min_rate_fails_only_when_a_rate_at_or_under_it_broke() -> None:
    """At or under the rate that held: PASS, saying the interval and what its ends rest on; at
    or over the rate that broke: FAIL, said by that rate."""
    (row,) = goodput_checks(_interval(), asked=None, min_rate=2.5, searched=True)
    assert (row.passed, row.decided) == (True, True)
    assert row.meaning.startswith(
        "PASS: between 2.6/s (held) and 3.3/s (broke); 2.6/s held, at least the 2.5/s asked"
    )
    for min_rate in (3.3, 4.0):
        (row,) = goodput_checks(_interval(), asked=None, min_rate=min_rate, searched=True)
        assert (row.passed, row.decided) == (False, True)
        assert row.meaning.startswith(
            "FAIL: between 2.6/s (held) and 3.3/s (broke); 3.3/s broke, at or under the "
        )


def test_min_rate_above_an_open_goodput_is_undecided() -> None:
    """Near levels and none broken ("at least 2.6/s"): a 3.5/s minimum is undecided (nothing
    broke), a 2.5/s one passes."""
    (row,) = goodput_checks(_at_least(), asked=None, min_rate=3.5, searched=True)
    assert (row.passed, row.decided, row.by_policy) == (True, False, True)
    assert row.meaning.startswith(
        "PASS: undecided, the goodput is at least 2.6/s (held; none broke)"
    )
    (row,) = goodput_checks(_at_least(on_undecided="fail"), asked=None, min_rate=3.5, searched=True)
    assert (row.passed, row.decided) == (False, False)
    (row,) = goodput_checks(_at_least(), asked=None, min_rate=2.5, searched=True)
    assert (row.passed, row.decided) == (True, True)


def test_the_headline_and_the_rows_say_the_interval() -> None:
    """The sentence says the interval from the rate held to the rate broken and what each end
    rests on (each test's bound; the near levels could not tell); the table marks the near
    levels; what the figure rests on lists the held, the near and the broken level."""
    result = make_result().model_copy(update={"goodput": _interval()})
    view = goodput_view(result)
    assert view is not None
    assert view.headline == (
        "holds p95 ≤ 1.00 s up to a rate between 2.6/s and 3.3/s (poisson arrivals): 2.6/s held "
        "(rules out a p95 over 1.00 s; wrong at most 2.5 %); 2.8/s and 3/s were near the budget "
        "(their calls could not tell); 3.3/s broke (p95 1.40 s; rules out a p95 within 1.00 s; "
        "wrong at most 1.0 %)"
    )
    assert [row.mark for row in view.rows] == [
        "✅ held",
        "⚠️ near the budget",
        "⚠️ near the budget",
        "❌ broke",
    ]
    assert [text.split(" ")[0] for text in view.rests_on] == ["2.6/s", "2.8/s", "3/s", "3.3/s"]


def test_near_levels_and_nothing_broken_say_at_least() -> None:
    """Near levels above the rate held and none broken: no upper end; the sentence says "at
    least" the rate held, the near levels, and that no rate tried broke it."""
    view = goodput_view(make_result().model_copy(update={"goodput": _at_least()}))
    assert view is not None
    assert view.headline == (
        "holds p95 ≤ 1.00 s up to at least 2.6/s (poisson arrivals): 2.6/s held (rules out a "
        "p95 over 1.00 s; wrong at most 2.5 %); 2.8/s and 3/s were near the budget (their calls "
        "could not tell); no rate tried broke it"
    )
    assert [text.split(" ")[0] for text in view.rests_on] == ["2.6/s", "2.8/s", "3/s"]


def test_the_rate_asked_near_the_budget_is_undecided() -> None:
    """`--rate 3/s` whose level ended near the budget: undecided; estimate goes by its p95
    against the budget, fail fails it."""
    level = _level(3.0, "near", p95=0.9)
    goodput = _interval(search=False, asked=3.0, levels=(level,), found=0.0, upper=3.0)
    (row,) = goodput_checks(goodput, asked=3.0, min_rate=None, searched=False)
    assert (row.passed, row.decided, row.by_policy) == (True, False, True)
    assert "undecided" in row.note
    assert "by its p95, within the budget (on-undecided: estimate)" in row.meaning
    over = goodput.model_copy(update={"levels": (_level(3.0, "near", p95=1.1),)})
    (row,) = goodput_checks(over, asked=3.0, min_rate=None, searched=False)
    assert row.passed is False
    failing = goodput.model_copy(update={"on_undecided": "fail"})
    (row,) = goodput_checks(failing, asked=3.0, min_rate=None, searched=False)
    assert row.passed is False


def test_no_rate_held_under_near_levels_says_only_the_broken_rate() -> None:
    """No level held, 2.8/s and 3/s near, 3.3/s broke: the sentence bounds the goodput by the
    broken rate alone; a 3.3/s minimum fails, a 2/s one is undecided (nothing at or under it
    broke)."""
    levels = (_level(2.8, "near"), _level(3.0, "near"), _level(3.3, "broke", p95=1.4))
    goodput = _interval(found=0.0, levels=levels)
    view = goodput_view(make_result().model_copy(update={"goodput": goodput}))
    assert view is not None
    assert view.headline.startswith(
        "holds p95 ≤ 1.00 s only under 3.3/s, if at all (poisson arrivals): no rate held; 2.8/s "
        "and 3/s were near the budget"
    )
    (row,) = goodput_checks(goodput, asked=None, min_rate=3.3, searched=True)
    assert (row.passed, row.decided) == (False, True)
    (row,) = goodput_checks(goodput, asked=None, min_rate=2.0, searched=True)
    assert (row.passed, row.decided) == (True, False)


def _searched() -> Goodput:
    """One slot, 0.25 s a call, a 1 s budget, from 1/s: 2/s and 1.83/s end near the budget."""
    target = _target(rate="1/s")
    run = start_rates(target, [], max_calls=effective_max_calls(target))
    drive_one_slot(run)
    return run.goodput()


def test_the_interval_survives_the_result_file_and_a_replay() -> None:
    """Written and read back, then judged again from its levels' calls: the same near levels
    and the same open upper end (near levels, none broken: "at least" the rate held)."""
    goodput = _searched()
    assert (goodput.upper, goodput.breaking) == (None, None)
    assert any(lv.near for lv in goodput.levels)
    result = make_result().model_copy(update={"goodput": goodput})
    back = RunResult.model_validate_json(result.model_dump_json())
    assert back.goodput is not None
    assert (back.goodput.found, back.goodput.upper) == (goodput.found, goodput.upper)
    again = goodput_again(back.goodput, LIMITS)
    assert (again.found, again.upper, again.breaking) == (goodput.found, goodput.upper, None)
    assert [lv.near for lv in again.levels] == [lv.near for lv in goodput.levels]


def test_a_result_file_from_before_near_levels_still_loads() -> None:
    """A file written before levels could be near (no `near`, `upper` nor `level_judged`)
    loads: no level near, no interval, levels never lengthened."""
    result = make_result().model_copy(update={"goodput": _searched()})
    data = json.loads(result.model_dump_json())
    goodput = data["goodput"]
    del goodput["upper"], goodput["level_judged"]
    for level in goodput["levels"]:
        del level["near"]
    back = RunResult.model_validate(data)
    assert back.goodput is not None
    assert back.goodput.upper is None
    assert back.goodput.level_judged == 0
    assert not any(lv.near for lv in back.goodput.levels)
