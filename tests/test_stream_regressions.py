"""A streamed answer's first token and time per token are regression-tested in every comparison
(an A/B base, an earlier run, a history) whatever the budget (issue 41, item 4); a run that does
not stream has neither row; a base that did not stream is no reference for them."""

from __future__ import annotations

from collections.abc import Sequence

from result_factory import STARTED_AT, make_result, make_target, ok_sample, samples_for

from latency_gate.assess.compare.baseline import BaselinePlan, compare
from latency_gate.assess.compare.history import HistoryPlan, TargetHistory
from latency_gate.assess.numbers.stats import numbers
from latency_gate.assess.result import assess_run
from latency_gate.config import Budget
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.measurement import Measurement
from latency_gate.models import (
    CallPhase,
    CallTimings,
    NumberDelta,
    RunResult,
    Sample,
    StampSource,
)

TOKENS = 24


def _call(phase: CallPhase, i: int, first: float, per: float) -> Sample:
    """A streamed call of TOKENS tokens: its first token at `first`, then `per` a token."""
    latency = first + (TOKENS - 1) * per
    timings = CallTimings(
        request_sent=0.0002,
        headers=first * 0.9,
        first_byte=first * 0.95,
        first_event=first,
        first_token=first,
        last_token=latency - 0.0005,
        last_byte=latency,
    )
    call = ok_sample(phase, i, latency, stream=True)
    assert call.tokens == TOKENS
    return call.model_copy(update={"timings": timings, "token_events": TOKENS})


def _streamed(first: float = 0.200, per: float = 0.010, warm: int = 60) -> tuple[Sample, ...]:
    """A streamed run: a cold call, `warm` warm calls and 60 concurrent ones, the first token
    and the time per token spread a little call by call (a fixed pattern, no randomness)."""
    spread = [1 + 0.02 * ((i * 7) % 11 - 5) for i in range(max(warm, 60))]
    return (
        _call(CallPhase.COLD, 0, first * 2, per),
        *(_call(CallPhase.WARM, i, first * spread[i], per * spread[-i - 1]) for i in range(warm)),
        *(_call(CallPhase.CONCURRENT, i, first * spread[i], per * spread[i]) for i in range(60)),
    )


def _judged(
    head: Sequence[Sample], base: Sequence[Sample], budget: Budget | None = None
) -> RunResult:
    """`head`'s calls judged as a run is, against an earlier run of `base`'s calls."""
    base_run = make_result(samples=base, stream=True)
    plan = BaselinePlan("base.json", DEFAULT_LIMIT, {"local": base_run})
    return assess_run(
        make_target(stream=True, budget=budget),
        Measurement(list(head), started_at=STARTED_AT),
        finished_at=STARTED_AT + 60,
        stamp_source=StampSource.KERNEL,
        baseline=plan,
    )


def _row(result: RunResult, number: str) -> NumberDelta:
    assert result.baseline is not None
    return next(d for d in result.baseline.deltas if d.number == number)


def test_budget_compared_holds_the_stream_numbers_whatever_the_budget() -> None:
    """The default budget, a warm-p95 budget alone, and every budget off all test them."""
    for budget in (
        Budget(),
        Budget(max_warm_p95=1.0),
        Budget(max_warm_p95=None, max_concurrent_p95=None, max_error_rate=None),
    ):
        assert {"ttft_warm_p95", "tpot_p95"} <= budget.compared()


def test_an_unchanged_stream_is_not_regressed_on_either_number() -> None:
    """The same calls on both sides: both rows tested, "not regressed", and the run passes."""
    result = _judged(_streamed(), _streamed())
    assert result.verdict.passed
    for number in ("ttft_warm_p95", "tpot_p95"):
        row = _row(result, number)
        assert (row.outcome, row.regressed) == ("not regressed", False)


def test_a_slower_first_token_fails_the_run_without_a_budget() -> None:
    """The first token 40 % later on every call, no first-token budget: regressed, the run
    fails, and the reason names the first token."""
    result = _judged(_streamed(first=0.280), _streamed())
    row = _row(result, "ttft_warm_p95")
    assert (row.outcome, row.regressed) == ("regressed", True)
    assert not result.verdict.passed
    assert any(r.startswith("regression: warm first-token p95 ") for r in result.verdict.reasons)


def test_a_slower_time_per_token_fails_the_run_without_a_budget() -> None:
    """Each token 40 % slower, no per-token budget: regressed, and the reason names it."""
    result = _judged(_streamed(per=0.014), _streamed())
    row = _row(result, "tpot_p95")
    assert (row.outcome, row.regressed) == ("regressed", True)
    assert any(r.startswith("regression: time per token p95 ") for r in result.verdict.reasons)


