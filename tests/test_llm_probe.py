"""The probe against a real llama.cpp server: streams proven on a server nobody here wrote."""

from __future__ import annotations

import pytest

from latency_gate.config import build_target
from latency_gate.models import CallPhase
from latency_gate.probe import probe

pytestmark = pytest.mark.llm


async def test_streamed_probe_of_a_real_llm_server(llama_server: str) -> None:
    """Streamed: every call succeeds, with a first token before the last byte and token counts."""
    target = build_target(
        {
            "url": f"{llama_server}/v1/chat/completions",
            "prompt": "Name three colours.",
            "stream": "true",
            "warm-calls": "5",
            "concurrency": "3",
            "timeout": "60s",
            # Latency on a shared 2-core CPU is not what these tests pin: only the errors gate.
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
        }
    )
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
    target = build_target(
        {
            "url": f"{llama_server}/v1/chat/completions",
            "prompt": "Name three colours.",
            "stream": "false",
            "warm-calls": "5",
            "concurrency": "3",
            "timeout": "60s",
            # Latency on a shared 2-core CPU is not what these tests pin: only the errors gate.
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
        }
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
    target = build_target(
        {
            "url": f"{llama_server}/v1/chat/completions",
            "prompt": "Count from one to twenty.",
            "stream": "true",
            "warm-calls": "3",
            "concurrency": "4",
            "timeout": "60s",
            # Latency on a shared 2-core CPU is not what these tests pin: only the errors gate.
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
        }
    )
    result = await probe(target, measure_floor=False)
    assert result.numbers.error_rate == 0.0
    assert result.numbers.concurrent_p95 is not None
    assert result.numbers.warm_p50 is not None
    assert result.numbers.concurrent_p95 > 1.3 * result.numbers.warm_p50
