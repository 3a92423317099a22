"""One run, shared by the edges (cli and action): targets probed (against a baseline read by
results/loading.py), results out.

The data flows one way: config (a Target) -> measure (samples) -> assess (numbers, verdict) ->
report. `probe` is that path for one target, and the library's entry point; `probe_all` is what
the CLI and the action run, with the interrupt policy: a cancelled run (SIGINT, SIGTERM) keeps
the calls finished so far in a result marked interrupted and probes no further target. This
module and the two edges are the only ones that choose exit codes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from latency_gate.config import Target
from latency_gate.config.plan.levels import RATE_IN_FLIGHT
from latency_gate.config.regression import RegressionLimit
from latency_gate.errors import ExitCode
from latency_gate.measure import transport
from latency_gate.measure.arrivals import Arrival, Level, LevelAsk
from latency_gate.measure.engine import Progress, ProgressCallback, measure
from latency_gate.measure.floor import measure_floor
from latency_gate.measure.sampler import Burst
from latency_gate.measurement import Measurement, MoreCalls
from latency_gate.models import Capacity, Goodput, RunResult, Sample
from latency_gate.report.progress import Look, TargetProgress

if TYPE_CHECKING:
    from latency_gate.assess.budget.gate import Gate
    from latency_gate.assess.compare.baseline import BaselinePlan
    from latency_gate.assess.compare.history import HistoryPlan
    from latency_gate.assess.load.at_once import CapacityRun  # noqa: F401 (a base's argument)
    from latency_gate.assess.load.per_second import RateRun  # noqa: F401 (a base's argument)
    from latency_gate.assess.load.search import LoadRun

__all__ = ["exit_code", "probe", "probe_all"]

R = TypeVar("R", bound="LoadRun[Any, Any]")


def _ignore(_: Progress) -> None:
    return None


class _Judge:
    """The run's gate, built when first asked: after the first look's calls, so the judging
    layer (assess/) loads while the endpoint answers, not before the first request (start-up
    is measured to the first request on the wire, docs/benchmarks.md). The engine asks it
    through three samplers (measure/sampler.py): `looks`, `search` and `rates`."""

    def __init__(
        self,
        target: Target,
        baseline: BaselinePlan | None,
        progress: ProgressCallback,
        into: Measurement,
        max_regression: RegressionLimit | None = None,
    ) -> None:
        self.target = target
        self.baseline = baseline
        self.into = into
        self.max_regression = max_regression
        self._gate: Gate | None = None
        self.looks = _Looks(self, progress)
        self.search = _Search(self)
        self.rates = _Rates(self)

    @property
    def gate(self) -> Gate:
        if self._gate is None:
            from latency_gate.assess.result import gate_for  # noqa: PLC0415 (start-up)

            self._gate = gate_for(self.target, self.baseline, self.max_regression)
        return self._gate

    def floor(self) -> float | None:
        """The gate's own p95 under load, measured before the run (None without it)."""
        if self.into.floor is None:
            return None
        from latency_gate.assess.result import floor_from  # noqa: PLC0415 (start-up)

        floor = self.into.floor
        return floor_from(
            floor.sequential,
            floor.concurrent,
            concurrency=floor.concurrency,
            stamp_source=floor.stamp_source,
        ).concurrent_p95


class _Looks:
    """The engine's question after each look, answered by the gate (sequential sampling)."""

    def __init__(self, judge: _Judge, progress: ProgressCallback) -> None:
        self.judge = judge
        self._looks = 1
        # A printer of ours also says why each look after the first is taken (a user's own
        # callback of probe() gets the Progress events it always got, nothing else).
        self._on_look = progress.look if isinstance(progress, TargetProgress) else None

    def next(self, samples: Sequence[Sample], /) -> MoreCalls | None:
        """More calls, or None; an A/B run's regressions are judged against its base arm's
        calls so far."""
        target = self.judge.target
        base = self.judge.into.base_samples if target.baseline_url is not None else None
        step = self.judge.gate.look(samples, base)
        if step.stop:
            return None
        self._looks += 1
        if self._on_look is not None:
            concurrency = target.concurrency
            self._on_look(Look(self._looks, step.warm_calls, step.bursts, concurrency, step.reason))
        return MoreCalls(step.warm_calls, step.bursts, step.reason)


