"""Regressions at the same work (issue 26): the same prompts on both arms of an A/B run, the
numbers that do not depend on the answer's length, the test at the same work, and what changed.

The arms are loopback script servers (their answers' length and speed scripted) or synthetic
calls fed to the assess layer.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence

import pytest
from one_look import one_look
from script_server import ScriptServer, Step, steady

from latency_gate.assess.compare.baseline import compare
from latency_gate.assess.compare.regression import Alphas, Regression
from latency_gate.assess.compare.same_work import SameWork, ratio_test, what_changed
from latency_gate.assess.numbers import stats
from latency_gate.assess.numbers.work import adjusted, length_unit, per_token, work_of
from latency_gate.config import build_target
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.errors import ConfigError
from latency_gate.models import (
    BaselineCheck,
    CallPhase,
    CallTimings,
    NumberDelta,
    RunResult,
    Sample,
)
from latency_gate.run import probe

WARM = 6
CONCURRENCY = 3


def _prompt(body: bytes) -> str:
    messages = json.loads(body)["messages"]
    return str(messages[-1]["content"])


async def test_both_arms_get_the_same_prompt_call_by_call() -> None:
    """In an A/B run the head's i-th call of a kind and the base's i-th get the same prompt, and
    no two calls of an arm share one."""
    head, base = ScriptServer(lambda n: steady(2, 0.001)), ScriptServer(lambda n: steady(2, 0.001))
    await head.start()
    await base.start()
    try:
        target = build_target(
            {
                "url": head.url,
                "baseline-url": base.url,
                "prompt": "Hi",
                "stream": "true",
                "warm-calls": str(WARM),
                "concurrency": str(CONCURRENCY),
                **one_look(1 + WARM + CONCURRENCY),
            }
        )
        await probe(target, measure_floor=False)
    finally:
        await head.stop()
        await base.stop()
    head_prompts = sorted(_prompt(r.body) for r in head.requests)
    base_prompts = sorted(_prompt(r.body) for r in base.requests)
    assert len(head_prompts) == 1 + WARM + CONCURRENCY
    assert head_prompts == base_prompts
    assert len(set(head_prompts)) == len(head_prompts)
    assert all(p.endswith("] Hi") for p in head_prompts)


async def test_two_runs_do_not_share_prompts() -> None:
    """The marks are drawn per run: a second run's prompts are all new."""
    server = ScriptServer(lambda n: steady(2, 0.001))
    await server.start()
    try:
        target = build_target(
            {"url": server.url, "prompt": "Hi", "warm-calls": "3", "concurrency": "2"} | one_look(6)
        )
        await probe(target, measure_floor=False)
        first = {_prompt(r.body) for r in server.requests}
        await probe(target, measure_floor=False)
    finally:
        await server.stop()
    second = {_prompt(r.body) for r in server.requests} - first
    assert len(first) == len(second) == 1 + 3 + 2


# --- synthetic calls ------------------------------------------------------------------------


def _call(
    phase: CallPhase, index: int, tokens: int, first: float, per: float, *, scale: float = 1.0
) -> Sample:
    latency = (first + (tokens - 1) * per) * scale
    return Sample(
        phase=phase,
        index=index,
        started_at=0.0,
        ok=True,
        latency=latency,
        status=200,
        tokens=tokens,
        tokens_source="usage",
        timings=CallTimings(first_token=first * scale, first_event=first * scale),
    )


def _arm(
    rng: random.Random,
    lengths: Sequence[int],
    *,
    first: float = 0.05,
    per: float = 0.008,
    scale: float = 1.0,
) -> list[Sample]:
    """Warm calls of these lengths (then bursts of CONCURRENCY), each with a little noise."""
    out = []
    for i, n in enumerate(lengths):
        t = first * math.exp(rng.gauss(0, 0.1))
        p = per * math.exp(rng.gauss(0, 0.05))
        out.append(_call(CallPhase.WARM, i, n, t, p, scale=scale))
    for i, n in enumerate(lengths):
        t = first * math.exp(rng.gauss(0, 0.1))
        p = per * math.exp(rng.gauss(0, 0.05))
        out.append(_call(CallPhase.CONCURRENT, i, n, t, p, scale=scale))
    return out


