"""The engine: idle wait, cold call, warm calls, concurrent burst, and more when asked -> samples.

I/O only: every call is one `latency_gate.measure.calls.call`, timed and classified there, and
lands in a `Measurement` the caller holds, so the calls finished before a cancellation are kept.
Nothing here judges: what to measure beyond the first look is the caller's `more` callback
(latency_gate.run asks latency_gate.assess). The clients it calls through are in clients.py,
the wait for a starting server in ready.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import httpx

from latency_gate.config import Target, redact_url
from latency_gate.measure.clients import burst, open_client, send_one, ssl_context_for
from latency_gate.measure.culprit import PROXY_OPTIONS
from latency_gate.measure.ready import wait_ready
from latency_gate.models import CallPhase, ErrorKind, Sample, StampSource

__all__ = [
    "FloorSamples",
    "Measurement",
    "MoreCalls",
    "Progress",
    "ProgressCallback",
    "Stage",
    "measure",
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


def _unreachable(samples: Sequence[Sample], target: Target) -> str | None:
    """Why to stop, when the cold call and the first FAIL_FAST_WARM warm calls all failed to
    connect or timed out; else None. Says which: a connection that failed is the endpoint's, or
    the proxy's when there is one; a call that timed out after connecting was not answered."""
    first = samples[: 1 + FAIL_FAST_WARM]
    if len(first) < 1 + FAIL_FAST_WARM or any(s.error not in UNREACHABLE for s in first):
        return None
    kinds = ", ".join(sorted({str(s.error) for s in first}))
    stopped = f"stopped after the first {len(first)} calls"
    if all(s.error in _CONNECTING for s in first):
        if target.proxy is not None:
            return (
                f"{stopped}: all failed to connect ({kinds}) to the proxy "
                f"{redact_url(target.proxy)}, so the endpoint was never asked ({PROXY_OPTIONS})"
            )
        return (
            f"{stopped}: all failed to connect ({kinds}): the endpoint is not reachable from here"
        )
    if not any(s.error in _CONNECTING for s in first):
        return (
            f"{stopped}: all timed out waiting for the answer ({kinds}); the endpoint took the "
            f"request but answered none within the {target.timeout:g} s --timeout: raise it if "
            "the endpoint is that slow"
        )
    return f"{stopped}: all failed to connect or timed out ({kinds})"


_CONNECTING = frozenset({ErrorKind.CONNECTION_REFUSED, ErrorKind.CONNECT_TIMEOUT, ErrorKind.DNS})


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
        into.samples.append(await send_one(client, target, CallPhase.COLD, 0))
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
        into.stopped_early = _unreachable(into.samples, target)
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
        into.samples.append(await send_one(client, target, CallPhase.WARM, index))
    if close:
        progress(Progress("warm", first + count, total))
