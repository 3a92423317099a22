"""The run: floor, idle wait, cold call, warm calls, concurrent burst; then the result.

Each call is one `latency_gate.calls.call`, timed and classified there. Concurrent calls each get
a small client of their own (one connection each), opened before the burst, because one big pool
costs 12-14 ms of CPU per request and stamps late (docs/design.md, "The clock").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import httpcore
import httpx

from latency_gate import __version__, clock, stats
from latency_gate.baseline import BaselinePlan, apply_plan
from latency_gate.budget import evaluate
from latency_gate.calls import call, classify
from latency_gate.chain import chain_stats
from latency_gate.config import Target
from latency_gate.echo import EchoServer
from latency_gate.findings import find
from latency_gate.models import CallPhase, Floor, RunResult, Sample, StampSource

# `call` and `classify` are re-exported: they lived here before the single call had its module.
__all__ = [
    "Progress",
    "ProgressCallback",
    "Stage",
    "build_result",
    "burst",
    "call",
    "classify",
    "measure_floor_against_echo",
    "probe",
    "ssl_context_for",
]

Stage = Literal["floor", "idle", "cold", "warm", "concurrent", "done"]


@dataclass(frozen=True)
class Progress:
    """Where a run is, for a progress line. `done` of `total` calls in `stage`."""

    stage: Stage
    done: int = 0
    total: int = 0
    seconds: float = 0.0


ProgressCallback = Callable[[Progress], None]


def _ignore(_: Progress) -> None:
    return None


@dataclass
class _Run:
    target: Target
    progress: ProgressCallback
    kernel_stamps: bool
    samples: list[Sample] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def ssl_context_for(target: Target) -> ssl.SSLContext:
    """The TLS settings the target asked for: default trust, a CA bundle, or none (insecure)."""
    if target.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if target.ca_bundle is not None:
        return clock.make_ssl_context(target.ca_bundle)
    if urlsplit(target.url).scheme == "http" and not target.follow_redirects:
        # Never used for plain http; loading the CA bundle would cost ~40 ms of start-up.
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return clock.make_ssl_context(True)


async def probe(
    target: Target,
    *,
    progress: ProgressCallback | None = None,
    measure_floor: bool = True,
    kernel_stamps: bool = True,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> RunResult:
    """Probe one target: floor, idle wait, cold call, warm calls, concurrent burst; then numbers.

    Never raises for endpoint trouble: every failure is a sample with its ErrorKind. When the
    task running this is cancelled (SIGINT, SIGTERM), the calls finished so far are returned in a
    result marked interrupted.
    """
    run = _Run(target=target, progress=progress or _ignore, kernel_stamps=kernel_stamps)
    started = time.time()
    floor: Floor | None = None
    interrupted = False
    try:
        if measure_floor:
            run.progress(Progress("floor"))
            floor = await measure_floor_against_echo(
                concurrency=min(target.concurrency, 10), kernel_stamps=kernel_stamps
            )
        await _probe_phases(run, sleep)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        interrupted = True
        run.warnings.append("the run was interrupted; the numbers cover the calls finished")
    run.progress(Progress("done", len(run.samples), len(run.samples)))
    return build_result(
        target,
        run.samples,
        started_at=started,
        finished_at=time.time(),
        floor=floor,
        interrupted=interrupted,
        warnings=run.warnings,
        stamp_source=_overall_source(run.samples, kernel_stamps),
    )


async def probe_all(
    targets: Sequence[Target],
    *,
    progress_for: Callable[[Target], ProgressCallback],
    measure_floor: bool = True,
    label: str | None = None,
    plan: BaselinePlan | None = None,
) -> list[RunResult]:
    """Probe targets one after another (so they do not disturb each other), each result labelled
    and held against the baseline plan; stop after a run that was interrupted.

    `progress_for(target)` is called as each target's run begins.
    """
    results: list[RunResult] = []
    for target in targets:
        result = await probe(target, progress=progress_for(target), measure_floor=measure_floor)
        if label:
            result = result.model_copy(update={"label": label})
        results.append(result if plan is None else apply_plan(plan, result))
        if result.interrupted:
            break
    return results


def build_result(
    target: Target,
    samples: Sequence[Sample],
    *,
    started_at: float,
    finished_at: float,
    floor: Floor | None = None,
    interrupted: bool = False,
    warnings: Sequence[str] = (),
    stamp_source: StampSource = StampSource.READ_RETURN,
) -> RunResult:
    """Numbers, phase statistics and verdict from samples: the pure end of a run."""
    numbers = stats.numbers(samples)
    successful = sum(s.ok for s in samples)
    verdict = evaluate(numbers, target.budget, successful_calls=successful)
    if interrupted:
        verdict = verdict.model_copy(
            update={"passed": False, "reasons": (*verdict.reasons, "the run was interrupted")}
        )
    all_warnings = list(warnings)
    if target.insecure:
        all_warnings.append("TLS certificate checks were turned off (--insecure)")
    return RunResult(
        findings=find(samples, numbers, streaming=target.stream),
        tool_version=__version__,
        target=target.name,
        config=target.redacted(),
        started_at=started_at,
        finished_at=finished_at,
        stamp_source=stamp_source,
        floor=floor,
        samples=tuple(samples),
        numbers=numbers,
        phases=stats.phase_stats(samples),
        chain=chain_stats(samples),
        excluded_from_latency=len(samples) - successful,
        verdict=verdict,
        interrupted=interrupted,
        warnings=tuple(all_warnings),
    )


def _overall_source(samples: Sequence[Sample], kernel_stamps: bool) -> StampSource:
    sources = {s.stamp_source for s in samples if s.ok}
    if sources == {StampSource.KERNEL}:
        return StampSource.KERNEL
    if not sources and kernel_stamps and clock.kernel_stamps_supported():
        return StampSource.KERNEL  # no call succeeded: say what the platform would have given
    return StampSource.READ_RETURN


async def _probe_phases(run: _Run, sleep: Callable[[float], Awaitable[None]]) -> None:
    target = run.target
    if target.idle > 0:
        run.progress(Progress("idle", 0, 1, target.idle))
        await sleep(target.idle)
    context = ssl_context_for(target)

    run.progress(Progress("cold", 0, 1))
    async with _client(target, context, run.kernel_stamps) as (client, _):
        run.samples.append(await call(client, target, CallPhase.COLD, 0))
        run.progress(Progress("cold", 1, 1))
        # Warm calls reuse the cold call's client: its connection is the one kept alive.
        for index in range(target.warm_calls):
            run.progress(Progress("warm", index, target.warm_calls))
            run.samples.append(await call(client, target, CallPhase.WARM, index))
        run.progress(Progress("warm", target.warm_calls, target.warm_calls))

    run.progress(Progress("concurrent", 0, target.concurrency))
    run.samples += await burst(target, context, run.kernel_stamps)
    run.progress(Progress("concurrent", target.concurrency, target.concurrency))


@contextlib.asynccontextmanager
async def _client(
    target: Target, context: ssl.SSLContext, kernel_stamps: bool
) -> AsyncIterator[tuple[httpx.AsyncClient, clock.StampingBackend]]:
    backend = clock.StampingBackend(kernel_stamps=kernel_stamps)
    transport = clock.build_transport(backend, verify=context, max_connections=1)
    timeout = httpx.Timeout(target.timeout, connect=min(target.timeout, 10.0))
    async with httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        follow_redirects=target.follow_redirects,
        trust_env=False,
    ) as client:
        try:
            yield client, backend
        finally:
            await backend.aclose()


async def burst(target: Target, context: ssl.SSLContext, kernel_stamps: bool) -> list[Sample]:
    """C calls at once, one small client each; connections opened first unless asked not to."""
    backend = clock.StampingBackend(kernel_stamps=kernel_stamps)
    timeout = httpx.Timeout(target.timeout, connect=min(target.timeout, 10.0))
    clients = [
        httpx.AsyncClient(
            transport=clock.build_transport(backend, verify=context, max_connections=1),
            timeout=timeout,
            follow_redirects=target.follow_redirects,
            trust_env=False,
        )
        for _ in range(target.concurrency)
    ]
    try:
        if not target.fresh_connections:
            parts = urlsplit(target.url)
            https = parts.scheme == "https"
            with contextlib.suppress(OSError, httpcore.NetworkError, httpcore.TimeoutException):
                # A failed pre-connect is not a measurement: the calls will meet the same
                # trouble on their own connections and report it.
                await backend.preconnect(
                    parts.hostname or "",
                    parts.port or (443 if https else 80),
                    target.concurrency,
                    ssl_context=context if https else None,
                    server_hostname=parts.hostname if https else None,
                    timeout=min(target.timeout, 10.0),
                )
        go = asyncio.Event()

        async def one(client: httpx.AsyncClient, index: int) -> Sample:
            await go.wait()
            return await call(client, target, CallPhase.CONCURRENT, index)

        tasks = [asyncio.create_task(one(c, i)) for i, c in enumerate(clients)]
        await asyncio.sleep(0)  # every task reaches go.wait() before the burst starts
        gc_was_enabled = gc.isenabled()
        gc.disable()  # a collection inside the burst would delay every stamp taken in Python
        try:
            go.set()
            return list(await asyncio.gather(*tasks))
        finally:
            if gc_was_enabled:
                gc.enable()
    finally:
        for client in clients:
            await client.aclose()
        await backend.aclose()


async def measure_floor_against_echo(*, concurrency: int, kernel_stamps: bool) -> Floor:
    """The gate's own floor: latency of a loopback server that answers at once.

    Takes a few milliseconds. Tells readers what the numbers can resolve on this machine.
    """
    async with EchoServer() as server:
        target = Target(
            name="floor", url=server.url, warm_calls=5, concurrency=concurrency, timeout=5.0
        )
        context = ssl_context_for(target)
        async with _client(target, context, kernel_stamps) as (client, backend):
            sequential = [
                await call(client, target, CallPhase.WARM, i) for i in range(target.warm_calls)
            ]
        concurrent = await burst(target, context, kernel_stamps)
    seq = stats.latencies(sequential[1:], CallPhase.WARM)
    conc = stats.latencies(concurrent, CallPhase.CONCURRENT)
    return Floor(
        sequential_p50=stats.percentile(seq, 50) or 0.0,
        concurrent_p95=stats.percentile(conc, 95) or 0.0,
        concurrency=concurrency,
        stamp_source=backend.source,
    )
