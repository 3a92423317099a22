"""The engine against real loopback servers: timing, cold start, queues, streams and errors.

Bounds are generous on purpose (the machine is shared and noisy); precise figures live in the
benchmark (bench/, docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
from one_look import one_look

from latency_gate.config import Target, build_target
from latency_gate.demo import DemoServer, EndpointSpec, Fault
from latency_gate.measure.engine import Progress
from latency_gate.models import CallPhase, ErrorKind, RunResult, StampSource
from latency_gate.run import probe, probe_all


def _ignore(_: Progress) -> None:
    return None


def _target(url: str, **raw: str) -> Target:
    """A target of 5 warm calls and bursts of 5, judged on its first look alone (11 calls, or
    the first look of the counts given; max-calls is a cap, never spent past): what
    these tests read is in those calls, and the looks after them (up to 131 calls for the error
    budget) made a test of a 0.3 s endpoint take 20 s. A test that needs the looks says so."""
    settings: dict[str, str | list[str] | None] = {
        "url": url,
        "warm-calls": "5",
        "concurrency": "5",
        "timeout": "5s",
    }
    settings.update(raw)
    first_look = 1 + int(str(settings["warm-calls"])) + int(str(settings["concurrency"]))
    settings.setdefault("max-calls", str(first_look))
    return build_target(settings)


async def _probe(spec: EndpointSpec, **raw: str) -> tuple[RunResult, DemoServer]:
    async with DemoServer(spec) as server:
        settings: Mapping[str, str] = raw
        if spec.stream_format != "raw" and "body" not in raw:
            settings = {"prompt": "hello", **raw}
        result = await probe(_target(server.url, **settings), measure_floor=False)
    return result, server


async def test_fifty_ms_server_measures_fifty_to_eighty_ms() -> None:
    """A 50 ms server's warm p50 lands within 50-80 ms."""
    result, _ = await _probe(EndpointSpec(latency=0.05, tokens=1, token_interval=0))
    assert result.numbers.warm_p50 is not None
    assert 0.050 <= result.numbers.warm_p50 <= 0.080
    assert result.verdict.passed
    assert result.numbers.error_rate == 0.0


async def test_kernel_receive_stamps_are_used_on_linux() -> None:
    """On Linux every call is stamped with the kernel's receive time."""
    result, _ = await _probe(EndpointSpec(latency=0.01, tokens=1, token_interval=0))
    assert result.stamp_source is StampSource.KERNEL
    assert {s.stamp_source for s in result.samples} == {StampSource.KERNEL}


@pytest.mark.slow
async def test_first_call_penalty_shows_in_cold_start_only() -> None:
    """A 1 s first-call penalty is the cold start and leaves the warm numbers alone."""
    result, _ = await _probe(EndpointSpec(latency=0.03, cold_start=1.0, tokens=1, token_interval=0))
    assert result.numbers.cold_start is not None
    assert 1.0 <= result.numbers.cold_start <= 1.3
    assert result.numbers.warm_p95 is not None
    assert result.numbers.warm_p95 < 0.2
    assert [f.code for f in result.findings] == ["cold-start"]


async def test_one_at_a_time_server_makes_concurrent_p95_several_times_warm_p50() -> None:
    """Parallelism 1: the burst queues, concurrent p95 is several times warm p50.

    200 ms a call, so that the queue is read only when the client sent its burst together
    within a tenth of what the queue added (about 75 ms here): at 60 ms a call that tenth was
    24 ms, and beside `stress-ng --cpu 2` the client's sends spread past it (stop 47), which
    the gate rightly names `client-behind`, not a queue."""
    service = 0.2
    result, server = await _probe(
        EndpointSpec(latency=service, parallelism=1, tokens=1, token_interval=0)
    )
    warm, burst = result.numbers.warm_p50, result.numbers.concurrent_p95
    assert warm is not None
    assert burst is not None
    assert burst >= 3.5 * warm
    waits = sorted(r.queued for r in server.records[-5:])
    assert waits[-1] >= 3 * service
    assert "serialized" in [f.code for f in result.findings]


