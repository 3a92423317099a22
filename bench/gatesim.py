"""Simulated runs of the shipped gate: synthetic calls judged by latency_gate.assess, look by look.

A run here is what the engine does with the same `Gate` (latency_gate/assess/budget/gate.py): look 1
is 1 cold call, `warm_calls` sequential calls and one burst of `concurrency`; after each look
`Gate.look` says what to add, and at the end `judge_samples` (latency_gate/assess/result.py)
gives the checks, the baseline comparison and the verdict, exactly as `assess_run` puts them in
a result file. Only the endpoint is simulated: latencies drawn from a shape (lognormal, or the
recorded calls of a real server), with optional slow calls, failures, a burst-wide factor
(calls of one burst sharing the endpoint's load) and millisecond quantisation.

Everything is drawn from a random.Random the caller seeds, so a figure is reproducible.
"""

from __future__ import annotations

import functools
import json
import math
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from latency_gate.assess.budget.gate import Gate, plan_for  # noqa: E402
from latency_gate.assess.budget.sampling import SamplingPlan  # noqa: E402
from latency_gate.assess.compare.baseline import BaselinePlan  # noqa: E402
from latency_gate.assess.numbers import stats  # noqa: E402
from latency_gate.assess.result import judge_samples  # noqa: E402
from latency_gate.config import Budget  # noqa: E402
from latency_gate.config.plan.needs import effective_max_calls  # noqa: E402
from latency_gate.config.plan.search import DEFAULT_CAPACITY_MAX  # noqa: E402
from latency_gate.config.regression import RegressionLimit  # noqa: E402
from latency_gate.models import (  # noqa: E402
    BaselineCheck,
    CallPhase,
    Check,
    ErrorKind,
    Numbers,
    RunResult,
    Sample,
    StampSource,
    Verdict,
)

Z95 = 1.6448536269514722
SHAPE_FILE = ROOT / "bench" / "data" / "llama_shape.json"
# The same server recorded on a machine busy with other work (load average about 4 on 2 cores):
# the starved server's heavy tails, a shape real endpoints also have.
STARVED_SHAPE_FILE = ROOT / "bench" / "data" / "llama_shape_busy.json"

# --- shapes: the latency of one call, its p95 scaled to a given value --------------------------


@dataclass(frozen=True)
class Lognormal:
    """Lognormal latencies: `sigma` is the spread of their logarithm (p95 = 1.64 sigma above the
    median in log space)."""

    sigma: float

    @property
    def label(self) -> str:
        return f"lognormal sigma {self.sigma:g}"

    def draw(self, rng: random.Random, p95: float) -> float:
        return p95 * math.exp(self.sigma * (rng.gauss(0.0, 1.0) - Z95))

    def share_over(self, multiple: float) -> float:
        """The share of calls over the budget when the true p95 is `multiple` x the budget."""
        return 1.0 - statistics.NormalDist().cdf(Z95 - math.log(multiple) / self.sigma)


@dataclass(frozen=True)
class Recorded:
    """Latencies recorded from a real server (bench/data/llama_shape.json), drawn at random and
    scaled so that their p95 is the one asked for."""

    name: str
    values: tuple[float, ...]

    @property
    def label(self) -> str:
        return self.name

    @functools.cached_property
    def p95(self) -> float:
        ordered = sorted(self.values)
        return ordered[math.ceil(0.95 * len(ordered)) - 1]

    def draw(self, rng: random.Random, p95: float) -> float:
        return self.values[rng.randrange(len(self.values))] * p95 / self.p95

    def share_over(self, multiple: float) -> float:
        """The share of calls over the budget when the true p95 is `multiple` x the budget."""
        return sum(v * multiple > self.p95 for v in self.values) / len(self.values)


@dataclass(frozen=True)
class Pareto:
    """Pareto latencies with tail index `alpha`: P(X > x) = (x_m / x)^alpha above the minimum
    x_m (alpha 2.5: a tail heavier than any lognormal's far out)."""

    alpha: float

    @property
    def label(self) -> str:
        return f"Pareto alpha {self.alpha:g}"

    def draw(self, rng: random.Random, p95: float) -> float:
        least: float = p95 * 0.05 ** (1 / self.alpha)
        return least * math.pow(1.0 - rng.random(), -1 / self.alpha)

    def share_over(self, multiple: float) -> float:
        """The share of calls over the budget when the true p95 is `multiple` x the budget."""
        return min(1.0, 0.05 * math.pow(multiple, self.alpha))


Shape = Lognormal | Recorded | Pareto


def recorded(kind: str, *, starved: bool = False) -> Recorded:
    """The llama.cpp test server's recorded latencies of one kind: "warm" or "concurrent"
    (`starved`: recorded on a busy machine)."""
    path = STARVED_SHAPE_FILE if starved else SHAPE_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    name = "llama.cpp starved" if starved else "llama.cpp"
    return Recorded(f"{name}, {kind}", tuple(data[kind]))