def test_a_run_that_does_not_stream_has_no_stream_rows() -> None:
    """No first token on either side: no row for either number (as before)."""
    run = make_result()
    check = compare(
        run.samples, run.numbers, run, DEFAULT_LIMIT, "base.json", gated=Budget().compared()
    )
    assert not {"ttft_warm_p95", "tpot_p95"} & {d.number for d in check.deltas}


def test_a_base_that_did_not_stream_is_no_reference_for_them() -> None:
    """An A/B whose base was asked a non-streamed request: the head's rows are shown, said not
    tested, and do not fail the run whatever the undecided policy."""
    head = _streamed()
    base = samples_for(cold=0.5, warm=[0.43] * 60, concurrent=[0.43] * 60)
    check = compare(
        head,
        numbers(head),
        None,
        DEFAULT_LIMIT,
        "http://base.example",
        base_samples=base,
        gated=Budget().compared(),
        on_undecided="fail",
    )
    for number in ("ttft_warm_p95", "tpot_p95"):
        row = next(d for d in check.deltas if d.number == number)
        assert (row.regressed, row.note) == (
            False,
            "not tested: the base's answers were not streamed",
        )


def test_an_undecided_one_follows_the_undecided_policy() -> None:
    """Too few warm calls to tell time per token +12 % from the 10 % limit: undecided, and
    on-undecided-regression fail counts it as a regression, as for warm p95."""
    head, base = _streamed(per=0.0112, warm=20), _streamed(warm=20)
    said = {}
    for policy in ("pass", "fail"):
        check = compare(
            head,
            numbers(head),
            make_result(samples=base, stream=True),
            DEFAULT_LIMIT,
            "base.json",
            gated=Budget().compared(),
            on_undecided=policy,
        )
        row = next(d for d in check.deltas if d.number == "tpot_p95")
        said[policy] = (row.outcome, row.regressed, row.by_policy)
    assert said == {"pass": ("undecided", False, False), "fail": ("undecided", True, True)}


def _history_run(first: float, day: int) -> RunResult:
    run = make_result(samples=_streamed(first=first), stream=True)
    return run.model_copy(update={"started_at": run.started_at - day * 86400.0})


def test_a_history_tests_the_first_token_too() -> None:
    """Against ten streamed runs of a steady first token: one 60 % later regresses."""
    runs = tuple(
        _history_run(0.2 * f, d + 1)
        for d, f in enumerate((1.0, 0.97, 1.03, 1.01, 0.99, 1.02, 0.98, 1.0, 1.04, 0.96))
    )
    plan = HistoryPlan(".latency-history", DEFAULT_LIMIT, targets={"local": TargetHistory(runs)})
    result = assess_run(
        make_target(stream=True),
        Measurement(list(_streamed(first=0.32)), started_at=STARTED_AT),
        finished_at=STARTED_AT + 60,
        stamp_source=StampSource.KERNEL,
        history=plan,
    )
    assert _row(result, "ttft_warm_p95").regressed
    assert _row(result, "tpot_p95").outcome == "not regressed"
    assert not result.verdict.passed


def _slower_bursts_first_token() -> tuple[Sample, ...]:
    """The same warm calls as `_streamed()`, and burst calls whose first token waited 60 % longer
    (a slot's queue, not the model's prefill)."""
    calls = list(_streamed())
    for i, call in enumerate(calls):
        if call.phase is CallPhase.CONCURRENT:
            calls[i] = _call(CallPhase.CONCURRENT, call.index, 0.320 * (1 + 0.01 * (i % 5)), 0.010)
    return tuple(calls)


def test_the_warm_first_token_is_compared_and_the_pooled_one_only_with_a_budget() -> None:
    """The first token compared by default is the warm calls' (a burst call's holds its wait for
    a slot): bursts whose first token waited longer leave the warm row "not regressed", and the
    first-token p95 of both kinds has a row only where it has a budget, where it regresses."""
    head, base = _slower_bursts_first_token(), _streamed()
    unbudgeted = _judged(head, base)
    assert _row(unbudgeted, "ttft_warm_p95").outcome == "not regressed"
    assert unbudgeted.baseline is not None
    assert "ttft_p95" not in {d.number for d in unbudgeted.baseline.deltas}
    budgeted = _judged(head, base, Budget(max_ttft_p95=5.0))
    assert _row(budgeted, "ttft_p95").regressed
    assert _row(budgeted, "ttft_warm_p95").outcome == "not regressed"