async def test_parallel_server_has_no_queue_finding() -> None:
    """A server that serves the burst in parallel shows no queue."""
    result, server = await _probe(EndpointSpec(latency=0.06, tokens=1, token_interval=0))
    assert result.findings == ()
    assert server.max_in_flight == 5
    assert result.numbers.concurrent_p95 is not None
    assert result.numbers.concurrent_p95 < 0.2


async def test_injected_500s_and_429s_give_error_rate_and_kinds() -> None:
    """Every 4th call a 500, every 4th (offset 1) a 429 with Retry-After: 6 of 11 calls fail."""
    faults = (
        Fault(kind="status", status=500, every=4, offset=0),
        Fault(kind="status", status=429, every=4, offset=1, retry_after="7"),
    )
    result, _ = await _probe(
        EndpointSpec(latency=0.01, tokens=1, token_interval=0, faults=faults, stream_format="raw")
    )
    kinds = [s.error for s in result.samples if not s.ok]
    assert kinds.count(ErrorKind.HTTP_5XX) + kinds.count(ErrorKind.HTTP_429) == len(kinds)
    assert len(kinds) == 6
    assert result.numbers.error_rate == pytest.approx(6 / 11)
    assert result.excluded_from_latency == 6
    assert not result.verdict.passed
    limited = [s for s in result.samples if s.error is ErrorKind.HTTP_429]
    assert {s.retry_after for s in limited} == {"7"}
    assert "rate-limited" in [f.code for f in result.findings]


async def test_hanging_server_gives_read_timeouts_within_the_timeout() -> None:
    """A server that never answers: 3 timeouts (fail fast), no data, FAIL, bounded time."""
    spec = EndpointSpec(stream_format="raw", faults=(Fault(kind="hang"),))
    async with DemoServer(spec) as server:
        target = _target(server.url, timeout="300ms", **{"warm-calls": "2", "concurrency": "2"})
        result = await asyncio.wait_for(probe(target, measure_floor=False), timeout=10)
    assert {s.error for s in result.samples} <= {ErrorKind.READ_TIMEOUT, ErrorKind.TOTAL_TIMEOUT}
    assert len(result.samples) == 3
    assert not result.verdict.passed
    assert result.verdict.reasons[0].startswith("no data")


async def test_refused_connection_is_an_error_not_bad_input() -> None:
    """An unreachable but well-formed URL is a run where every call failed."""
    async with DemoServer(EndpointSpec(stream_format="raw")) as server:
        url = server.url
    result = await probe(_target(url), measure_floor=False)
    assert {s.error for s in result.samples} == {ErrorKind.CONNECTION_REFUSED}
    assert result.numbers.error_rate == 1.0
    assert not result.verdict.passed


@pytest.mark.slow
async def test_first_token_is_the_first_content_not_the_role_chunk() -> None:
    """A role chunk 300 ms before the first content: first token at about 300 ms."""
    spec = EndpointSpec(latency=0.0, first_token_delay=0.3, tokens=3, token_interval=0.01)
    result, _ = await _probe(spec, stream="true")
    warm = [s for s in result.samples if s.phase is CallPhase.WARM]
    for sample in warm:
        assert sample.timings.first_byte is not None
        assert sample.timings.first_token is not None
        assert sample.timings.first_byte < 0.1
        assert 0.29 <= sample.timings.first_token <= 0.4
        assert sample.tokens == 3
    assert result.numbers.ttft_p95 is not None
    assert 0.29 <= result.numbers.ttft_p95 <= 0.4


async def test_cut_stream_is_an_error() -> None:
    """A stream cut in the middle of its body counts as an error of kind stream_cut."""
    spec = EndpointSpec(latency=0.0, tokens=5, faults=(Fault(kind="cut", every=2),))
    result, _ = await _probe(spec, stream="true")
    cut = [s for s in result.samples if not s.ok]
    assert cut
    assert {s.error for s in cut} == {ErrorKind.STREAM_CUT}


