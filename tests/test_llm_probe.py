"""The probe against a real llama.cpp server: streams proven on a server nobody here wrote."""

from __future__ import annotations

import pytest
from one_look import one_look

from latency_gate.config import Target, build_target
from latency_gate.models import CallPhase
from latency_gate.run import probe

pytestmark = pytest.mark.llm


def _target(base_url: str, *, stream: bool, prompt: str, warm: int, concurrency: int) -> Target:
    """A chat target; latency on a shared 2-core CPU is not what these tests pin, so only the
    error rate gates."""
    return build_target(
        {
            "url": f"{base_url}/v1/chat/completions",
            "prompt": prompt,
            "stream": "true" if stream else "false",
            "warm-calls": str(warm),
            "concurrency": str(concurrency),
            "timeout": "60s",
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
            # A real model on a shared CPU is slow: one look is plenty.
            **one_look(1 + warm + concurrency),
        }
    )


async def test_streamed_probe_of_a_real_llm_server(llama_server: str) -> None:
    """Streamed: every call succeeds, with a first token before the last byte and token counts."""
    target = _target(llama_server, stream=True, prompt="Name three colours.", warm=5, concurrency=3)
    result = await probe(target, measure_floor=False)
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert result.numbers.error_rate == 0.0
    for sample in result.samples:
        first, last = sample.timings.first_token, sample.timings.last_byte
        assert first is not None
        assert last is not None
        assert 0 < first <= last
        assert sample.tokens is not None
        assert sample.tokens > 0
        assert sample.tokens_source == "usage"
        assert sample.token_events >= 1
    assert result.numbers.ttft_p95 is not None
    assert result.verdict.passed


async def test_non_streamed_probe_of_a_real_llm_server(llama_server: str) -> None:
    """Not streamed: every call succeeds with usage tokens and no first-token stamp."""
    target = _target(
        llama_server, stream=False, prompt="Name three colours.", warm=5, concurrency=3
    )
    result = await probe(target, measure_floor=False)
    assert [s.error_detail for s in result.samples if not s.ok] == []
    warm = [s for s in result.samples if s.phase is CallPhase.WARM]
    assert all(s.tokens and s.tokens_source == "usage" for s in warm)
    assert all(s.timings.first_token is None for s in warm)
    assert result.numbers.warm_p50 is not None
    assert result.verdict.passed


async def test_two_slot_server_queues_a_burst_of_four(llama_server: str) -> None:
    """With two slots, four concurrent calls take longer than one: the queue shows."""
    target = _target(
        llama_server, stream=True, prompt="Count from one to twenty.", warm=3, concurrency=4
    )
    result = await probe(target, measure_floor=False)
    assert result.numbers.error_rate == 0.0
    assert result.numbers.concurrent_p95 is not None
    assert result.numbers.warm_p50 is not None
    assert result.numbers.concurrent_p95 > 1.3 * result.numbers.warm_p50