# --- the endpoint ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """Where the simulated calls come from.

    `warm` and `concurrent`: the shapes of the two kinds of call, each scaled so that its true
    p95 is `multiple` x `budget`. A share `slow_share` of calls is `slow_factor` x slower; a
    share `fail_rate` of calls fails, in clumps of `fail_clump` calls in a row (1: each call on
    its own; a clump starts at a call with the probability that makes the share `fail_rate`);
    every call of a burst is multiplied by one factor exp(N(0, burst_tau)) (the p95 stays
    `multiple` x budget over all calls: the shape is narrowed to make room, see `_marginal`);
    `quantum` rounds latencies up to whole units (0.001: milliseconds); `scale` multiplies
    every call (drift between runs, a slower head).
    """

    warm: Shape
    concurrent: Shape
    multiple: float = 0.5
    budget: float = 3.0
    slow_share: float = 0.0
    slow_factor: float = 1.0
    fail_rate: float = 0.0
    fail_clump: float = 1
    burst_tau: float = 0.0
    quantum: float = 0.0
    scale: float = 1.0

    def latency(self, rng: random.Random, shape: Shape, factor: float = 1.0) -> float:
        value = shape.draw(rng, self.multiple * self.budget) * self.scale * factor
        if self.slow_share and rng.random() < self.slow_share:
            value *= self.slow_factor
        if self.quantum:
            value = math.ceil(value / self.quantum) * self.quantum
        return value

    def fails(self, rng: random.Random, calls: Calls) -> bool:
        """Does the next call fail: inside a clump, or starting one."""
        if calls.failing > 0:
            calls.failing -= 1
            return True
        if not self.fail_rate:
            return False
        length = self.fail_clump
        start = self.fail_rate / (length * (1 - self.fail_rate) + self.fail_rate)
        if rng.random() < start:
            calls.failing = round(length) - 1
            return True
        return False


def lognormal(sigma: float, **fields: float) -> Endpoint:
    """An endpoint whose warm and concurrent calls are both lognormal with this sigma."""
    return Endpoint(Lognormal(sigma), Lognormal(sigma), **fields)


def pareto(alpha: float, **fields: float) -> Endpoint:
    """An endpoint whose warm and concurrent calls are both Pareto with this tail index."""
    return Endpoint(Pareto(alpha), Pareto(alpha), **fields)


def llama(**fields: float) -> Endpoint:
    """An endpoint shaped like the llama.cpp test server, warm and concurrent calls apart."""
    return Endpoint(recorded("warm"), recorded("concurrent"), **fields)


def llama_starved(**fields: float) -> Endpoint:
    """The llama.cpp test server recorded on a busy machine: heavy, irregular tails."""
    return Endpoint(recorded("warm", starved=True), recorded("concurrent", starved=True), **fields)


@functools.lru_cache(maxsize=64)
def _marginal(shape: Shape, tau: float) -> float:
    """The p95 of shape x exp(N(0, tau)) over calls, for a shape whose own p95 is 1: a burst-wide
    factor widens the spread, so the shape is scaled by 1 / this to keep the p95 asked for."""
    if tau == 0:
        return 1.0
    if isinstance(shape, Lognormal):
        wide = math.sqrt(shape.sigma**2 + tau**2)
        return math.exp(Z95 * (wide - shape.sigma))
    rng = random.Random(f"marginal/{shape.label}/{tau}")
    draws = sorted(shape.draw(rng, 1.0) * math.exp(rng.gauss(0.0, tau)) for _ in range(200_000))
    return draws[math.ceil(0.95 * len(draws)) - 1]


# --- a run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """What moves the endpoint during and between runs, for every arm alike: each run draws one
    factor exp(N(0, tau)) for all its calls, and from its `step_at`-th call on (counting the
    calls of both arms) every call is `step` x slower."""

    tau: float = 0.0
    step_at: int | None = None
    step: float = 1.5

    def run_factor(self, rng: random.Random) -> float:
        return math.exp(rng.gauss(0.0, self.tau)) if self.tau else 1.0


@dataclass
class Clock:
    """The calls made so far in a run, over every arm, and the run's drift."""

    drift: Drift = field(default_factory=Drift)
    factor: float = 1.0
    position: int = 0

    def next(self) -> float:
        """The factor of the next call."""
        step = (
            self.drift.step
            if self.drift.step_at is not None and (self.position >= self.drift.step_at)
            else 1.0
        )
        self.position += 1
        return self.factor * step


