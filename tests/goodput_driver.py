"""Calls at a rate against a simulated endpoint, driven as the engine drives them: the shipped
RateRun (or OpenLevel) looked at on each arrival and each call's end, each level closed once its
calls ended. The endpoint: `slots` slots first come first served, each call taking `service`
seconds (a function of the call's position, for shapes the tests choose)."""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence

from result_factory import STARTED_AT, healthy_samples, make_result, make_target

from latency_gate.assess.compare.history import HistoryPlan, TargetHistory
from latency_gate.assess.load.per_second import RateRun, start_rates
from latency_gate.assess.result import assess_run
from latency_gate.config import Target
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.measure.arrivals import Arrival, LevelAsk, due_times
from latency_gate.measurement import Measurement
from latency_gate.models import CallPhase, Goodput, RunResult, Sample, StampSource

Service = Callable[[int], float]
DAY = 86_400.0
# The arrivals of the one-slot searches the tests read (0.25 s a call, a 1 s budget, from 1/s):
# drawn so that 1.68/s holds and 1.83/s and 2/s end near the budget above it, none broken.
ONE_SLOT_SEED = "driver6"


class Clocked(Arrival):
    """An arrival whose sample shows once the clock has passed its end."""

    def __init__(
        self, due: float, latency: float, index: int, clock: list[float], lag: float
    ) -> None:
        super().__init__(due)
        self.end = due + lag + latency
        self.clock = clock
        self.stored = Sample(
            phase=CallPhase.RATE,
            index=index,
            started_at=1_700_000_000.0 + due,
            ok=True,
            latency=latency,
            tokens=64,
            due=due,
            send_lag=lag,
        )

    @property
    def sample(self) -> Sample | None:
        return self.stored if self.end <= self.clock[0] else None

    @sample.setter
    def sample(self, value: Sample | None) -> None:
        pass


def queued(dues: Sequence[float], slots: int, service: Service) -> list[float]:
    free = [0.0] * slots
    latencies = []
    for index, due in enumerate(dues):
        start = max(due, heapq.heappop(free))
        end = start + service(index)
        heapq.heappush(free, end)
        latencies.append(end - due)
    return latencies


def drive(
    run: RateRun,
    slots: int,
    service: Service,
    *,
    seed: str = "driver",
    lag: Callable[[float], float] = lambda rate: 0.0,
) -> None:
    """Every level `run` asks for, against the simulated endpoint, until it stops."""
    rng = random.Random(seed)
    arrivals: list[Arrival] = []
    seconds = 0.0
    while (ask := run.next_level(arrivals, seconds, "")) is not None:
        dues = due_times(LevelAsk(ask.rate, ask.calls, ask.seconds, ask.arrivals), rng)
        latencies = queued(dues, slots, service)
        clock = [0.0]
        calls = [
            Clocked(d, lat, i, clock, lag(ask.rate))
            for i, (d, lat) in enumerate(zip(dues, latencies, strict=True))
        ]
        decided = math.inf
        for moment in sorted({*dues, *(c.end for c in calls)}):
            clock[0] = moment
            if run.look(calls, moment):
                decided = moment
                break
        made = [c for c in calls if c.due <= decided]
        clock[0] = math.inf
        arrivals = list(made)
        seconds = max(c.end for c in made) if made else 0.0


def goodput_target(**update: object) -> Target:
    """The report tests' target: the goodput searched against a 1 s concurrent p95 budget, with
    `update` (a rate to start from, a min-rate)."""
    target = make_target().model_copy(update={"goodput": True, **update})
    return target.model_copy(
        update={"budget": target.budget.model_copy(update={"max_concurrent_p95": 1.0})}
    )


def drive_one_slot(run: RateRun) -> None:
    """`drive` against the one-slot queue the tests read: 0.25 s a call, the arrivals of
    ONE_SLOT_SEED (from 1/s against a 1 s budget: 1.68/s held, 1.83/s and 2/s near)."""
    drive(run, 1, lambda _: 0.25, seed=ONE_SLOT_SEED)


def one_slot_search() -> Goodput:
    """The search from 1/s on one slot of 0.25 s a call against a 1 s budget (a figure of
    1.68/s, with 1.83/s and 2/s near the budget): what the report tests draw."""
    run = start_rates(goodput_target(rate=1.0), [], max_calls=20_000)
    drive_one_slot(run)
    return run.goodput()


def goodput_against_history(
    rates: Sequence[float | None], head: Goodput | None = None, **update: object
) -> RunResult:
    """This run's goodput search (`head`; by default `one_slot_search`'s, 1.68/s held, one slot
    of 0.25 s a call, a 1 s budget), its target a floor of 1/s and `update` (a regression
    policy), against earlier runs a day apart whose searches held `rates` (None: a run without
    one), as a nightly workflow's history holds them."""
    goodput = one_slot_search()
    target = goodput_target(min_rate=1.0, **update)
    earlier = [
        make_result().model_copy(
            update={
                "started_at": STARTED_AT - (len(rates) - i) * DAY,
                "goodput": None if rate is None else goodput.model_copy(update={"found": rate}),
            }
        )
        for i, rate in enumerate(rates)
    ]
    plan = HistoryPlan(
        ".latency-history",
        DEFAULT_LIMIT,
        targets={"local": TargetHistory(tuple(reversed(earlier)))},
    )
    return assess_run(
        target,
        Measurement(list(healthy_samples()), started_at=STARTED_AT),
        finished_at=STARTED_AT + 42.5,
        stamp_source=StampSource.KERNEL,
        goodput=goodput if head is None else head,
        history=plan,
    )