class _AfterLooks(Generic[R]):
    """What the engine's questions after the looks keep: the judge, and the search's run once
    its first question started it."""

    def __init__(self, judge: _Judge) -> None:
        self.judge = judge
        self.run: R | None = None

    def ended(self, *, interrupted: bool) -> R | None:
        """The run, when it started (stopped where it was when the run was interrupted)."""
        if self.run is not None and interrupted:
            self.run.interrupt()
        return self.run


class _Search(_AfterLooks["CapacityRun"]):
    """The engine's question during the capacity search (after the looks)."""

    def next(self, burst: Burst, /) -> int | None:
        """The concurrency of the next burst, given the last one (none the first time, when
        the search starts from the run's own concurrent check)."""
        if self.run is None:
            from latency_gate.assess.load.at_once import start_search  # noqa: PLC0415 (start-up)

            judge = self.judge
            self.run = start_search(judge.target, judge.gate, judge.into.samples)
        else:
            self.run.add_burst(burst.calls, burst.seconds)
        return self.run.next_burst()

    def searched(self, *, interrupted: bool) -> Capacity | None:
        """The capacity found, when the search ran (an interrupted one says so)."""
        run = self.ended(interrupted=interrupted)
        return None if run is None else run.capacity()


class _Rates(_AfterLooks["RateRun"]):
    """The engine's questions for calls at a rate (after the looks and the capacity search)."""

    def next(self, level: Level, /) -> LevelAsk | None:
        """The next level, given the last one (none the first time)."""
        if self.run is None:
            from latency_gate.assess.load.per_second import start_rates  # noqa: PLC0415 (start-up)

            judge = self.judge
            capacity = judge.search.run
            self.run = start_rates(
                judge.target,
                judge.into.samples,
                max_calls=judge.gate.plan.max_calls,
                spent=0 if capacity is None else capacity.calls,
                floor=judge.floor(),
            )
        ask = self.run.next_level(level.arrivals, level.seconds, level.cut)
        if ask is None:
            return None
        return LevelAsk(ask.rate, ask.calls, ask.seconds, ask.arrivals, RATE_IN_FLIGHT)

    def look(self, arrivals: Sequence[Arrival], now: float) -> bool:
        """Whether the level at a rate in progress is decided."""
        return self.run is not None and self.run.look(arrivals, now)

    def rated(self, *, interrupted: bool) -> Goodput | None:
        """The calls at a rate, when they ran (an interrupted run's say so)."""
        run = self.ended(interrupted=interrupted)
        return None if run is None else run.goodput()


async def probe(
    target: Target,
    *,
    progress: ProgressCallback | None = None,
    measure_floor: bool = True,
    kernel_stamps: bool = True,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    label: str | None = None,
    baseline: BaselinePlan | None = None,
    max_regression: RegressionLimit | None = None,
    history: HistoryPlan | None = None,
) -> RunResult:
    """Probe one target: floor, idle wait, cold call, warm calls, concurrent burst; then its
    numbers and verdict, against `baseline` or `history` when given.

    A target with a `baseline_url` is an A/B run: the base is measured beside it, interleaved,
    and regressions are judged against it by `max_regression` (default 10 %; `baseline` is
    then not used). Never raises for endpoint trouble: every failure is a sample with its
    ErrorKind. A cancellation propagates (`probe_all` is where an interrupted run still gets a
    result).
    """
    into = Measurement()
    progress = progress or _ignore
    if history is not None and baseline is None:
        baseline = history.as_baseline()
    judge = _Judge(target, baseline, progress, into, max_regression)
    await _measure(
        judge, progress, with_floor=measure_floor, kernel_stamps=kernel_stamps, sleep=sleep
    )
    return _result(
        judge, kernel_stamps=kernel_stamps, label=label, interrupted=False, history=history
    )


async def _measure(
    judge: _Judge,
    progress: ProgressCallback,
    *,
    with_floor: bool,
    kernel_stamps: bool,
    sleep: Callable[[float], Awaitable[None]],
) -> None:
    """The judge's target measured into its measurement, the engine asking the judge."""
    target, into = judge.target, judge.into
    if with_floor:
        progress(Progress("floor"))
        into.floor = await measure_floor(
            concurrency=min(target.concurrency, 10), kernel_stamps=kernel_stamps
        )
    await measure(
        target,
        into,
        progress=progress,
        kernel_stamps=kernel_stamps,
        sleep=sleep,
        more=judge.looks,
        search=judge.search if target.capacity else None,
        rates=judge.rates if target.rate is not None or target.goodput else None,
    )


