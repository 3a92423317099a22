"""Seeded simulations through the shipped gate (bench/llmsim.py's run_llm_ab): the first token
and the time per token as regression-tested numbers (bench/stream_regressions.py), and a row
regressed by its answers' length said as the length (issue 41, item 4), with fewer runs than
docs/statistics.md's figures.
"""

from __future__ import annotations

import random
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import llmsim
import stream_regressions

from latency_gate.assess.verdict import regression_reason

RECORDED = dict(llmsim.SHAPES)["recorded: cut at 96 tokens"]
MEASURED = "recorded, first token's spread as measured (0.114)"


@pytest.mark.slow
def test_answers_longer_under_max_tokens_are_said_as_the_length_not_a_p95_that_fell() -> None:
    """The issue's repro, seeded: answers 25 % longer cut at 96 tokens, at temperature 0 (runs
    1, 2 and 8 of table k's cell regress warm p95 while it fell). The reason leads with the
    answers' length and its interval, and says the p95 as it is, never as the regression."""
    head = replace(RECORDED, longer=1.25)
    budget = llmsim._budget(RECORDED)
    fell = []
    for i in (1, 2, 8):
        seed = random.Random(f"llm-ab/recorded: cut at 96 tokens/1/answers 25 % longer/{i}")
        out = llmsim.run_llm_ab(head, RECORDED, seed, rho=1.0, budget=budget)
        assert out.baseline is not None
        fell += [
            d
            for d in out.baseline.deltas
            if d.number == "warm_p95"
            and d.regressed
            and d.head is not None
            and d.base is not None
            and d.head <= d.base
        ]
    assert len(fell) == 3
    for delta in fell:
        reason = regression_reason(delta)
        assert delta.by_length
        assert re.match(
            r"regression by its answers' length: warm p95: answers \d+ % longer \(x1\.", reason
        )
        assert "its latency at the same work not called a regression" in reason
        assert ", head / base" not in reason  # the latency test's interval is not the cause


SHAPE = "recorded: cut at 96 tokens"


def _shares(change: str, runs: int, rho: float = 1.0, shape: str = SHAPE) -> dict[str, float]:
    """bench/stream_regressions.py's first `runs` seeded runs of a cell, tallied."""
    return stream_regressions.tally(
        [stream_regressions.one_run((shape, rho, change, i)) for i in range(runs)]
    )


@pytest.mark.slow
def test_an_unchanged_stream_is_rarely_flagged_on_either_number() -> None:
    """Unchanged, the recorded shape at temperature 0: the first token and the time per token
    each flagged in at most 2 % of runs (here none of 20; 0 of 100 in docs/statistics.md)."""
    said = _shares("unchanged", 20)
    assert (said["ttft"], said["tpot"], said["failed"]) == (0.0, 0.0, 0.0)


@pytest.mark.slow
def test_time_per_token_twenty_percent_slower_is_caught() -> None:
    """Each token 20 % slower: the time per token p95 regressed in at least 90 % of runs (here
    at least 18 of 20; 100 of 100 in docs/statistics.md)."""
    assert _shares("time per token +20 %", 20)["tpot"] >= 0.9


@pytest.mark.slow
def test_first_token_thirty_percent_later_is_caught() -> None:
    """The first token 30 % later: the warm calls' first-token p95 regressed in at least 90 % of
    runs with the first token's spread measured on the real llama.cpp server (99 of 100 in
    docs/statistics.md), and in most with the wider spread llmsim assumed (0.15: 88 of 100,
    short of the 90 % target). The first token of both kinds together was caught in none: a
    burst call's holds its wait for a slot."""
    assert _shares("first token +30 %", 20, shape=MEASURED)["ttft"] >= 0.9
    assert _shares("first token +30 %", 20)["ttft"] >= 0.75