@pytest.mark.slow
async def test_buffered_stream_is_named() -> None:
    """A stream held until complete: first token at the end, the buffered finding fires."""
    spec = EndpointSpec(latency=0.02, tokens=20, token_interval=0.01, buffered=True)
    result, _ = await _probe(spec, stream="true")
    assert "buffered-stream" in [f.code for f in result.findings]


@pytest.mark.slow
async def test_honest_stream_is_not_called_buffered() -> None:
    """The same stream sent as it is made raises no finding."""
    spec = EndpointSpec(latency=0.02, tokens=20, token_interval=0.01)
    result, _ = await _probe(spec, stream="true")
    assert result.findings == ()


async def test_stale_pooled_connection_is_retried_and_counted() -> None:
    """llama.cpp's close after each stream: no failed call, and the retries are counted."""
    spec = EndpointSpec(latency=0.0, tokens=3, close_after_stream=True)
    result, _ = await _probe(spec, stream="true")
    assert result.numbers.error_rate == 0.0
    warm = [s for s in result.samples if s.phase is CallPhase.WARM]
    assert all(s.new_connection for s in warm)


async def test_progress_reports_every_stage_in_order() -> None:
    """The progress callback sees floor, cold, warm, concurrent, then warm calls and bursts
    for each further look the gate asks for, and done, in that order."""
    stages: list[str] = []

    def record(event: Progress) -> None:
        if not stages or stages[-1] != event.stage:
            stages.append(event.stage)

    async with DemoServer(EndpointSpec(latency=0.0, stream_format="raw", tokens=1)) as server:
        result = await probe(_target(server.url), progress=record)
    assert stages[:4] == ["floor", "cold", "warm", "concurrent"]
    assert stages[-1] == "done"
    assert result.sampling is not None
    extra = stages[4:-1]
    assert set(extra) <= {"warm", "concurrent"}
    assert len(extra) <= 2 * (result.sampling.looks - 1)
    assert bool(extra) == (result.sampling.looks > 1)
    assert result.floor is not None
    assert result.floor.concurrent_p95 < 0.05


async def test_idle_wait_uses_the_injected_sleep() -> None:
    """--idle waits through the given sleep before the cold call."""
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    async with DemoServer(EndpointSpec(latency=0.0, stream_format="raw", tokens=1)) as server:
        target = _target(server.url, idle="90s")
        await probe(target, measure_floor=False, sleep=fake_sleep)
    assert slept == [90.0]


async def test_cancelled_run_returns_the_calls_so_far_marked_interrupted() -> None:
    """A cancelled run of the edges (SIGTERM) still returns its samples, interrupted, and FAIL."""
    async with DemoServer(EndpointSpec(latency=0.05, stream_format="raw", tokens=1)) as server:
        target = _target(server.url, **{"warm-calls": "100"})
        task = asyncio.create_task(
            probe_all([target, target], progress_for=lambda _: _ignore, measure_floor=False)
        )
        await asyncio.sleep(0.6)
        task.cancel()
        results = await task
    assert len(results) == 1  # no further target after an interrupt
    result = results[0]
    assert result.interrupted
    assert 3 <= len(result.samples) < 101
    assert not result.verdict.passed
    assert "the run was interrupted" in result.verdict.reasons


async def test_probe_propagates_cancellation() -> None:
    """The library's probe() does not swallow a cancellation: asyncio.timeout around it fires."""
    async with DemoServer(EndpointSpec(latency=0.05, stream_format="raw", tokens=1)) as server:
        target = _target(server.url, **{"warm-calls": "100"})
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await probe(target, measure_floor=False)