@dataclass
class Calls:
    """The calls of a run so far, as the engine's Measurement holds them."""

    samples: list[Sample] = field(default_factory=list)
    counts: dict[CallPhase, int] = field(default_factory=dict)
    clock: Clock = field(default_factory=Clock)
    failing: int = 0  # calls left in the clump of failures under way

    def add(self, phase: CallPhase, latency: float | None) -> None:
        index = self.counts.get(phase, 0)
        self.counts[phase] = index + 1
        ok = latency is not None
        self.samples.append(
            Sample.model_construct(
                phase=phase,
                index=index,
                started_at=0.0,
                ok=ok,
                latency=latency,
                error=None if ok else ErrorKind.HTTP_5XX,
                status=200 if ok else 503,
            )
        )


def _take(endpoint: Endpoint, rng: random.Random, calls: Calls, phase: CallPhase) -> None:
    shape = endpoint.concurrent if phase is CallPhase.CONCURRENT else endpoint.warm
    latency: float | None = endpoint.latency(rng, shape, calls.clock.next())
    if endpoint.fails(rng, calls):
        latency = None
    calls.add(phase, latency)


def _burst(endpoint: Endpoint, rng: random.Random, calls: Calls, size: int) -> None:
    tau = endpoint.burst_tau
    factor = math.exp(rng.gauss(0.0, tau)) / _marginal(endpoint.concurrent, tau) if tau else 1.0
    for _ in range(size):
        latency: float | None = endpoint.latency(
            rng, endpoint.concurrent, factor * calls.clock.next()
        )
        if endpoint.fails(rng, calls):
            latency = None
        calls.add(CallPhase.CONCURRENT, latency)


@dataclass(frozen=True)
class Settings:
    """What the user set: the budget, counts, cap and policies (the Target's fields)."""

    budget: Budget = field(default_factory=Budget)
    warm_calls: int = 20
    concurrency: int = 10
    max_calls: int | None = None  # None: auto, as the Target's default
    on_undecided: str = "estimate"
    on_undecided_regression: str = "pass"
    limit: RegressionLimit = field(default_factory=lambda: RegressionLimit(relative=0.10))


@dataclass(frozen=True)
class Outcome:
    """One simulated run: its checks by number, baseline comparison, verdict, calls and looks."""

    checks: dict[str, Check]
    baseline: BaselineCheck | None
    verdict: Verdict
    samples: tuple[Sample, ...]
    numbers: Numbers
    looks: int
    first_look: Numbers
    stopped: str = ""  # why sampling stopped, as the result's sampling line says it

    @property
    def calls(self) -> int:
        return len(self.samples)

    def failed(self, number: str) -> bool:
        """The number's check did not pass (FAILed, by its test or by the policy)."""
        return self.checks[number].passed is False

    def regressed(self, number: str) -> bool:
        if self.baseline is None:
            return False
        return any(d.number == number and d.regressed for d in self.baseline.deltas)

    def regression_outcome(self, number: str) -> str | None:
        if self.baseline is None:
            return None
        return next((d.outcome for d in self.baseline.deltas if d.number == number), None)


def _as_result(samples: Sequence[Sample]) -> RunResult:
    """A base run as `--baseline` reads it: its samples and numbers (nothing else is used)."""
    return RunResult.model_construct(
        tool_version="sim",
        target="sim",
        config={},
        started_at=0.0,
        finished_at=0.0,
        stamp_source=StampSource.KERNEL,
        samples=tuple(samples),
        numbers=stats.numbers(samples),
        excluded_from_latency=0,
        verdict=Verdict(passed=True, checks=()),
    )


def _plan(settings: Settings) -> SamplingPlan:
    """The sampling plan a target of these settings runs under (its cap sized as the edges do)."""
    return plan_for(
        max_calls=effective_max_calls(_PlanView(settings)),
        concurrency=settings.concurrency,
        on_undecided=settings.on_undecided,
        on_undecided_regression=settings.on_undecided_regression,
    )


def run(
    endpoint: Endpoint,
    rng: random.Random,
    settings: Settings = Settings(),
    *,
    base: Sequence[Sample] | None = None,
    drift: Drift = Drift(),
) -> Outcome:
    """One run of the gate against `endpoint`, judged against `base`'s calls when given (one
    earlier run, `--baseline`), with `drift` moving the endpoint during the run."""
    plan = _plan(settings)
    base_result = None if base is None else _as_result(base)
    gate = Gate(
        budget=settings.budget,
        plan=plan,
        base=base_result,
        limit=None if base is None else settings.limit,
    )
    calls = Calls(clock=Clock(drift, drift.run_factor(rng)))
    _take(endpoint, rng, calls, CallPhase.COLD)
    for _ in range(settings.warm_calls):
        _take(endpoint, rng, calls, CallPhase.WARM)
    _burst(endpoint, rng, calls, settings.concurrency)
    first_look = stats.numbers(calls.samples)
    while not (step := gate.look(calls.samples)).stop:
        for _ in range(step.warm_calls):
            _take(endpoint, rng, calls, CallPhase.WARM)
        for _ in range(step.bursts):
            _burst(endpoint, rng, calls, settings.concurrency)
    numbers = stats.numbers(calls.samples)
    baseline = (
        None
        if base_result is None
        else BaselinePlan("simulated base", settings.limit, {"sim": base_result})
    )
    checks, check, verdict = judge_samples(
        gate, calls.samples, numbers, target="sim", baseline=baseline
    )
    return Outcome(
        checks={c.number: c for c in checks},
        baseline=check,
        verdict=verdict,
        samples=tuple(calls.samples),
        numbers=numbers,
        looks=gate.looks,
        first_look=first_look,
        stopped=gate.stopped,
    )


