"""The capacity search on a real llama.cpp server (SmolLM2-135M, one thread:
conftest.LLAMA_THREADS) with 1, 2 and 4
slots: the figure found for a budget set at 3 queued calls' p95 (one slot) or at 3.5
single calls (several slots), and the search's cost.

The budget is set from the server itself (calls made first, timed the way the search times its
levels), so the test asks the same question on a fast machine and a slow one. Every answer is 16
tokens (`ignore_eos`), so one call and a level's calls do the same work. With one slot, calls
queue: two do, four do not (three sit on the budget). With more slots llama.cpp batches them
on the same thread, each slot slowing the others, so more calls at once hold the budget,
but not slots-times more.
Kept short for CI: 16-token answers, 3 warm calls, the run's bursts of 3 (the search comes down
to 2), only concurrent p95 gated.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator

import httpx
import pytest
from conftest import _serve_llama

from latency_gate.assess.maths.intervals import linear_percentile
from latency_gate.config import build_target
from latency_gate.measure.clients import ClientKit, ssl_context_for
from latency_gate.report.terminal import render_terminal
from latency_gate.run import probe
from latency_gate.sample import Sample

pytestmark = pytest.mark.llm

PROMPT = "Name three colours."
TOKENS = 16


@pytest.fixture(scope="module", params=[1, 2, 4], ids=lambda n: f"{n}-slots")
def llama(request: pytest.FixtureRequest) -> Iterator[tuple[int, str]]:
    """One llama.cpp server at a time, with 1, 2 and 4 slots; (slots, base URL)."""
    for url in _serve_llama(n_parallel=request.param):  # stops the server after the one yield
        yield request.param, url


def _body(prompt: str) -> dict[str, object]:
    """A streamed chat request whose answer is always TOKENS long: llama.cpp's `ignore_eos`
    keeps the model from stopping early, so one call and a level's p95 time the same work
    (with answers of varied length the level's p95 picks the longest ones and the median call
    a shorter one, and the budget lands anywhere from 2 to 3 calls' time)."""
    return {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": TOKENS,
        "stream": True,
        "ignore_eos": True,
    }


def _one_call(base: str) -> float:
    """The median of ten streamed calls, one after another, in seconds (each on a new
    connection: this server closes one after a streamed answer). Ten, not three: the median of
    three moved by a fifth between runs on the same server (level 1's p95 came out 1.15 to 1.32
    times it), and the budget, a multiple of it, moved with it onto level 2's edge."""
    took = []
    for i in range(11):
        body = _body(f"[{i:08x}] {PROMPT}")
        with httpx.Client(timeout=60) as client:
            began = time.perf_counter()
            with client.stream("POST", f"{base}/v1/chat/completions", json=body) as answer:
                for _ in answer.iter_bytes():
                    pass
            took.append(time.perf_counter() - began)
    return statistics.median(took[1:])  # the first warms the server


async def _queued_levels(base: str) -> tuple[float, float]:
    """One slot: sixteen bursts of 2 calls and twelve of 3, made by the gate's own burst (after
    one of each that warms the server), as the search makes its levels 2 and 3; (level 2's p95,
    level 3's p95) in seconds. Level 3's p95 is the budget.

    Why: the k-th call of a burst on one slot ends near C + kS (C the client's overhead, which
    overlaps between calls made together, S the server's service), so no multiple of one call
    sits between 2 queued and 3 (3 times the median call alone broke level 2 in one pass of the
    tier in four). The search fails this test only by breaking level 2 (about 15 % of its calls
    over the budget) or holding level 3 (1-2 % over); a level near the budget is allowed. The
    client must be the one the search uses (a plain httpx client's 2nd and 3rd calls of 3 came
    out at 425 and 635 ms against the gate's 514 and 768), and the server must run in a process
    of its own (tests/llama_process.py): in the pytest process levels 2 and 3 overlapped
    (rounds of 40 calls: level 2's p95 748-959 ms, level 3's 869-1,200 ms). In its own process
    they are apart, but a level's p95 still moves by a fifth between the calls made here and
    the search's: the midpoint of the two (919 ms) broke a search's level 2 whose p95 came out
    at 950 ms against 764 here. Every failure seen was a level 2 broken, none a level 3 held.
    At level 3's own p95, level 2's p95 is 30-40 % under the budget, and level 3 has about 5 %
    of its calls over it: near, or broken when the search's calls are slower."""
    target = build_target(
        {
            "url": f"{base}/v1/chat/completions",
            "body": json.dumps(_body(PROMPT)),
            "stream": "true",
            "timeout": "60s",
        }
    )
    context = ssl_context_for(target)
    p95s = []
    for size, bursts in ((2, 16), (3, 12)):
        level = target.model_copy(update={"concurrency": size})
        calls: list[float] = []
        for i in range(bursts + 1):
            made: list[Sample] = []
            await ClientKit(level, True, context).burst(made)
            assert all(c.ok and c.latency is not None for c in made), [c.error_detail for c in made]
            if i:  # the first warms the server
                calls += [c.latency or 0.0 for c in made]
        p95s.append(linear_percentile(calls, 95.0) or 0.0)
    two, three = p95s
    return two, three


async def test_capacity_of_a_real_llm_server(llama: tuple[int, str]) -> None:
    """The search ends on its own and never breaks one call at a time on a healthy server
    (level 1 was decided on 16 calls and broke in a busy machine's noise); one slot holds 2
    calls at once within a budget at 3 queued calls' p95, and not 5 (3, at the budget's own
    level, goes either way, and 4 held once when the search's calls ran a quarter faster than
    those that set the budget); more slots
    hold at least 2 within 3.5 single calls: each within the figure or the interval the search
    says.

    Level 1 may be near the budget, not held: a level holds only when its calls rule out 5 % of
    them over the budget, and llama.cpp's own tail sometimes puts 1-5 % of one-at-a-time calls
    over 3.5 single calls (a 2-slot level 1: p95 771 ms against a budget of 1,270 ms, 130
    calls, near). The search then says "0 to 3", which is what those calls can show; a level 1
    broken is what must never happen."""
    slots, base = llama
    single = _one_call(base)
    # One slot: level 3's p95 as the gate makes it (_queued_levels).
    # It was 3 times the median call alone, and 1 pass of the tier in 4 failed on it (level 2's p95
    # 881 ms against 756 ms): the k-th queued call ends near C + kS, and 3(C + S) sits anywhere
    # from level 2's tail to level 3's median as C's share moves.
    # More slots batch 2 calls at 2.3-2.6 calls' time at p95 (715-912 ms against one call of
    # 305-418 ms, issue 30's runs, two threads; one thread, stop 48: 1,313-1,355 ms against
    # 528-555 ms): a 2-slot level 2 broke at 2.8 in one run
    # of two (p95 1,259 ms on 12 calls against 994 ms), so they get 3.5, and "at least 2" is
    # asked where the answer is clear.
    queued = await _queued_levels(base) if slots == 1 else None
    budget = round(queued[1] if queued else 3.5 * single, 3)
    target = build_target(
        {
            "url": f"{base}/v1/chat/completions",
            "body": json.dumps(_body(PROMPT)),
            "stream": "true",
            "warm-calls": "3",
            "concurrency": "3",  # the queue finding reads the run's first burst: 3 calls
            "timeout": "60s",
            "max-warm-p95": "off",
            "max-error-rate": "off",
            "max-concurrent-p95": f"{budget}s",
            "capacity": "true",
            "capacity-max": "16",
        }
    )
    began = time.monotonic()
    result = await probe(target, measure_floor=False)
    took = time.monotonic() - began
    capacity = result.capacity
    assert capacity is not None
    levels = {lv.concurrency: lv for lv in capacity.levels}
    print(  # the figures of docs/benchmarks.md, "Capacity on llama.cpp"
        f"\n{slots} slots: one call {single * 1000:.0f} ms"
        + (
            f", levels 2 and 3 before the search p95 {queued[0] * 1000:.0f} and "
            f"{queued[1] * 1000:.0f} ms"
            if queued
            else ""
        )
        + f", budget {budget * 1000:.0f} ms, "
        f"capacity {capacity.found}"
        + (f" to {capacity.upper}" if capacity.upper is not None else "")
        + ", levels "
        + ", ".join(
            f"{c}: {'held' if lv.held else 'near' if lv.near else 'broke'} p95 "
            f"{(lv.p95 or 0) * 1000:.0f} ms ({lv.calls} calls)"
            for c, lv in sorted(levels.items())
        )
        + f"; search {capacity.calls} calls in {capacity.seconds:.1f} s; run {took:.1f} s"
    )
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert capacity.complete
    one = levels.get(1)  # the search starts from the run's burst: it may not try level 1
    assert one is None or one.held or one.near  # never broken: one call holds 3 calls' time
    assert capacity.found >= 1 or (one is not None and one.near and capacity.upper is not None)
    if capacity.found:
        assert levels[capacity.found].held
    top = capacity.upper if capacity.upper is not None else capacity.found
    if capacity.breaking is not None:
        assert not levels[capacity.breaking].held
        assert capacity.breaking == top + 1
    if slots == 1:
        # 2 queued hold the budget, 5 do not. Level 3 sits on it by construction, and a level's
        # p95 moves by a fifth or more between the calls made before the search and the
        # search's own, either way: CI's fresh machine at stop 34 held level 3 (p95 1,111 ms in
        # the search against 1,351 ms measured before), where "found <= 2" failed; a fresh-clone
        # run at stop 45 held level 4 (p95 1,099 ms against a budget of 1,210; level 2 came out
        # 27 % faster than measured before, and the search's level 3, at 1,177 ms, slower than
        # its level 4), where "found <= 3" failed. Level 5 sits near 1.5 budgets (1,463 ms
        # there, broken), level 2 near two thirds of one: each needs a drift of a third or more.
        assert capacity.found <= 4
        assert top >= 2
        text = " ".join(render_terminal([result]).split())
        assert "as if served about 1 at a time" in text
    else:
        assert top >= 2