def _result(
    judge: _Judge,
    *,
    kernel_stamps: bool,
    label: str | None,
    interrupted: bool,
    history: HistoryPlan | None = None,
) -> RunResult:
    """The judge's measurement assessed: the run's result, against the judge's baseline."""
    from latency_gate.assess.result import (  # noqa: PLC0415 (start-up: see _Judge)
        assess_run,
        overall_stamp_source,
    )

    target, into = judge.target, judge.into
    kernel_possible = kernel_stamps and transport.kernel_stamps_supported()
    timed_out = _time_up(target, into, judge, interrupted=interrupted)
    result = assess_run(
        target,
        into,
        finished_at=time.time(),
        stamp_source=overall_stamp_source(into.samples, kernel_possible=kernel_possible),
        interrupted=interrupted,
        label=label,
        baseline=judge.baseline,
        gate=judge.gate,
        history=history,
        capacity=judge.search.searched(interrupted=interrupted),
        goodput=judge.rates.rated(interrupted=interrupted),
    )
    warnings = [
        why for why in (into.stopped_early, into.base_stopped_early, timed_out) if why is not None
    ]
    base_unready = target.wait_ready > 0 and into.base_ready_after is None
    if target.baseline_url is not None and base_unready and into.base_samples:
        warnings.append(
            f"the base did not answer within --wait-ready {target.wait_ready:g} s; probed anyway"
        )
    if target.baseline_url is not None and (target.proxy is None) != (
        target.baseline_proxy is None
    ):
        arm = "head's" if target.proxy is not None else "base's"
        warnings.append(
            f"only the {arm} calls went through a proxy (the environment's, for its URL): its "
            "hop is in one arm of the comparison only"
        )
    if not warnings:
        return result
    return result.model_copy(update={"warnings": (*result.warnings, *warnings)})


def _time_up(target: Target, into: Measurement, judge: _Judge, *, interrupted: bool) -> str | None:
    """When --max-time left calls unmade: the gate's last look, told why sampling stopped, and
    the warning that says it (None otherwise)."""
    if not into.time_up or target.max_time is None or interrupted:
        return None
    from latency_gate.formatting import fmt_duration  # noqa: PLC0415 (start-up)

    limit = f"the --max-time of {fmt_duration(target.max_time)} ran out"
    base = into.base_samples if target.baseline_url is not None else None
    judge.gate.time_up(into.samples, base, limit)
    searched = judge.search.run
    if searched is not None:  # a search the time cut: stopped where it was, and said
        searched.interrupt(limit)
    undecided = "undecided" in judge.gate.stopped
    policy = judge.gate.plan.on_undecided
    return f"{limit}: no call started after it" + (
        f", and the checks it left undecided were decided by on-undecided ({policy})"
        if undecided
        else ""
    )


async def probe_all(
    targets: Sequence[Target],
    *,
    progress_for: Callable[[Target], ProgressCallback],
    measure_floor: bool = True,
    label: str | None = None,
    plan: BaselinePlan | None = None,
    max_regression: RegressionLimit | None = None,
    history: HistoryPlan | None = None,
) -> list[RunResult]:
    """Probe targets one after another (so they do not disturb each other), each result labelled
    and held against the baseline plan or the history (assess/compare/history.py; a target with too
    few runs in it is compared with its newest one, as `plan` would be), or for a target with a
    `baseline_url` against its base measured beside it, by `max_regression` (default 10 %).

    When the task running this is cancelled (SIGINT, SIGTERM), the calls finished so far become a
    result marked interrupted (a FAIL) and no further target is probed.
    `progress_for(target)` is called as each target's run begins.
    """
    results: list[RunResult] = []
    if history is not None and plan is None:
        plan = history.as_baseline()
    for target in targets:
        into = Measurement()
        progress = progress_for(target)
        judge = _Judge(target, plan, progress, into, max_regression)
        try:
            await _measure(
                judge, progress, with_floor=measure_floor, kernel_stamps=True, sleep=asyncio.sleep
            )
            interrupted = False
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            progress(Progress("done", len(into.samples), len(into.samples)))
            interrupted = True
        results.append(
            _result(
                judge, kernel_stamps=True, label=label, interrupted=interrupted, history=history
            )
        )
        if interrupted:
            break
    return results


def exit_code(results: Sequence[RunResult], *, fail_on_breach: bool = True) -> ExitCode:
    """PASS (0) when every run passed; BREACH (1) otherwise, unless told not to fail."""
    passed = all(result.verdict.passed for result in results)
    return ExitCode.PASS if passed or not fail_on_breach else ExitCode.BREACH
