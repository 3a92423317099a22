"""The capacity search on a real llama.cpp server (SmolLM2-135M, 2 threads) with 1, 2 and 4
slots: the figure found for a budget of 3 single calls (3.5 with several slots), and the
search's cost.

The budget is set from the server itself (the median of ten streamed calls made first), so
the test asks the same question on a fast machine and a slow one: how many calls at once end
within 3 times one call? Every answer is 16 tokens (`ignore_eos`), so one call and
a level's calls do the same work. With one slot, calls queue: two do, three do not.
With more slots llama.cpp batches them on the same two threads, each slot slowing the others,
so more calls at once hold the budget, but not slots-times more. Kept short for CI: 16-token
answers, 3 warm calls, the run's bursts of 3 (the search comes down to 2), only concurrent p95
gated.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator

import httpx
import pytest
from conftest import _serve_llama

from latency_gate.config import build_target
from latency_gate.report.terminal import render_terminal
from latency_gate.run import probe

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


async def test_capacity_of_a_real_llm_server(llama: tuple[int, str]) -> None:
    """The search ends on its own and never breaks one call at a time on a healthy server
    (level 1 was decided on 16 calls and broke in a busy machine's noise); one slot holds 2
    calls at once within 3 calls' time, more slots at least as many: each within the figure
    or the interval the search says.

    Level 1 may be near the budget, not held: a level holds only when its calls rule out 5 % of
    them over the budget, and llama.cpp's own tail sometimes puts 1-5 % of one-at-a-time calls
    over 3.5 single calls (a 2-slot level 1: p95 771 ms against a budget of 1,270 ms, 130
    calls, near). The search then says "0 to 3", which is what those calls can show; a level 1
    broken is what must never happen."""
    slots, base = llama
    single = _one_call(base)
    # One slot: the second of 2 queued calls waits for the first, so level 2's p95 is about twice
    # one call's p90; the third of 3 waits for two, so level 3's p95 is over three calls' median
    # and cannot hold a budget of 3. Level 2's p95 came out 2.0-3.2 times the median of three
    # calls (level 3's 3.1-3.9): with 2.8 one run of six broke at level 2 (889 ms against 850);
    # 3 times the median of ten sits between with room on both sides. More slots batch 2 calls on
    # the same two threads at 2.3-2.6 calls' time at p95 (715-912 ms against one call of 305-418
    # ms, issue 30's runs): a 2-slot level 2 broke at 2.8 in one run of two (p95 1,259 ms on 12
    # calls against 994 ms), so they get 3.5, and "at least as many as one slot" is asked where
    # the answer is clear.
    budget = round((3.0 if slots == 1 else 3.5) * single, 3)
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
        f"\n{slots} slots: one call {single * 1000:.0f} ms, budget {budget * 1000:.0f} ms, "
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
        assert capacity.found <= 2 <= top  # 2 queued hold 3 calls' time, 3 do not
        text = " ".join(render_terminal([result]).split())
        assert "as if served about 1 at a time" in text
    else:
        assert top >= 2