async def test_burst_calls_finished_before_an_interrupt_are_kept() -> None:
    """Calls of a burst that finished before a cancellation land in the partial result."""
    # Requests 0 (cold), 1-2 (warm), 3-8 (the burst): 3 and 7 hang, the other four answer.
    fault = Fault(kind="hang", every=4, offset=3)
    spec = EndpointSpec(latency=0.01, stream_format="raw", tokens=1, faults=(fault,))
    async with DemoServer(spec) as server:
        target = _target(server.url, **{"warm-calls": "2", "concurrency": "6"})
        task = asyncio.create_task(
            probe_all([target], progress_for=lambda _: _ignore, measure_floor=False)
        )
        await asyncio.sleep(1.0)
        task.cancel()
        results = await task
    concurrent = [s for s in results[0].samples if s.phase is CallPhase.CONCURRENT]
    assert results[0].interrupted
    assert [s.index for s in concurrent] == [1, 2, 3, 5]


async def test_secret_echoed_by_the_server_is_scrubbed_from_details() -> None:
    """An error body that echoes the API key does not carry it into the result."""
    fault = Fault(kind="status", status=401, body="bad key sk-canary-4242 for you")
    spec = EndpointSpec(stream_format="raw", faults=(fault,))
    async with DemoServer(spec) as server:
        target = _target(server.url, **{"api-key": "sk-canary-4242"})
        result = await probe(target, measure_floor=False)
    assert "sk-canary-4242" not in result.model_dump_json()
    assert result.samples[0].error_detail == "HTTP 401: bad key *** for you"


async def test_connection_closed_before_the_answer_is_retried_once_on_a_new_one() -> None:
    """A kept-alive connection closed before any byte: one retry, counted, and the call is ok."""
    fault = Fault(kind="close_before_response", every=4, offset=2)
    spec = EndpointSpec(latency=0.0, stream_format="raw", tokens=1, faults=(fault,))
    # One look (1 + 6 + 1 calls): a burst opens its connection ahead, and a drop on a
    # connection that never answered is a failed call (the next test), not a retry.
    settings = {"warm-calls": "6", "concurrency": "1", **one_look(8)}
    result, server = await _probe(spec, **settings)
    retried = [s for s in result.samples if s.retries]
    assert retried
    assert all(s.ok and s.retries == 1 and s.new_connection for s in retried)
    assert result.numbers.error_rate == 0.0
    assert len(server.records) == len(result.samples) + len(retried)


async def test_a_request_dropped_on_a_connection_that_never_answered_is_a_failed_call() -> None:
    """The burst's connections are opened ahead but never answered: a drop there is no stale
    keep-alive, so no retry hides it and every such call counts in the error rate."""
    # Requests 0 (cold), 1 (warm), 2-6 (the burst): every request of the burst is dropped.
    drops = tuple(Fault(kind="close_before_response", every=100, offset=n) for n in range(2, 7))
    spec = EndpointSpec(latency=0.0, stream_format="raw", tokens=1, faults=drops)
    result, server = await _probe(spec, **{"warm-calls": "1", "concurrency": "5"})
    burst = [s for s in result.samples if s.phase is CallPhase.CONCURRENT]
    assert [(s.ok, s.retries) for s in burst] == [(False, 0)] * 5
    assert result.numbers.error_rate == 5 / 7
    assert len(server.records) == 7


@pytest.mark.slow
async def test_a_retried_call_lives_within_one_timeout() -> None:
    """A stale connection reset after 0.6 s, then a retry that needs 0.6 s more: the call ends
    at its one 1 s timeout as a failure, not after 1.2 s as a success."""
    # Request 2 is the second warm call, on the kept-alive connection that answered request 1.
    spec = EndpointSpec(
        latency=0.6,
        stream_format="raw",
        tokens=1,
        faults=(Fault(kind="reset", every=100, offset=2),),
    )
    # One look: this test is about the call, not the verdict.
    settings = {"warm-calls": "2", "concurrency": "1", "timeout": "1s", **one_look(4)}
    result, _ = await _probe(spec, **settings)
    second = [s for s in result.samples if s.phase is CallPhase.WARM][1]
    assert not second.ok
    assert second.retries == 1
    assert second.error is ErrorKind.READ_TIMEOUT or second.error is ErrorKind.TOTAL_TIMEOUT