@dataclass(frozen=True)
class _PlanView:
    """The fields of a Target that config.plan reads, from Settings."""

    settings: Settings

    @property
    def budget(self) -> Budget:
        return self.settings.budget

    @property
    def warm_calls(self) -> int:
        return self.settings.warm_calls

    @property
    def concurrency(self) -> int:
        return self.settings.concurrency

    @property
    def max_calls(self) -> int | None:
        return self.settings.max_calls

    @property
    def on_undecided(self) -> str:
        return self.settings.on_undecided

    @property
    def capacity(self) -> bool:
        return False  # the gate's own runs: the capacity search is bench/capacitysim.py's

    @property
    def capacity_max(self) -> int:
        return DEFAULT_CAPACITY_MAX


def rng_for(table: str, cell: int, run: int) -> random.Random:
    """The generator of one simulated run, fixed by (table, cell, run)."""
    return random.Random(f"{table}/{cell}/{run}")


def percentile_true(endpoint: Endpoint, kind: str, q: float, draws: int = 100_000) -> float:
    """The true q-th percentile of one kind of call, by Monte Carlo (fixed seed)."""
    rng = random.Random(f"true/{kind}/{q}")
    calls = Calls()
    values: list[float] = []
    for _ in range(draws // 10):
        if kind == "concurrent":
            before = len(calls.samples)
            _burst(replace(endpoint, fail_rate=0.0), rng, calls, 10)
            values += [s.latency or 0.0 for s in calls.samples[before:]]
        else:
            values += [endpoint.latency(rng, endpoint.warm) for _ in range(10)]
    values.sort()
    position = (len(values) - 1) * q / 100
    low = math.floor(position)
    return values[low] + (position - low) * (values[min(low + 1, len(values) - 1)] - values[low])


def thue_morse(position: int) -> int:
    """The engine's order of the two arms (measure/engine.py `arm_order`): 0110 1001 ..."""
    return bin(position).count("1") % 2


def run_ab(
    head: Endpoint,
    base: Endpoint,
    rng: random.Random,
    settings: Settings = Settings(),
    *,
    drift: Drift = Drift(),
) -> Outcome:
    """One A/B run (`--baseline-url`): the base endpoint measured beside the head, calls of the
    two arms in the engine's Thue-Morse order, each look extending both arms alike, the drift
    shared by both (one run factor, and a step at a call position counting both arms)."""
    gate = Gate(budget=settings.budget, plan=_plan(settings), base=None, limit=settings.limit)
    clock = Clock(drift, drift.run_factor(rng))
    arms = (Calls(clock=clock), Calls(clock=clock))
    endpoints = (head, base)
    warm_done = bursts_done = 0

    def warm(count: int) -> None:
        nonlocal warm_done
        for _ in range(count * 2):
            arm = thue_morse(warm_done)
            _take(endpoints[arm], rng, arms[arm], CallPhase.WARM)
            warm_done += 1

    def bursts(count: int) -> None:
        nonlocal bursts_done
        for _ in range(count * 2):
            arm = thue_morse(bursts_done)
            _burst(endpoints[arm], rng, arms[arm], settings.concurrency)
            bursts_done += 1

    for arm in (0, 1):
        _take(endpoints[arm], rng, arms[arm], CallPhase.COLD)
    warm(settings.warm_calls)
    bursts(1)
    first_look = stats.numbers(arms[0].samples)
    while not (step := gate.look(arms[0].samples, arms[1].samples)).stop:
        warm(step.warm_calls)
        bursts(step.bursts)
    numbers = stats.numbers(arms[0].samples)
    checks, check, verdict = judge_samples(
        gate,
        arms[0].samples,
        numbers,
        target="sim",
        baseline=None,
        base_arm=("the base arm", tuple(arms[1].samples)),
    )
    return Outcome(
        checks={c.number: c for c in checks},
        baseline=check,
        verdict=verdict,
        samples=tuple(arms[0].samples),
        numbers=numbers,
        looks=gate.looks,
        first_look=first_look,
        stopped=gate.stopped,
    )
