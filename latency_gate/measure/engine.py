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
from latency_gate.measure.prompts import fresh_mark, vary_body
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
    "wait_ready",
]

Stage = Literal["floor", "ready", "idle", "cold", "warm", "concurrent", "done"]


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
    """What to measure before the next look: more warm calls, then more bursts."""

    warm_calls: int
    bursts: int
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
    ready_after: float | None = None


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
    context = ssl_context_for(target)
    if target.wait_ready > 0:
        progress(Progress("ready", 0, 1, target.wait_ready))
        into.ready_after = await wait_ready(target, context, sleep=sleep)
    if target.idle > 0:
        progress(Progress("idle", 0, 1, target.idle))
        await sleep(target.idle)

    progress(Progress("cold", 0, 1))
    async with open_client(target, context, kernel_stamps) as (client, _):
        into.samples.append(await _call(client, target, CallPhase.COLD, 0))
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
            if step.warm_calls:
                done = sum(s.phase is CallPhase.WARM for s in into.samples)
                await _warm(client, target, into, progress, first=done, count=step.warm_calls)
            for _ in range(step.bursts):
                done = sum(s.phase is CallPhase.CONCURRENT for s in into.samples)
                progress(Progress("concurrent", done, done + target.concurrency))
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
        into.samples.append(await _call(client, target, CallPhase.WARM, index))
    if close:
        progress(Progress("warm", first + count, total))


def _body(target: Target) -> tuple[bytes | None, bool]:
    """This call's body: the target's, with a fresh mark at the start of its prompt when
    --vary-prompt is on; and whether the prompt was varied."""
    if not target.vary_prompt:
        return None, False
    body, varied = vary_body(target, fresh_mark(), where="start")
    return (body.encode(), True) if varied and body is not None else (None, False)


async def _call(client: httpx.AsyncClient, target: Target, phase: CallPhase, index: int) -> Sample:
    body, varied = _body(target)
    sample = await call(client, target, phase, index, body=body)
    return sample.model_copy(update={"prompt_varied": True}) if varied else sample


# Statuses a starting server or a gateway in front of one answers until it is ready.
_NOT_READY = frozenset({502, 503, 504})
_READY_POLL = 0.25


async def wait_ready(
    target: Target,
    context: ssl.SSLContext,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> float | None:
    """Poll the target's URL (GET, a new connection each time) until it answers with any status
    but 502, 503 or 504, for at most `target.wait_ready` seconds; the seconds it took, or None.

    GET costs no tokens and warms no cache: the cold call stays the first real call. A starting
    llama.cpp refuses connections, then answers 503 while it loads the model.
    """
    began = time.monotonic()
    deadline = began + target.wait_ready
    for _ in range(100_000):  # bounded by the deadline; the count only guards the loop
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        backend = transport.StampingBackend(kernel_stamps=False)
        async with httpx.AsyncClient(
            transport=transport.build_transport(
                backend, verify=context, proxy=target.proxy, **_versions(target)
            ),
            timeout=min(target.timeout, 5.0, remaining),
            trust_env=False,
        ) as client:
            try:
                response = await client.get(target.url, headers=target.request_headers())
            except httpx.HTTPError:
                pass
            else:
                if response.status_code not in _NOT_READY:
                    return time.monotonic() - began
            finally:
                await backend.aclose()
        await sleep(min(_READY_POLL, max(deadline - time.monotonic(), 0.0)))
    return None


def _versions(target: Target) -> dict[str, bool]:
    """HTTP versions to offer: 1.1; with --http2 also 2 over TLS, and only 2 (prior knowledge)
    for an http:// URL, which has no handshake to agree on it."""
    if not target.http2:
        return {"http1": True, "http2": False}
    return {"http1": urlsplit(target.url).scheme == "https", "http2": True}


@contextlib.asynccontextmanager
async def open_client(
    target: Target, context: ssl.SSLContext, kernel_stamps: bool
) -> AsyncIterator[tuple[httpx.AsyncClient, transport.StampingBackend]]:
    """A client with one connection on a stamping backend of its own, closed on exit."""
    backend = transport.StampingBackend(kernel_stamps=kernel_stamps)
    client_transport = transport.build_transport(
        backend, verify=context, max_connections=1, proxy=target.proxy, **_versions(target)
    )
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
            transport=transport.build_transport(
                backend, verify=context, max_connections=1, proxy=target.proxy, **_versions(target)
            ),
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
            body, varied = _body(target)
            await go.wait()
            sample = await call(client, target, CallPhase.CONCURRENT, index, body=body)
            return sample.model_copy(update={"prompt_varied": True}) if varied else sample

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
    if target.proxy is not None:
        # Every connection goes to the proxy, TLS (if any) inside its CONNECT tunnel: open the
        # TCP connections to the proxy ahead, and leave the rest to the calls.
        parts, https = urlsplit(target.proxy), False
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
            http2=target.http2,
        )
