"""A regression's outcome, the interval printed beside it and the sampling line tell one story:
the interval is the outcome's own test inverted, on the same calls, at the same one-sided
alphas, so "regressed" sits beside an interval wholly beyond the limit, "not regressed" beside
one wholly within it, and "undecided" beside one that holds the limit; and the sampling line
names as undecided only what the table shows undecided. Seeded A/B runs of the shipped gate
(bench/gatesim.py), each of which told two stories before (issue 28)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import gatesim

from latency_gate.models import NumberDelta

LIMIT = 1.10  # the default 10 %
CELLS = {
    "unchanged, sigma 0.6": (0.6, 1.0),
    "+25 %, sigma 0.2": (0.2, 1.25),
    "unchanged, sigma 0.3": (0.3, 1.0),
}


def _run(cell: str, number: int, run: int) -> gatesim.Outcome:
    sigma, slower = CELLS[cell]
    base = gatesim.lognormal(sigma, multiple=0.2)
    return gatesim.run_ab(replace(base, scale=slower), base, gatesim.rng_for("story", number, run))


def _interval_says(delta: NumberDelta) -> str:
    assert delta.interval is not None
    low, high = delta.interval
    assert low is not None
    assert high is not None
    return "regressed" if low > LIMIT else "not regressed" if high <= LIMIT else "undecided"


@pytest.mark.parametrize(
    ("cell", "number", "run", "before"),
    [
        # "not regressed" at look 4 kept beside every call's x0.78 to x1.25
        ("unchanged, sigma 0.6", 0, 8, "concurrent_p95 not regressed"),
        # a run stopped early (a regression): "undecided" at that look's 0.1 % beside x1.12-x1.30
        ("+25 %, sigma 0.2", 2, 1, "warm_p95 undecided"),
        # undecided at the last look's 2 % beside a 95 % interval x0.88 to x1.099
        ("unchanged, sigma 0.3", 3, 2, "concurrent_p95 undecided"),
    ],
)
def test_an_outcome_and_its_interval_tell_one_story(
    cell: str, number: int, run: int, before: str
) -> None:
    """Every tested percentile's outcome is what its interval says against the limit, and the
    interval's level is 1 - the two alphas its test was decided at."""
    out = _run(cell, number, run)
    assert out.baseline is not None
    tested = [d for d in out.baseline.deltas if d.number in {"warm_p95", "concurrent_p95"}]
    assert tested
    assert [d.outcome for d in tested] == [_interval_says(d) for d in tested], before
    for delta in tested:
        assert delta.interval_levels is not None
        assert all(0.85 <= level < 0.9999 for level in delta.interval_levels)


def test_the_sampling_line_names_only_what_stayed_undecided() -> None:
    """The last look's test decided warm p95 "not regressed" after the cap of 9 looks was
    reached: the sampling line no longer lists it as undecided at the cap, but as decided by
    that test, and lists every regression the table shows undecided."""
    out = _run("unchanged, sigma 0.6", 0, 0)
    assert out.baseline is not None
    outcomes = {d.number: d.outcome for d in out.baseline.deltas}
    assert outcomes["warm_p95"] == "not regressed"
    still, _, decided = out.stopped.partition("; the last look's test decided ")
    assert "warm_p95 regression" not in still
    assert "warm_p95 regression" in decided
    undecided = [n for n, o in outcomes.items() if o == "undecided"]
    for number in undecided:
        assert f"{number} regression" in still


@pytest.mark.parametrize("run", [2, 6])
def test_a_regression_the_last_looks_test_found_is_in_the_table(run: int) -> None:
    """10 % of calls 3x slower (sigma 0.5, 0.5 % failures on both arms): the ninth look's test,
    at what the looks before left of alpha, finds the regression; the table says regressed
    too (judging every call at a look's own 0.1 % there left it undecided)."""
    base = gatesim.lognormal(0.5, multiple=0.2, fail_rate=0.005)
    head = replace(base, slow_share=0.1, slow_factor=3.0)
    out = gatesim.run_ab(head, base, gatesim.rng_for("lastfail", 0, run))
    assert out.looks == 9
    named, _, _ = out.stopped.partition(" failed, so the run fails")
    failed = [n.removesuffix(" regression") for n in named.split(", ")]
    assert failed
    assert out.baseline is not None
    assert sorted(d.number for d in out.baseline.regressions) == sorted(failed)