def _lengths(rng: random.Random, count: int, *, scale: float = 1.0) -> list[int]:
    return [max(2, round(40 * scale * math.exp(rng.gauss(0, 0.8)))) for _ in range(count)]


def test_per_token_time_and_tokens_are_numbers() -> None:
    """Time per output token after the first is (latency - first delta) / (tokens - 1), and
    the run's numbers carry its p50 and p95 and the answers' length in tokens."""
    call = _call(CallPhase.WARM, 0, 11, 0.05, 0.01)
    assert per_token(call) == 0.01 or math.isclose(per_token(call) or 0.0, 0.01)
    rng = random.Random(1)
    numbers = stats.numbers(_arm(rng, [10, 20, 30, 40]))
    assert numbers.tokens_p50 == 25.0
    assert numbers.tpot_p50 is not None
    assert 0.007 < numbers.tpot_p50 < 0.009


def test_the_same_work_removes_the_length_from_the_latency() -> None:
    """Over what its length predicts, an arm's latencies at another length distribution are
    alike: the ratios of an arm of long answers and one of short ones have the same spread and
    level."""
    rng = random.Random(2)
    short, long = _arm(rng, _lengths(rng, 80)), _arm(rng, _lengths(rng, 80, scale=2.0))
    unit = length_unit([*short, *long])
    assert unit == "tokens"
    head = work_of(long, CallPhase.WARM, unit, CONCURRENCY)
    base = work_of(short, CallPhase.WARM, unit, CONCURRENCY)
    head_r, base_r, _ = adjusted(head, base)
    assert 0.95 < stats.percentile(head_r, 50) / stats.percentile(base_r, 50) < 1.05  # type: ignore[operator]
    raw = stats.percentile(head.latencies, 50) / stats.percentile(base.latencies, 50)  # type: ignore[operator]
    assert raw > 1.5


def _judged(head: list[Sample], base: list[Sample]) -> tuple[dict[str, NumberDelta], BaselineCheck]:
    check = compare(
        head,
        stats.numbers(head),
        None,
        DEFAULT_LIMIT,
        "base",
        base_samples=base,
        gated={"warm_p95", "concurrent_p95", "error_rate"},
        concurrency=CONCURRENCY,
    )
    return {d.number: d for d in check.deltas}, check


