"""The gate's own floor: calls to a loopback server that answers at once, before probing.

Takes a few milliseconds. Its samples tell readers what the numbers can resolve on this machine
(latency_gate.assess.result turns them into the `Floor` the reports show).
"""

from __future__ import annotations

from latency_gate.config import Target
from latency_gate.measure.calls import call
from latency_gate.measure.clients import ClientKit
from latency_gate.measure.engine import FloorSamples
from latency_gate.measure.floor_server import FloorServer
from latency_gate.models import CallPhase, Sample

__all__ = ["measure_floor"]


async def measure_floor(*, concurrency: int, kernel_stamps: bool) -> FloorSamples:
    """Five sequential calls and a burst of `concurrency` calls against a loopback server."""
    async with FloorServer() as server:
        target = Target(
            name="floor", url=server.url, warm_calls=5, concurrency=concurrency, timeout=5.0
        )
        kit = ClientKit(target, kernel_stamps)
        async with kit.client() as (client, backend):
            sequential = [
                await call(client, target, CallPhase.WARM, i) for i in range(target.warm_calls)
            ]
        concurrent: list[Sample] = []
        await kit.burst(concurrent)
    return FloorSamples(tuple(sequential), tuple(concurrent), concurrency, backend.source)
