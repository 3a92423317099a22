"""The engine: idle wait, cold call, warm calls, concurrent burst, and more when asked -> samples.

I/O only: every call is one `latency_gate.measure.calls.call`, timed and classified there, and
lands in a `Measurement` the caller holds, so the calls finished before a cancellation are kept.
Nothing here judges: what to measure beyond the first look is the caller's `more` sampler
(measure/sampler.py; latency_gate.run asks latency_gate.assess). The clients it calls through
are in clients.py, the wait for a starting server in ready.py.

The capacity search (`--capacity`) comes after the looks: the caller's `search` sampler says the
concurrency of each next burst from the calls of the one before (latency_gate.run asks
latency_gate.assess.load.at_once), and the engine makes it with the same burst machinery at that
concurrency (one small client per call, connections opened ahead). Its calls are the search's:
they go to the sampler, not into `Measurement.samples`. In an A/B run only the head is searched.

A/B in one run (a target with a `baseline_url`): the base is a second arm, measured the same
way and interleaved with the head, one call at a time: the cold calls head then base, each on
its own new connection; the warm calls in the Thue-Morse order (ABBA BAAB BAAB ABBA ...), each
arm on its own kept-alive connection; the bursts in the same order, each of the full
concurrency and never overlapping. A `more` step applies to each arm. docs/design.md, "A/B in
one run", says why this order.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import httpx

from latency_gate.config import Target, base_arm, redact_url
from latency_gate.measure.arrivals import Arrival, Level, LevelAsk, RateSampler, run_levels
from latency_gate.measure.clients import ClientKit
from latency_gate.measure.culprit import PROXY_OPTIONS
from latency_gate.measure.deadline import Deadline
from latency_gate.measure.failures import failed_hop
from latency_gate.measure.prompts import Marks
from latency_gate.measure.ready import wait_ready
from latency_gate.measure.sampler import Burst, Sampler
from latency_gate.measurement import FloorSamples, Measurement, MoreCalls
from latency_gate.models import CallPhase, ErrorKind, Sample

__all__ = [
    "FloorSamples",
    "Measurement",
    "MoreCalls",
    "Progress",
    "ProgressCallback",
    "RateSampler",
    "Stage",
    "arm_order",
    "measure",
]

Stage = Literal["floor", "ready", "idle", "cold", "warm", "concurrent", "capacity", "rate", "done"]


@dataclass(frozen=True)
class Progress:
    """Where a run is, for a progress line. `done` of `total` calls in `stage`."""

    stage: Stage
    done: int = 0
    total: int = 0
    seconds: float = 0.0
    rate: float = 0.0  # stage "rate": requests a second


ProgressCallback = Callable[[Progress], None]


def _ignore(_: Progress) -> None:
    return None


# Asked after each look with the samples so far: what to measure next, or None to stop.
LookSampler = Sampler[Sequence[Sample], MoreCalls]
# The capacity search, asked after the looks and after each of its bursts with that burst (none
# the first time): the concurrency of the next burst, or None.
SearchSampler = Sampler[Burst, int]


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


def _unreachable(
    samples: Sequence[Sample], target: Target, of: str = "", who: str = "the endpoint"
) -> str | None:
    """Why to stop, when the cold call and the first FAIL_FAST_WARM warm calls all failed to
    connect or timed out; else None. Says which: a connection that failed is the endpoint's, or
    the proxy's when there is one; a call that timed out after connecting was not answered.
    `of` names the arm of an A/B run in "the first 3 calls of the base", `who` the endpoint
    that failed, `target` that arm's settings."""
    first = samples[: 1 + FAIL_FAST_WARM]
    if len(first) < 1 + FAIL_FAST_WARM or any(s.error not in UNREACHABLE for s in first):
        return None
    kinds = ", ".join(sorted({str(s.error) for s in first}))
    stopped = f"stopped after the first {len(first)} calls{of}"
    if all(s.error in _CONNECTING for s in first):
        hops = {failed_hop(s.error_detail) for s in first}
        if len(hops) == 1 and (hop := hops.pop()) is not None:
            # The endpoint answered each call: a followed redirect's target failed them.
            return f"{stopped}: all failed to connect ({kinds}): {hop}"
        if target.proxy is not None:
            return (
                f"{stopped}: all failed to connect ({kinds}) to the proxy "
                f"{redact_url(target.proxy)}, so {who} was never asked ({PROXY_OPTIONS})"
            )
        return f"{stopped}: all failed to connect ({kinds}): {who} is not reachable from here"
    if not any(s.error in _CONNECTING for s in first):
        return (
            f"{stopped}: all timed out waiting for the answer ({kinds}); {who} took the "
            f"request but answered none within the {target.timeout:g} s --timeout: raise it if "
            f"{who} is that slow"
        )
    return f"{stopped}: all failed to connect or timed out ({kinds})"


