"""Token timing, reasoning, varied prompts and the readiness wait, on a scripted loopback
server (issue 14 points 2-5)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator

import pytest
from conftest import free_port
from one_look import one_look
from script_server import ScriptServer, Step, steady

from latency_gate.config import Target, build_target
from latency_gate.formatting import fmt_duration
from latency_gate.models import CallPhase
from latency_gate.report.markdown import render_markdown
from latency_gate.report.terminal import render_terminal
from latency_gate.run import probe


def _target(url: str, **extra: str) -> Target:
    raw = {
        "url": url,
        "prompt": "Name three colours.",
        "stream": "true",
        "warm-calls": "4",
        "concurrency": "2",
        "timeout": "20s",
        "max-warm-p95": "off",
        "max-concurrent-p95": "off",
    } | {**extra}
    # One look, of the counts given: these tests are about token timing, not the verdict.
    first_look = 1 + int(raw["warm-calls"]) + int(raw["concurrency"])
    return build_target({**one_look(first_look), **raw})


@pytest.fixture
async def server() -> AsyncIterator[ScriptServer]:
    """Every call: 10 deltas 20 ms apart, but warm call #2 (the 4th request) stalls 700 ms
    after its 5th delta."""

    def script(n: int) -> list[Step]:
        steps = steady(10, 0.02)
        if n == 3:
            steps[5] = Step(0.7, steps[5].delta)
        return steps

    running = ScriptServer(script)
    await running.start()
    yield running
    await running.stop()


@pytest.mark.slow
async def test_token_timing_per_call_and_the_stall(server: ScriptServer) -> None:
    """Per call: second token, gaps and tokens/s; the run's itl_p95 and longest stall; the
    stalled call named in a finding."""
    result = await probe(_target(server.url), measure_floor=False)
    assert [s.error_detail for s in result.samples if not s.ok] == []
    for sample in result.samples:
        gaps, t = sample.token_gaps, sample.timings
        assert gaps is not None
        assert t.first_event == t.first_token
        assert t.first_token is not None
        assert t.second_token is not None
        assert 0.01 <= t.second_token - t.first_token <= 0.2
        assert (gaps.count, gaps.kept) == (9, 9)
        assert 0.01 <= gaps.p50 <= 0.2
        assert sample.output_tokens_per_s is not None
    stalled = next(s for s in result.samples if s.phase is CallPhase.WARM and s.index == 2)
    assert stalled.token_gaps is not None
    assert 0.65 <= stalled.token_gaps.max <= 1.2
    assert result.numbers.longest_stall == stalled.token_gaps.max
    assert result.numbers.itl_p95 is not None
    assert 0.01 <= result.numbers.itl_p95 <= 0.2
    finding = {f.code: f for f in result.findings}["stalled-stream"]
    assert "warm call #2" in finding.evidence
    assert result.numbers.ttft_warm_p95 is not None
    assert result.numbers.ttft_concurrent_p95 is not None


@pytest.mark.slow
async def test_reasoning_first_event_before_the_first_token() -> None:
    """A reasoning model: 3 reasoning deltas 30 ms apart, then the answer: first_event comes
    about 60 ms before first_token, and the reasoning counts in the gaps."""

    def script(n: int) -> list[Step]:
        think = [Step(0.03, {"reasoning_content": f"r{i} "}) for i in range(3)]
        return think + steady(3, 0.03)

    server = ScriptServer(script)
    await server.start()
    try:
        result = await probe(_target(server.url), measure_floor=False)
    finally:
        await server.stop()
    assert result.numbers.error_rate == 0.0
    for sample in result.samples:
        first_event, first_token = sample.timings.first_event, sample.timings.first_token
        assert first_event is not None
        assert first_token is not None
        assert 0.05 <= first_token - first_event <= 0.5
        assert sample.reasoning_events == 3
        assert sample.token_gaps is not None
        assert sample.token_gaps.count == 5


@pytest.mark.slow
async def test_vary_prompt_makes_each_prompt_unique_and_the_same_length(
    server: ScriptServer,
) -> None:
    """Default --vary-prompt: 7 calls, 7 different prompts of one length, each marked before
    the prompt; every sample says its prompt was varied."""
    result = await probe(_target(server.url), measure_floor=False)
    prompts = [json.loads(r.body)["messages"][-1]["content"] for r in server.requests]
    assert len(prompts) == 7
    assert len(set(prompts)) == 7
    assert {len(p) for p in prompts} == {len("[0123abcd] Name three colours.")}
    assert all(re.fullmatch(r"\[[0-9a-f]{8}\] Name three colours\.", p) for p in prompts)
    assert all(s.prompt_varied for s in result.samples)


@pytest.mark.slow
async def test_same_prompt_when_asked(server: ScriptServer) -> None:
    """--vary-prompt false: every call sends the very same body."""
    result = await probe(_target(server.url, **{"vary-prompt": "false"}), measure_floor=False)
    assert len({r.body for r in server.requests}) == 1
    assert not any(s.prompt_varied for s in result.samples)


@pytest.mark.slow
async def test_wait_ready_waits_for_a_server_that_starts_late() -> None:
    """Nothing listens for 0.6 s, then the server answers 503 for 0.5 s more: --wait-ready 20s
    polls through both, reports the wait, and the cold call is the first real request."""
    port = free_port()
    loop = asyncio.get_running_loop()
    server = ScriptServer(lambda n: steady(3, 0.01))

    async def start_late() -> None:
        await asyncio.sleep(0.6)
        server.ready_at = loop.time() + 0.5
        await server.start(port)

    starter = asyncio.create_task(start_late())
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        result = await probe(_target(url, **{"wait-ready": "20s"}), measure_floor=False)
    finally:
        await starter
        await server.stop()
    assert result.ready_after is not None
    assert 1.0 <= result.ready_after <= 10.0
    assert result.numbers.error_rate == 0.0
    assert len(server.requests) == 7  # the polls were GETs, none of them counted as a call
    assert result.samples[0].phase is CallPhase.COLD
    terminal = render_terminal([result], color=False, verbose=True)
    assert f"waited {fmt_duration(result.ready_after)} for the endpoint to answer" in terminal
    assert "before the cold call (--wait-ready)" in render_markdown([result])


async def test_without_wait_ready_a_starting_server_fails_the_cold_call() -> None:
    """No wait: a server still loading answers the cold call 503, which counts."""
    server = ScriptServer(lambda n: steady(3, 0.01))
    await server.start()
    server.ready_at = asyncio.get_running_loop().time() + 60
    try:
        result = await probe(
            _target(server.url, **{"warm-calls": "1", "concurrency": "1"}), measure_floor=False
        )
    finally:
        await server.stop()
    assert result.ready_after is None
    assert [s.status for s in result.samples] == [503, 503, 503]
