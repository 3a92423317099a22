"""Calls at a rate: open-loop arrivals (`--rate`, `--goodput`), one level at a time.

A level asks for `rate` calls a second for at most `calls` calls and `seconds` of arrivals:
each call is due at its moment (Poisson gaps by default, even ones with `constant`) whether or
not the calls before it have ended, as independent users' requests are. Every call has a small
client of its own with one connection, opened ahead of the moment it is due (untimed, as the
burst's are; inside the call with --fresh-connections), and closed as its answer ends; its
stamps are the engine's (the kernel's receive time where the platform gives it). Its sample
says how late the client sent it (`send_lag`: its t0 less the moment it was due), so a latency
can be counted from when the call was due (a client that falls behind shows as latency, not as
a lower rate), and a client that fell behind can be told from an endpoint that did.

Nothing here judges: after each arrival and each call's end the caller's `RateSampler.look`
says whether the level is decided (then no further call is sent, and the calls in flight are
waited for), and `RateSampler.next` says what the next level is from the last one's calls
(latency_gate.run asks latency_gate.assess.load.per_second).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from latency_gate.measure.clients import ClientKit
from latency_gate.measure.sampler import Sampler
from latency_gate.models import CallPhase, Sample

__all__ = ["Arrival", "Level", "LevelAsk", "RateSampler", "due_times", "run_levels"]

# At most this long before a call is due its connection is opened (untimed): three times the
# cold call's own connection set-up, and never less than LEAD_LEAST.
LEAD_LEAST = 0.05
LEAD_MOST = 1.0


@dataclass
class Arrival:
    """One call of a level: when it was due (seconds from the level's start) and, once it has
    ended, its sample."""

    due: float
    sample: Sample | None = None


@dataclass(frozen=True)
class LevelAsk:
    """What one level measures: `rate` calls a second (`arrivals`: poisson or constant), at most
    `calls` calls and `seconds` of arrivals, at most `in_flight` calls at once."""

    rate: float
    calls: int
    seconds: float
    arrivals: str = "poisson"
    in_flight: int = 256


@dataclass(frozen=True)
class Level:
    """One level as it went: its calls, its seconds, and why the engine cut it short ("" when
    it did not). The first time a sampler is asked there is none: no calls."""

    arrivals: Sequence[Arrival] = ()
    seconds: float = 0.0
    cut: str = ""


class RateSampler(Sampler[Level, LevelAsk], Protocol):
    """The caller's side of the levels (latency_gate.run wires it to assess): `next` is the
    next level, from the last one (the first, from none); None: no further level."""

    def look(self, arrivals: Sequence[Arrival], now: float) -> bool:
        """Whether the level in progress is decided, given its calls so far at `now` (seconds
        from its start): True stops its arrivals."""


def due_times(ask: LevelAsk, rng: random.Random) -> list[float]:
    """The moments the level's calls are due, from its start: the first at 0, then gaps of
    1 / rate (constant) or drawn from the exponential law of mean 1 / rate (poisson)."""
    times: list[float] = []
    due = 0.0
    while len(times) < ask.calls and due <= ask.seconds:
        times.append(due)
        due += 1.0 / ask.rate if ask.arrivals == "constant" else rng.expovariate(ask.rate)
    return times


def _lead(samples: Sequence[Sample]) -> float:
    """How early to open a call's connection: three times the first call's own set-up (DNS,
    TCP, TLS), between LEAD_LEAST and LEAD_MOST."""
    first = samples[0].timings if samples else None
    setup = 0.0 if first is None else sum(t or 0.0 for t in (first.dns, first.connect, first.tls))
    return min(max(3 * setup, LEAD_LEAST), LEAD_MOST)


async def run_levels(
    kit: ClientKit,
    policy: RateSampler,
    *,
    earlier: Sequence[Sample] = (),
    rng: random.Random | None = None,
) -> None:
    """The levels `policy` asks for, one after another, each waited for to its last call.
    `earlier`: the run's own calls (the cold call's set-up sets how early connections open)."""
    rng = rng or random.Random()
    lead = _lead(earlier)
    arrivals: list[Arrival] = []
    seconds, cut = 0.0, ""
    while (ask := policy.next(Level(arrivals, seconds, cut))) is not None:
        arrivals = []
        seconds, cut = await _level(kit, policy, ask, arrivals=arrivals, lead=lead, rng=rng)


async def _level(
    kit: ClientKit,
    policy: RateSampler,
    ask: LevelAsk,
    *,
    arrivals: list[Arrival],
    lead: float,
    rng: random.Random,
) -> tuple[float, str]:
    """One level: its calls, each due at its moment, until `policy.look` says it is decided or
    its calls or seconds run out; then the calls in flight to their end. (seconds, cut)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    start_ns = time.time_ns()
    decided = asyncio.Event()
    tasks: list[tuple[Arrival, asyncio.Task[None]]] = []
    cut = ""

    def now() -> float:
        return loop.time() - start

    async def one(arrival: Arrival, index: int) -> None:
        async with kit.client() as (client, backend):
            if not kit.target.fresh_connections:
                await kit.preconnect(backend, 1)
            await asyncio.sleep(max(start + arrival.due - loop.time(), 0.0))
            due_ns = start_ns + round(arrival.due * 1e9)
            sample = await kit.send(client, CallPhase.RATE, index, due_ns=due_ns)
        arrival.sample = sample.model_copy(update={"due": arrival.due})
        if not decided.is_set() and policy.look(arrivals, now()):
            decided.set()

    try:
        for index, due in enumerate(due_times(ask, rng)):
            wait = start + due - lead - loop.time()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(decided.wait(), wait)
            if decided.is_set():
                break
            if sum(not task.done() for _, task in tasks) >= ask.in_flight:
                cut = f"more than {ask.in_flight} calls were in flight at once"
                break
            arrival = Arrival(due)
            arrivals.append(arrival)
            tasks.append((arrival, asyncio.create_task(one(arrival, index))))
            if policy.look(arrivals, now()):
                decided.set()
        # Calls not yet due when the level was decided are not made.
        for arrival, task in tasks:
            if arrival.due > now() and not task.done():
                task.cancel()
        outcomes = await asyncio.gather(*(task for _, task in tasks), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome  # the machine's own limit (MachineLimitError), or a bug
        arrivals[:] = [arrival for arrival, task in tasks if not task.cancelled()]
    finally:
        for _, task in tasks:
            task.cancel()
        await asyncio.gather(*(task for _, task in tasks), return_exceptions=True)
    return now(), cut