_CONNECTING = frozenset({ErrorKind.CONNECTION_REFUSED, ErrorKind.CONNECT_TIMEOUT, ErrorKind.DNS})


def arm_order(position: int, arms: int = 2) -> int:
    """Which arm makes call `position` (from 0) of a kind: always 0 with one arm; with two,
    the Thue-Morse sequence 0110 1001 1001 0110 ... (ABBA BAAB ...).

    Every aligned pair holds one call of each arm, so any even number of calls from an even
    position is balanced; a linear drift cancels over every aligned block of 4 and a quadratic
    one over every block of 8; no arm makes three calls in a row.
    """
    return 0 if arms == 1 else bin(position).count("1") % 2


@dataclass
class _Arm:
    """One endpoint of a run and where its samples go: the head alone, or head or base of an
    A/B run. `of` names it in messages (empty for a run of one arm)."""

    kit: ClientKit
    samples: list[Sample]
    of: str = ""
    client: httpx.AsyncClient | None = None
    warm_done: int = 0
    marks: Marks = field(default_factory=Marks)

    async def one(self, phase: CallPhase, index: int) -> None:
        if self.client is None:  # opened by measure() before any call
            raise RuntimeError("the arm's client is not open")
        self.samples.append(await self.kit.send(self.client, phase, index, self.marks))


def _arms(target: Target, into: Measurement, kernel_stamps: bool) -> list[_Arm]:
    """The head, and the base of an A/B run, each with its client kit; the two share the run's
    marks, so the i-th call of a kind gets the same prompt on both (docs/design.md, "A/B in one
    run")."""
    marks = Marks()
    head = _Arm(ClientKit(target, kernel_stamps), into.samples, marks=marks)
    if target.baseline_url is None:
        return [head]
    base = ClientKit(base_arm(target), kernel_stamps)
    head.of = " of the head"
    return [head, _Arm(base, into.base_samples, " of the base", marks=marks)]