def test_the_figures_shown_beside_a_length_ratio_divide_to_it() -> None:
    """A head whose answers are mostly a little shorter and sometimes far longer (a system prompt
    asking for detail, on a small model): the pairs' ratio says longer, and the two figures
    beside it are the arms' geometric means, which divide to it. The medians went the other way
    (38 to 33 tokens) beside "answers 33 % longer" on a real llama.cpp A/B."""
    rng = random.Random(5)
    base = _arm(rng, [38] * 120)
    head = _arm(rng, [128 if i % 5 < 2 else 33 for i in range(120)])
    _, check = _judged(head, base)
    length = next(p for p in check.parts if p.part == "length")
    assert length.base is not None
    assert length.head is not None
    assert length.ratio is not None
    assert length.head / length.base == pytest.approx(length.ratio, rel=1e-9)
    assert sorted(s.tokens or 0 for s in head)[len(head) // 2] < 38  # the median is shorter
    assert what_changed(check.parts).startswith("answers 49 % longer (38 to 57 tokens)")


def test_longer_answers_regress_and_are_named_as_the_cause() -> None:
    """Answers 50 % longer at the same speed: the whole-call p95 regresses, the test at the same
    work does not see the speed move, and what changed names the length alone."""
    rng = random.Random(3)
    lengths = _lengths(rng, 120)
    base = _arm(rng, lengths)
    head = _arm(rng, [round(n * 1.5) for n in lengths])
    found, check = _judged(head, base)
    warm = found["warm_p95"]
    assert warm.regressed
    assert warm.same_work
    assert warm.cause.startswith("answers 50 % longer (")
    assert " tokens); " in warm.cause
    assert "time per token and first token unchanged" in warm.cause
    assert check.length is not None
    assert check.length.outcome == "regressed"


def test_same_prompts_of_another_length_do_not_regress_at_the_same_work() -> None:
    """Two arms of one speed whose answers to the same prompts are of the same length are not
    regressed, decided, though the lengths vary 10-fold from call to call."""
    rng = random.Random(4)
    lengths = _lengths(rng, 100)
    found, _check = _judged(_arm(rng, lengths), _arm(rng, lengths))
    for number in ("warm_p95", "concurrent_p95"):
        delta = found[number]
        assert delta.outcome == "not regressed", number
        assert delta.interval is not None
        high = delta.interval[1]
        assert high is not None
        assert high <= 1.10
    assert "no part of a call moved on its own" in found["warm_p95"].cause


def test_a_slower_decode_is_named_as_time_per_token() -> None:
    """Time per token 30 % slower: named as such, the length and the first token unchanged."""
    rng = random.Random(5)
    lengths = _lengths(rng, 100)
    found, _check = _judged(_arm(rng, lengths, per=0.0104), _arm(rng, lengths))
    assert found["warm_p95"].regressed
    cause = found["warm_p95"].cause
    assert cause.startswith("time per token 3")  # 30 % slower, as drawn
    assert "; length and first token unchanged" in cause
    assert "(8.0 ms to 10." in cause


def test_the_interval_is_the_decisions_own() -> None:
    """Every tested row's interval agrees with its outcome: regressed exactly when its low side
    is over the limit, not regressed exactly when its high side is within it."""
    rng = random.Random(6)
    for scale in (1.0, 1.1, 1.3):
        lengths = _lengths(rng, 60)
        found, check = _judged(_arm(rng, lengths, scale=scale), _arm(rng, lengths))
        for number in ("warm_p95", "concurrent_p95"):
            delta = found[number]
            assert delta.interval is not None
            low, high = delta.interval
            assert low is not None
            assert high is not None
            assert delta.interval_levels is not None
            if delta.outcome == "not regressed":
                assert high <= 1.10
            elif delta.outcome == "regressed" and (
                check.length is None or check.length.outcome != "regressed"
            ):
                assert low > 1.10
            else:
                assert high > 1.10


def test_ratio_test_pairs_and_welch() -> None:
    """Identical pairs give a point; unpaired values a Welch interval around the ratio."""
    same = ratio_test([], [], [(10.0, 10.0)] * 5, low_alpha=0.01, high_alpha=0.01)
    assert same is not None
    assert same.low == same.high == 1.0
    rng = random.Random(7)
    head = [2 * math.exp(rng.gauss(0, 0.3)) for _ in range(200)]
    base = [math.exp(rng.gauss(0, 0.3)) for _ in range(200)]
    found = ratio_test(head, base, None, low_alpha=0.01, high_alpha=0.01)
    assert found is not None
    assert not found.paired
    assert found.low is not None
    assert found.high is not None
    assert found.low < 2.0 < found.high
    assert found.against(1.1) is Regression.REGRESSED


def test_a_run_without_lengths_keeps_the_test_of_its_calls() -> None:
    """Calls without a length (bodies of one size, no token count) are tested as before: no
    same work, no parts."""
    calls = [
        Sample(phase=CallPhase.WARM, index=i, started_at=0.0, ok=True, latency=0.1 + i / 1000)
        for i in range(30)
    ]
    same = SameWork(calls, calls, concurrency=CONCURRENCY, paired=True)
    assert not same.applies
    assert what_changed(()) == ""
    found = same.length_test(Alphas(0.01, 0.1))
    assert found is None


# --- fixed length ----------------------------------------------------------------------------


async def _fixed_run(script: Callable[[int], list[Step]]) -> tuple[RunResult, ScriptServer]:
    server = ScriptServer(script)
    await server.start()
    try:
        target = build_target(
            {
                "url": server.url,
                "prompt": "Hi",
                "stream": "true",
                "max-tokens": "8",
                "fixed-length": "true",
                "warm-calls": "4",
                "concurrency": "2",
                **one_look(7),
            }
        )
        result = await probe(target, measure_floor=False)
    finally:
        await server.stop()
    return result, server


async def test_fixed_length_asks_for_it_and_says_it_was_honoured() -> None:
    """--fixed-length sends ignore_eos and min_tokens beside max_tokens, and a server that
    answers every call with the 8 tokens asked is said to have honoured it."""
    result, server = await _fixed_run(lambda n: steady(8, 0.001))
    body = json.loads(server.requests[0].body)
    assert (body["max_tokens"], body["ignore_eos"], body["min_tokens"]) == (8, True, 8)
    codes = {f.code: f for f in result.findings}
    assert "fixed_length" in codes
    assert codes["fixed_length"].title == "Fixed length honoured"


async def test_fixed_length_ignored_is_said() -> None:
    """A server that answers at its own lengths is said not to have honoured it, with the
    lengths it gave."""
    result, _ = await _fixed_run(lambda n: steady(3 + n % 4, 0.001))
    found = next(f for f in result.findings if f.code == "fixed_length_ignored")
    assert "the others ran from 3 to 6 tokens" in found.evidence


def test_fixed_length_needs_the_openai_chat_format() -> None:
    """--fixed-length on an Anthropic body is refused, naming the option and why."""
    with pytest.raises(ConfigError, match="fixed-length: needs the openai-chat format"):
        build_target(
            {"url": "http://127.0.0.1:1/v1/messages", "prompt": "Hi", "fixed-length": "true"}
        )


def test_a_time_per_token_budget_is_a_check_and_a_tested_regression() -> None:
    """--max-tpot-p95 gates the p95 of the warm calls' time per token (PASS far under it), and
    with a base it is tested for regression like any gated percentile: 30 % slower per token
    regresses."""
    rng = random.Random(9)
    lengths = _lengths(rng, 60)
    head, base = _arm(rng, lengths, per=0.0104), _arm(rng, lengths)
    target = build_target(
        {
            "url": "http://127.0.0.1:1/v1/chat/completions",
            "prompt": "Hi",
            "stream": "true",
            "max-tpot-p95": "50ms",
        }
    )
    assert target.budget.max_tpot_p95 == 0.05
    check = compare(
        head,
        stats.numbers(head),
        None,
        DEFAULT_LIMIT,
        "base",
        base_samples=base,
        gated=target.budget.compared(),
        concurrency=CONCURRENCY,
    )
    tpot = next(d for d in check.deltas if d.number == "tpot_p95")
    assert tpot.regressed
    assert not tpot.same_work


def test_a_time_per_token_budget_is_judged_by_the_gate() -> None:
    """The gate holds the time per token's p95 to --max-tpot-p95: 8 ms a token passes 50 ms and
    fails 5 ms."""
    from latency_gate.assess.budget.gate import Gate, plan_for
    from latency_gate.config import Budget

    rng = random.Random(10)
    calls = _arm(rng, _lengths(rng, 60))
    verdicts = {}
    for limit in (0.05, 0.005):
        gate = Gate(
            budget=Budget(max_tpot_p95=limit),
            plan=plan_for(max_calls=500, concurrency=CONCURRENCY, on_undecided="estimate"),
        )
        gate.look(calls)
        checks = {c.number: c for c in gate.checks(calls, stats.numbers(calls))}
        verdicts[limit] = checks["tpot_p95"].passed
    assert verdicts == {0.05: True, 0.005: False}


def _raw_arm(rng: random.Random, sizes: Sequence[int], *, scale: float = 1.0) -> list[Sample]:
    """Calls of a raw endpoint whose bodies vary in size; latency grows a little with size."""
    return [
        Sample(
            phase=phase,
            index=i,
            started_at=0.0,
            ok=True,
            latency=(0.05 + size * 1e-6) * math.exp(rng.gauss(0, 0.05)) * scale,
            status=200,
            bytes_received=size,
        )
        for phase in (CallPhase.WARM, CallPhase.CONCURRENT)
        for i, size in enumerate(sizes)
    ]


def test_larger_bodies_are_named_but_do_not_regress_on_their_own() -> None:
    """A raw endpoint's bodies 50 % larger at the same speed: compared at the same work, the
    length named as what changed, and no number regressed for it (a larger document is not a
    longer wait the way a longer answer is)."""
    rng = random.Random(11)
    sizes = [rng.randrange(2_000, 20_000) for _ in range(80)]
    head, base = _raw_arm(rng, [s * 3 // 2 for s in sizes]), _raw_arm(rng, sizes)
    found, check = _judged(head, base)
    assert found["warm_p95"].same_work
    assert not found["warm_p95"].regressed
    assert check.length is None
    assert [p.moved for p in check.parts if p.part == "length"] == ["longer"]


def test_answers_of_one_fixed_length_an_arm_are_compared_as_whole_calls() -> None:
    """Every answer 64 tokens on the base and 80 on the head (a fixed length, or each cut at its
    cap), at the same speed: no line can be fitted within an arm, so each latency row is tested
    as whole calls, regressed with an interval that says so (its low side over the limit: it
    read x0.03 to x21 at the same work on llama.cpp), and the length is named as the cause."""
    rng = random.Random(11)
    base = _arm(rng, [64] * 60)
    head = _arm(rng, [80] * 60)
    found, check = _judged(head, base)
    for number in ("warm_p95", "concurrent_p95"):
        delta = found[number]
        assert delta.regressed, number
        assert not delta.same_work
        assert delta.interval is not None
        low, high = delta.interval
        assert low is not None
        assert high is not None
        assert 1.1 < low < high < 1.6
        assert delta.cause.startswith("answers 25 % longer (64 to 80 tokens)")
    assert check.length is not None
    assert check.length.outcome == "regressed"


def test_one_fixed_length_on_both_arms_and_the_same_speed_is_not_regressed() -> None:
    """Every answer 64 tokens on both arms at the same speed: whole calls, not regressed."""
    rng = random.Random(12)
    found, _ = _judged(_arm(rng, [64] * 60), _arm(rng, [64] * 60))
    assert found["warm_p95"].outcome == "not regressed"
    assert not found["warm_p95"].same_work


def test_a_row_regressed_by_its_answers_length_says_so() -> None:
    """Answers 50 % longer at the same speed: the latency at the same work is not worse, so the
    row's interval (the latency's) holds no regression; the row is regressed by the length, and
    its result and the verdict's reason say so instead of "regressed" beside an interval that
    does not show it (x0.92 to x1.33 beside "regressed" on llama.cpp)."""
    from latency_gate.assess.verdict import regression_reason
    from latency_gate.report.deltas import delta_rows

    rng = random.Random(3)
    lengths = _lengths(rng, 120)
    found, check = _judged(_arm(rng, [round(n * 1.5) for n in lengths]), _arm(rng, lengths))
    warm = found["warm_p95"]
    assert warm.regressed
    assert warm.by_length
    assert warm.interval is not None
    assert warm.interval[0] is not None
    assert warm.interval[0] <= 1.1  # the latency's own test does not show a regression
    row = next(r for r in delta_rows(check) if r.label == "warm p95")
    assert row.result == "❌ regressed: its answers are longer beyond the limit"
    assert regression_reason(warm).startswith(
        "regression by its answers' length: warm p95: answers "
    )
    # A result file's row with no note (written by hand, or before the note): the sentence
    # names the limit once.
    bare = regression_reason(warm.model_copy(update={"note": ""}))
    assert bare.startswith("regression by its answers' length: warm p95: answers longer, beyond")
    assert bare.count("beyond the limit") == 1
