"""The engine: idle wait, cold call, warm calls, concurrent burst, and more when asked -> samples.

I/O only: every call is one `latency_gate.measure.calls.call`, timed and classified there, and
lands in a `Measurement` the caller holds, so the calls finished before a cancellation are kept.
Nothing here judges: what to measure beyond the first look is the caller's `more` callback
(latency_gate.run asks latency_gate.assess). Concurrent calls each get a small client of their own
(one connection each), opened before the burst, because one big pool costs 12-14 ms of CPU per
request and stamps late (docs/design.md, "The clock").
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

from latency_gate.config import Target
from latency_gate.measure import transport
from latency_gate.measure.calls import call
from latency_gate.models import CallPhase, ErrorKind, Sample, StampSource

__all__ = [
    "FloorSamples",
    "Measurement",
    "MoreCalls",
    "Progress",
    "ProgressCallback",
    "Stage",
    "burst",
    "measure",
    "open_client",
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


@dataclass(frozen=True)
class MoreCalls:
    """What to measure next, beyond the first look: `calls` more warm calls, or one more burst."""

    kind: Literal[CallPhase.WARM, CallPhase.CONCURRENT]
    calls: int
    reason: str = ""


# Asked after each look with the samples so far: what to measure next, or None to stop.
MorePolicy = Callable[[Sequence[Sample]], MoreCalls | None]


@dataclass(frozen=True)
class FloorSamples:
    """Five sequential calls and one burst against the loopback floor server."""

    sequential: tuple[Sample, ...]
    concurrent: tuple[Sample, ...]
    concurrency: int
    stamp_source: StampSource


@dataclass
class Measurement:
    """What a run has measured so far, filled in as calls finish.

    The caller keeps it: when the run is cancelled, the calls that finished are still here.
    """

    samples: list[Sample] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    extra: list[MoreCalls] = field(default_factory=list)
    floor: FloorSamples | None = None
    # Why the run stopped before its planned calls (every first call failed to connect or timed
    # out), or None.
    stopped_early: str | None = None


# Fail fast: when the cold call and this many first warm calls all fail to connect or time out,
# the endpoint is not there; the rest (22 timeouts with the defaults) would add nothing.
FAIL_FAST_WARM = 2
UNREACHABLE = frozenset(
    {
        ErrorKind.CONNECTION_REFUSED,
        ErrorKind.CONNECT_TIMEOUT,
        ErrorKind.READ_TIMEOUT,
        ErrorKind.WRITE_TIMEOUT,
        ErrorKind.TOTAL_TIMEOUT,
        ErrorKind.DNS,
    }
)


def _unreachable(samples: Sequence[Sample]) -> str | None:
    """Why to stop, when the cold call and the first FAIL_FAST_WARM warm calls all failed to
    connect or timed out; else None."""
    first = samples[: 1 + FAIL_FAST_WARM]
    if len(first) < 1 + FAIL_FAST_WARM or any(s.error not in UNREACHABLE for s in first):
        return None
    kinds = ", ".join(sorted({str(s.error) for s in first}))
    return (
        f"stopped after the first {len(first)} calls: all failed to connect or timed out "
        f"({kinds}), so the endpoint is not reachable from here"
    )


def ssl_context_for(target: Target) -> ssl.SSLContext:
    """The TLS settings the target asked for: default trust, a CA bundle, or none (insecure)."""
    if target.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if target.ca_bundle is not None:
        return transport.make_ssl_context(target.ca_bundle)
    if urlsplit(target.url).scheme == "http" and not target.follow_redirects:
        # Never used for plain http; loading the CA bundle would cost ~40 ms of start-up.
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return transport.make_ssl_context(True)


async def measure(
    target: Target,
    into: Measurement,
    *,
    progress: ProgressCallback = _ignore,
    kernel_stamps: bool = True,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    more: MorePolicy | None = None,
) -> None:
    """Idle wait, cold call, warm calls, one burst; then what `more` asks for, until it says stop.

    Never raises for endpoint trouble: every failure is a sample with its ErrorKind. A
    cancellation propagates; the calls finished by then are in `into.samples`.
    """
    if target.idle > 0:
        progress(Progress("idle", 0, 1, target.idle))
        await sleep(target.idle)
    context = ssl_context_for(target)

    progress(Progress("cold", 0, 1))
    async with open_client(target, context, kernel_stamps) as (client, _):
        into.samples.append(await call(client, target, CallPhase.COLD, 0))
        progress(Progress("cold", 1, 1))
        # Warm calls reuse the cold call's client: its connection is the one kept alive.
        first_look = min(FAIL_FAST_WARM, target.warm_calls)
        await _warm(
            client,
            target,
            into,
            progress,
            first=0,
            count=first_look,
            total=target.warm_calls,
            close=False,
        )
        into.stopped_early = _unreachable(into.samples)
        if into.stopped_early is not None:
            progress(Progress("done", len(into.samples), len(into.samples)))
            return
        await _warm(
            client,
            target,
            into,
            progress,
            first=first_look,
            count=target.warm_calls - first_look,
            total=target.warm_calls,
        )
        progress(Progress("concurrent", 0, target.concurrency))
        await burst(target, context, kernel_stamps, into.samples)
        progress(Progress("concurrent", target.concurrency, target.concurrency))
        while more is not None and (step := more(into.samples)) is not None:
            into.extra.append(step)
            done = sum(s.phase is step.kind for s in into.samples)
            if step.kind is CallPhase.WARM:
                await _warm(client, target, into, progress, first=done, count=step.calls)
            else:
                progress(Progress("concurrent", done, done + step.calls))
                await burst(target, context, kernel_stamps, into.samples, first_index=done)
    progress(Progress("done", len(into.samples), len(into.samples)))


async def _warm(
    client: httpx.AsyncClient,
    target: Target,
    into: Measurement,
    progress: ProgressCallback,
    *,
    first: int,
    count: int,
    total: int | None = None,
    close: bool = True,
) -> None:
    """`count` warm calls from index `first`, counted in progress out of `total` (default
    `first + count`); `close` reports the last one done."""
    total = first + count if total is None else total
    for index in range(first, first + count):
        progress(Progress("warm", index, total))
        into.samples.append(await call(client, target, CallPhase.WARM, index))
    if close:
        progress(Progress("warm", first + count, total))


@contextlib.asynccontextmanager
async def open_client(
    target: Target, context: ssl.SSLContext, kernel_stamps: bool
) -> AsyncIterator[tuple[httpx.AsyncClient, transport.StampingBackend]]:
    """A client with one connection on a stamping backend of its own, closed on exit."""
    backend = transport.StampingBackend(kernel_stamps=kernel_stamps)
    client_transport = transport.build_transport(backend, verify=context, max_connections=1)
    timeout = httpx.Timeout(target.timeout, connect=min(target.timeout, 10.0))
    async with httpx.AsyncClient(
        transport=client_transport,
        timeout=timeout,
        follow_redirects=target.follow_redirects,
        trust_env=False,
    ) as client:
        try:
            yield client, backend
        finally:
            await backend.aclose()


async def burst(
    target: Target,
    context: ssl.SSLContext,
    kernel_stamps: bool,
    into: list[Sample],
    *,
    first_index: int = 0,
) -> None:
    """`target.concurrency` calls at once, one small client each; connections opened first
    unless asked not to. The samples land in `into` in index order, also when cancelled."""
    backend = transport.StampingBackend(kernel_stamps=kernel_stamps)
    timeout = httpx.Timeout(target.timeout, connect=min(target.timeout, 10.0))
    clients = [
        httpx.AsyncClient(
            transport=transport.build_transport(backend, verify=context, max_connections=1),
            timeout=timeout,
            follow_redirects=target.follow_redirects,
            trust_env=False,
        )
        for _ in range(target.concurrency)
    ]
    tasks: list[asyncio.Task[Sample]] = []
    try:
        if not target.fresh_connections:
            await _preconnect(target, context, backend)
        go = asyncio.Event()

        async def one(client: httpx.AsyncClient, index: int) -> Sample:
            await go.wait()
            return await call(client, target, CallPhase.CONCURRENT, index)

        tasks = [asyncio.create_task(one(c, first_index + i)) for i, c in enumerate(clients)]
        await asyncio.sleep(0)  # every task reaches go.wait() before the burst starts
        gc_was_enabled = gc.isenabled()
        gc.disable()  # a collection inside the burst would delay every stamp taken in Python
        try:
            go.set()
            await asyncio.gather(*tasks)
        finally:
            if gc_was_enabled:
                gc.enable()
    finally:
        # Finished calls are kept whatever happened to the others (an interrupt, say).
        into += [t.result() for t in tasks if t.done() and not t.cancelled() and not t.exception()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.aclose()
        await backend.aclose()


async def _preconnect(
    target: Target, context: ssl.SSLContext, backend: transport.StampingBackend
) -> None:
    parts = urlsplit(target.url)
    https = parts.scheme == "https"
    with contextlib.suppress(OSError, httpcore.NetworkError, httpcore.TimeoutException):
        # A failed pre-connect is not a measurement: the calls will meet the same trouble on
        # their own connections and report it.
        await backend.preconnect(
            parts.hostname or "",
            parts.port or (443 if https else 80),
            target.concurrency,
            ssl_context=context if https else None,
            server_hostname=parts.hostname if https else None,
            timeout=min(target.timeout, 10.0),
        )