async def measure(
    target: Target,
    into: Measurement,
    *,
    progress: ProgressCallback = _ignore,
    kernel_stamps: bool = True,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    more: LookSampler | None = None,
    search: SearchSampler | None = None,
    rates: RateSampler | None = None,
) -> None:
    """Idle wait, cold call, warm calls, one burst; then what `more` asks for, until it says stop;
    then the bursts `search` asks for, until it says stop; then the levels at a rate `rates`
    asks for (measure/arrivals.py), head alone.

    With a `baseline_url`, the base is measured alike, interleaved (into `into.base_samples`),
    and each `more` step applies to both; `search` bursts go to the head alone. Never raises for
    endpoint trouble: every failure is a sample with its ErrorKind. A cancellation propagates;
    the calls finished by then are in `into.samples` (and `into.base_samples`).
    """
    arms = _arms(target, into, kernel_stamps)
    if target.wait_ready > 0:
        progress(Progress("ready", 0, 1, target.wait_ready))
        into.ready_after = await wait_ready(arms[0].kit, sleep=sleep)
        if len(arms) > 1:
            into.base_ready_after = await wait_ready(arms[1].kit, sleep=sleep)
    if target.idle > 0:
        progress(Progress("idle", 0, 1, target.idle))
        await sleep(target.idle)

    async with contextlib.AsyncExitStack() as clients:
        for arm in arms:
            arm.client, _ = await clients.enter_async_context(arm.kit.client())
        progress(Progress("cold", 0, len(arms)))
        deadline = Deadline(target.max_time)
        deadline.start()
        for done, arm in enumerate(arms, start=1):
            await arm.one(CallPhase.COLD, 0)
            progress(Progress("cold", done, len(arms)))
        # Warm calls reuse each arm's cold client: its connection is the one kept alive.
        first_look = min(FAIL_FAST_WARM, target.warm_calls)
        total = target.warm_calls * len(arms)
        await _warm(
            arms,
            progress,
            first=0,
            count=first_look,
            total=total,
            close=False,
            may=deadline.allows,
        )
        into.stopped_early = _unreachable(arms[0].samples, arms[0].kit.target, arms[0].of)
        if into.stopped_early is not None:
            progress(Progress("done", len(into.samples), len(into.samples)))
            return
        if len(arms) > 1:
            # A base that cannot be reached stops being measured; the head goes on alone, for
            # the budget judges the head alone (the comparison then says it had nothing).
            base = arms[1]
            who = f"the base ({redact_url(base.kit.target.url)})"
            why = _unreachable(base.samples, base.kit.target, base.of, who)
            if why is not None:
                into.base_stopped_early = f"{why}; the head was measured alone"
                arms = arms[:1]
        await _warm(
            arms,
            progress,
            first=first_look * len(arms),
            count=target.warm_calls - first_look,
            total=total,
            may=deadline.allows_before_burst,
        )
        bursts = 0
        for _ in arms:
            if not deadline.allows():
                break
            arm = arms[arm_order(bursts, len(arms))]
            bursts += 1
            progress(Progress("concurrent", 0, target.concurrency))
            await arm.kit.burst(arm.samples, marks=arm.marks)
            progress(Progress("concurrent", target.concurrency, target.concurrency))
        while more is not None and deadline.allows() and (step := more.next(into.samples)):
            into.extra.append(step)
            if step.warm_calls:
                done = sum(arm.warm_done for arm in arms)
                await _warm(arms, progress, first=done, count=step.warm_calls, may=deadline.allows)
            for _ in range(step.bursts * len(arms)):
                if not deadline.allows():
                    break
                arm = arms[arm_order(bursts, len(arms))]
                bursts += 1
                done = sum(s.phase is CallPhase.CONCURRENT for s in arm.samples)
                progress(Progress("concurrent", done, done + target.concurrency))
                await arm.kit.burst(arm.samples, first_index=done, marks=arm.marks)
    into.time_up = deadline.passed
    if search is not None and deadline.allows():
        # After the warm clients are closed: their kept-alive connections would hold what a
        # server gives each connection (a thread, in llama.cpp's) through the search's bursts.
        await _search(arms[0].kit, search, progress, deadline)
    if rates is not None and deadline.allows():
        await run_levels(arms[0].kit, _Announced(rates, progress), earlier=into.samples)
    into.time_up = deadline.passed
    progress(Progress("done", len(into.samples), len(into.samples)))


@dataclass
class _Announced:
    """The caller's rate policy, with a progress line as each level begins."""

    policy: RateSampler
    progress: ProgressCallback

    def next(self, level: Level, /) -> LevelAsk | None:
        ask = self.policy.next(level)
        if ask is not None:
            self.progress(Progress("rate", 0, ask.calls, ask.seconds, ask.rate))
        return ask

    def look(self, arrivals: Sequence[Arrival], now: float) -> bool:
        return self.policy.look(arrivals, now)


async def _search(
    kit: ClientKit, search: SearchSampler, progress: ProgressCallback, deadline: Deadline
) -> None:
    """The capacity search's bursts, each at the concurrency `search` asks for, until it says
    stop; each burst's calls and seconds (connections opened ahead included) go back to it."""
    calls: list[Sample] = []
    seconds = 0.0
    while (concurrency := search.next(Burst(calls, seconds))) is not None and deadline.allows():
        calls = []
        progress(Progress("capacity", 0, concurrency))
        began = time.monotonic()
        await kit.burst(calls, concurrency=concurrency, marks=Marks())
        seconds = time.monotonic() - began
        progress(Progress("capacity", len(calls), concurrency))


async def _warm(
    arms: Sequence[_Arm],
    progress: ProgressCallback,
    *,
    first: int,
    count: int,
    total: int | None = None,
    close: bool = True,
    may: Callable[[], bool] | None = None,
) -> None:
    """`count` warm calls of each arm, interleaved (`arm_order`) from position `first` (the
    warm calls of every arm so far), counted in progress out of `total` (default: up to the
    last of these); `close` reports the last one done. `may` says whether the next may start
    (--max-time); the first it refuses ends them."""
    end = first + count * len(arms)
    total = end if total is None else total
    for position in range(first, end):
        if may is not None and not may():
            break
        arm = arms[arm_order(position, len(arms))]
        progress(Progress("warm", position, total))
        await arm.one(CallPhase.WARM, arm.warm_done)
        arm.warm_done += 1
    if close:
        progress(Progress("warm", end, total))
