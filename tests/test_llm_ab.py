"""A/B in one run on real stacks (issue 21 point 6): two llama.cpp servers side by side.

The known difference: the answer length the server gives a request that names none (its
`n_predict`), 64 tokens on the head against 16 on its base, the request the same for both. The
head's calls take about twice as long: judged regressed. An unchanged pair, two servers of the
same settings, is judged not regressed. Budgets are off (only the regression verdict is under
test) and the calls are capped: a real model on a shared 2-core CPU is slow.

Seen here (docs/design.md, "A/B in one run"): one slot against four is no regression of the
whole answer on two CPU cores (four batched answers take as long as four queued ones), only of
the first token; and one thread against two flips with the machine's load, so neither makes a
difference known in advance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from conftest import _serve_llama

from latency_gate.config import Target, build_target
from latency_gate.models import RunResult
from latency_gate.run import probe

pytestmark = pytest.mark.llm

# Calls per arm: 1 cold + 8 warm + a burst of 3 at the first look; at most 30 with the looks
# that sequential sampling adds while a regression is undecided.
WARM, CONCURRENCY, MAX_CALLS = 8, 3, 30
# No max_tokens: each server's own answer length applies. Temperature 0: the two arms get the
# same prompt call by call, and answer it alike (issue 26).
BODY = {
    "messages": [{"role": "user", "content": "Count from one to twenty."}],
    "stream": True,
    "temperature": 0,
}


@pytest.fixture(scope="module")
def llama_long() -> Iterator[str]:
    """A llama.cpp server answering 64 tokens to a request that names no length."""
    yield from _serve_llama(n_parallel=2, n_predict=64)


@pytest.fixture(scope="module")
def llama_short() -> Iterator[str]:
    """A llama.cpp server answering 16 tokens to a request that names no length."""
    yield from _serve_llama(n_parallel=2, n_predict=16)


@pytest.fixture(scope="module")
def llama_short_twin() -> Iterator[str]:
    """A second server with `llama_short`'s settings."""
    yield from _serve_llama(n_parallel=2, n_predict=16)


def _ab(head: str, base: str) -> Target:
    return build_target(
        {
            "url": f"{head}/v1/chat/completions",
            "baseline-url": f"{base}/v1/chat/completions",
            "body": json.dumps(BODY),
            "warm-calls": str(WARM),
            "concurrency": str(CONCURRENCY),
            "max-calls": str(MAX_CALLS),
            "timeout": "60s",
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
            "max-error-rate": "off",
        }
    )


def _outcomes(result: RunResult) -> dict[str, str | None]:
    assert result.baseline is not None
    return {d.number: d.outcome for d in result.baseline.deltas}


async def test_a_longer_answer_on_the_head_regresses(llama_long: str, llama_short: str) -> None:
    """The head answering 64 tokens where its base answers 16: a warm number regressed (the
    run stops at the first one decided, so the other may stay undecided), the run fails, and
    what changed is named: the answers' length, longer (issue 26)."""
    result = await probe(_ab(llama_long, llama_short), measure_floor=False)
    outcomes = _outcomes(result)
    assert [s.error_detail for s in (*result.samples, *result.base_samples) if not s.ok] == []
    assert "regressed" in (outcomes["warm_p50"], outcomes["warm_p95"]), outcomes
    assert not result.verdict.passed
    assert result.baseline is not None
    parts = {p.part: p.moved for p in result.baseline.parts}
    assert parts["length"] == "longer", parts
    assert result.baseline.length is not None
    assert result.baseline.length.outcome == "regressed"


async def test_two_servers_of_the_same_settings_do_not_regress(
    llama_short: str, llama_short_twin: str
) -> None:
    """Two servers of the same settings side by side: nothing regressed, the run passes, and
    the pairs of the same prompt at temperature 0 got answers of the same length (issue 26)."""
    result = await probe(_ab(llama_short_twin, llama_short), measure_floor=False)
    outcomes = _outcomes(result)
    assert [s.error_detail for s in (*result.samples, *result.base_samples) if not s.ok] == []
    assert "regressed" not in outcomes.values(), outcomes
    assert result.verdict.passed
    assert result.baseline is not None
    assert result.baseline.length is not None
    assert result.baseline.length.ratio == 1.0
    assert result.baseline.length.outcome == "not regressed"
