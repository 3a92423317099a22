"""A run's samples judged, once: numbers, the chain, findings, the baseline check, the verdict.

The one place a `RunResult` is assembled, for a finished run and an interrupted one alike.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import partial
from typing import Literal

from latency_gate.assess.budget.gate import Gate, plan_for
from latency_gate.assess.compare.baseline import BaselinePlan, baseline_for, compare, with_origins
from latency_gate.assess.compare.cost import cost_of
from latency_gate.assess.compare.creep import creep, creep_note
from latency_gate.assess.compare.history import HistoryPlan, earlier_runs, history_check
from latency_gate.assess.compare.regression import DEFAULT_RELATIVE, look_alpha
from latency_gate.assess.findings import find
from latency_gate.assess.load.regression import search_delta
from latency_gate.assess.load.verdict import capacity_check, goodput_checks
from latency_gate.assess.numbers import stats
from latency_gate.assess.numbers.timeline import chain_stats, stamp_stats
from latency_gate.assess.numbers.work import fixed_length_finding
from latency_gate.assess.verdict import judge
from latency_gate.config import (
    Target,
    base_changes,
    base_source,
    default_prompt_note,
    fixed_length_of,
    unsent_settings,
)
from latency_gate.config.plan.feasible import plan_warnings
from latency_gate.config.plan.needs import effective_max_calls
from latency_gate.config.regression import DEFAULT_LIMIT, RegressionLimit
from latency_gate.measurement import Measurement
from latency_gate.models import (
    BaselineCheck,
    CallPhase,
    Capacity,
    Check,
    Floor,
    Goodput,
    Numbers,
    RunResult,
    Sample,
    Sampling,
    StampSource,
    Verdict,
)
from latency_gate.version import __version__

__all__ = ["assess_run", "floor_from", "gate_for", "judge_samples", "overall_stamp_source"]


def gate_for(
    target: Target,
    baseline: BaselinePlan | None = None,
    max_regression: RegressionLimit | None = None,
) -> Gate:
    """The gate of one target's run: its budget, its sampling plan, its baseline if any (for
    an A/B run, a target with a baseline_url, the limit `max_regression`, default 10 %)."""
    base = None if baseline is None or baseline.runs is None else baseline.runs.get(target.name)
    limit = None if base is None or baseline is None else baseline.limit
    if target.baseline_url is not None:
        base, limit = None, max_regression or DEFAULT_LIMIT
    return Gate(
        budget=target.budget,
        plan=plan_for(
            max_calls=effective_max_calls(target),
            concurrency=target.concurrency,
            on_undecided=target.on_undecided,
            on_undecided_regression=target.on_undecided_regression,
        ),
        base=base,
        limit=limit,
    )


def assess_run(
    target: Target,
    measured: Measurement,
    *,
    finished_at: float,
    stamp_source: StampSource,
    floor: Floor | None = None,
    interrupted: bool = False,
    label: str | None = None,
    baseline: BaselinePlan | None = None,
    gate: Gate | None = None,
    max_regression: RegressionLimit | None = None,
    history: HistoryPlan | None = None,
    capacity: Capacity | None = None,
    goodput: Goodput | None = None,
) -> RunResult:
    """Everything derived from a run's calls (`measured`, as the engine filled it in), and its
    verdict. `floor`: the floor's figures, by default those of `measured.floor`.

    `gate` holds the looks the run took (the engine's `more` callback asked it after each); a
    run judged without one (interrupted early, or measured without sequential sampling) is
    judged in one look. An A/B run (a target with a baseline_url) is compared with its base
    arm, `measured.base_samples`, by the gate's limit (`max_regression` when the gate is made
    here); `baseline` is then not used. With a `history` (and no `baseline`), a target with too
    few runs for the history's rule is compared with its newest run (`HistoryPlan.as_baseline`).
    The budget checks judge `measured.samples` alone; `capacity` (the search's, with
    --capacity) is a row of its own, gated by min-capacity, and compared with the base's;
    `goodput` (calls at a rate, --rate and --goodput) gives rows of its own, gated by the budget
    and min-rate.
    """
    samples, base_samples = measured.samples, measured.base_samples
    if floor is None and measured.floor is not None:
        floor = floor_from(
            measured.floor.sequential,
            measured.floor.concurrent,
            concurrency=measured.floor.concurrency,
            stamp_source=measured.floor.stamp_source,
        )
    if history is not None and baseline is None:
        baseline = history.as_baseline()
    if gate is None:
        gate = gate_for(target, baseline, max_regression)
    numbers = stats.numbers(samples)
    successful = sum(s.ok for s in samples)
    side_by_side = (
        None if target.baseline_url is None else (base_source(target), tuple(base_samples))
    )
    _, check, verdict = judge_samples(
        gate,
        samples,
        numbers,
        target=target.name,
        baseline=baseline,
        interrupted=interrupted,
        base_arm=side_by_side,
        history=history,
        capacity=capacity,
        searched=target.capacity,
        min_capacity=target.min_capacity,
        goodput=goodput if target.goodput else None,
        extra=goodput_checks(
            goodput, asked=target.rate, min_rate=target.min_rate, searched=target.goodput
        ),
    )
    if side_by_side is None:  # a preview held against main's runs of another origin: said so
        held_against = _held_against(target.name, baseline, history)
        check = with_origins(check, target.display_url, held_against)
    elif check is not None and (changes := base_changes(target)):  # the base's own request
        check = check.model_copy(update={"base_request": changes})
    warnings: list[str] = list(plan_warnings(target))
    if interrupted:
        warnings.append("the run was interrupted; the numbers cover the calls finished")
    if target.insecure:
        warnings.append("TLS certificate checks were turned off (--insecure)")
    warnings += default_prompt_note(target)
    warnings += unsent_settings(target)
    if target.wait_ready > 0 and measured.ready_after is None and samples:
        warnings.append(
            f"the endpoint did not answer within --wait-ready {target.wait_ready:g} s; "
            "probed anyway"
        )
    if target.proxy is not None:
        warnings.append(
            "calls went through a proxy: the connect stamps are of the connection to the "
            f"proxy, and every time includes the proxy's hop ({stamp_source.value} stamps on "
            "the socket to the proxy)"
        )
    findings = find(samples, numbers, streaming=target.stream, concurrency=target.concurrency)
    if (asked := fixed_length_of(target)) is not None:
        findings = (*findings, fixed_length_finding(samples, asked))
    return RunResult(
        findings=findings,
        tool_version=__version__,
        target=target.name,
        config=target.redacted(),
        started_at=measured.started_at,
        finished_at=finished_at,
        stamp_source=stamp_source,
        floor=floor,
        samples=tuple(samples),
        base_samples=tuple(base_samples),
        numbers=numbers,
        phases=stamp_stats(samples),
        chain=chain_stats(samples),
        excluded_from_latency=len(samples) - successful,
        verdict=verdict,
        interrupted=interrupted,
        warnings=tuple(warnings),
        label=label,
        baseline=check,
        sampling=Sampling(
            looks=gate.looks,
            first_look_calls=gate.first_look_calls,
            extra_calls=len(samples) - gate.first_look_calls,
            max_calls=gate.plan.max_calls,
            on_undecided=gate.plan.on_undecided,
            on_undecided_regression=gate.plan.on_undecided_regression,
            reasons=tuple(gate.reasons),
            stopped="the run was interrupted" if interrupted else gate.stopped,
            first_look=stats.numbers(samples[: gate.first_look_calls]),
        ),
        ready_after=measured.ready_after,
        capacity=capacity,
        goodput=goodput,
        cost=cost_of(target, samples, base_samples),
    )


def _held_against(
    name: str, baseline: BaselinePlan | None, history: HistoryPlan | None
) -> tuple[RunResult, ...]:
    """The earlier runs a target was held against: its history's, or its baseline run."""
    if history is not None:
        return history.of(name).runs
    run = None if baseline is None or baseline.runs is None else baseline.runs.get(name)
    return () if run is None else (run,)


def judge_samples(
    gate: Gate,
    samples: Sequence[Sample],
    numbers: Numbers,
    *,
    target: str,
    baseline: BaselinePlan | None,
    interrupted: bool = False,
    base_arm: tuple[str, Sequence[Sample]] | None = None,
    history: HistoryPlan | None = None,
    capacity: Capacity | None = None,
    searched: bool = False,
    min_capacity: int | None = None,
    goodput: Goodput | None = None,
    extra: Sequence[Check] = (),
    intervals: bool = True,
) -> tuple[tuple[Check, ...], BaselineCheck | None, Verdict]:
    """The checks, the baseline comparison and the verdict of a run's calls, from the gate that
    took its looks: what `assess_run` puts in a result, and what bench/statsim.py simulates.
    `intervals=False` leaves the comparison's intervals out (they are the tests inverted and
    never change an outcome: the simulations count outcomes, thousands of runs).

    `base_arm` (the base's redacted URL and its calls) compares an A/B run with the base
    measured beside it; `baseline` is then not used. With a `history`, the comparison is the
    history's (assess/compare/history.py), made once here. `goodput` (a --goodput search's) is
    compared with the base's search, as the capacity is. `extra`: rows of their own (calls at a
    rate)."""
    checks = gate.checks(samples, numbers)
    gated = gate.budget.compared()
    if history is not None and baseline is None:
        baseline = history.as_baseline()
    # Every comparison is judged at the end alike: the gate's outcomes (each at the look that
    # decided it, on that look's calls), what is left of alpha for a number the looks did not
    # test, which numbers have a budget, and the policy.
    judging = partial(
        compare,
        outcomes=gate.regression_outcomes,
        alpha=look_alpha(max(gate.looks - 1, 0), last=True),
        gated=gated,
        stopped_early=gate.failed_early,
        on_undecided=gate.plan.on_undecided_regression,
        looks=gate.regression_looks,
        concurrency=gate.plan.concurrency,
        intervals=intervals,
    )
    check = None
    if base_arm is not None:
        source, base_samples = base_arm
        limit = gate.limit or DEFAULT_LIMIT
        check = judging(samples, numbers, None, limit, source, base_samples=base_samples)
    elif baseline is not None:
        found = baseline_for(baseline, target)
        check = (
            found
            if isinstance(found, BaselineCheck)
            else judging(samples, numbers, found, baseline.limit, baseline.source)
        )
    if history is not None and base_arm is None:
        check = history_check(history, target, samples, numbers, gated=gated, newest=check)
    if searched:
        row = capacity_check(capacity, min_capacity)
        checks = checks if row is None else (*checks, row)
    if base_arm is None:  # an A/B run's base arm is not searched
        check = _with_searches(
            check,
            capacity,
            goodput,
            searched=searched,
            target=target,
            baseline=baseline,
            history=history,
            on_undecided=gate.plan.on_undecided_regression,
        )
    checks = (*checks, *extra)
    verdict = judge(
        checks,
        successful_calls=sum(s.ok for s in samples),
        interrupted=interrupted,
        regressions=() if check is None else check.regressions,
        deltas=() if check is None else check.deltas,
        relative_limit=None if check is None else check.max_relative,
        warnings=() if history is None or base_arm is not None else _creeps(history, target, gated),
    )
    return checks, check, verdict


def _creeps(history: HistoryPlan, target: str, gated: Collection[str]) -> list[str]:
    """The warning of each gated percentile whose history creeps up (assess/compare/creep.py)."""
    runs = list(reversed(history.of(target).runs))  # oldest first
    relative = history.limit.relative if history.limit.relative is not None else DEFAULT_RELATIVE
    notes = []
    for number in ("warm_p50", "warm_p95", "concurrent_p95", "ttft_p95"):
        if number not in gated:
            continue
        values = [v for run in runs if (v := getattr(run.numbers, number)) is not None]
        found = creep(number, values, max_relative=relative)
        if found is not None and found.flagged:
            notes.append(creep_note(found))
    return notes


def _with_searches(
    check: BaselineCheck | None,
    capacity: Capacity | None,
    goodput: Goodput | None,
    *,
    searched: bool,
    target: str,
    baseline: BaselinePlan | None,
    history: HistoryPlan | None,
    on_undecided: Literal["fail", "pass"],
) -> BaselineCheck | None:
    """The load searches' figures against an earlier run's or a history's, rows among the
    comparison's (assess/load/regression.py): the capacity's when this run `searched` it, the
    goodput's when it has one (a search's, or calls at a rate, which say nothing)."""
    earlier = earlier_runs(target, baseline, history)
    if check is None or check.status != "compared" or earlier is None:
        return check
    runs, several = earlier
    limit = (history.limit if history is not None else baseline.limit if baseline else None) or (
        DEFAULT_LIMIT
    )
    asked: list[tuple[Literal["capacity", "goodput"], Capacity | Goodput | None]] = []
    if searched:
        asked.append(("capacity", capacity))
    if goodput is not None:
        asked.append(("goodput", goodput))
    found = []
    for number, figure in asked:
        bases = [b for run in runs if (b := getattr(run, number)) is not None]
        delta = search_delta(
            number, figure, bases, limit, history=several, on_undecided=on_undecided
        )
        found += [] if delta is None else [delta]
    return check.model_copy(update={"deltas": (*check.deltas, *found)}) if found else check


def floor_from(
    sequential: Sequence[Sample],
    concurrent: Sequence[Sample],
    *,
    concurrency: int,
    stamp_source: StampSource,
) -> Floor:
    """The floor's two figures: p50 of the sequential calls after the first (which opened the
    connection) and p95 of the burst."""
    seq = stats.latencies(sequential[1:], CallPhase.WARM)
    conc = stats.latencies(concurrent, CallPhase.CONCURRENT)
    return Floor(
        sequential_p50=stats.percentile(seq, 50) or 0.0,
        concurrent_p95=stats.percentile(conc, 95) or 0.0,
        concurrency=concurrency,
        stamp_source=stamp_source,
    )


def overall_stamp_source(samples: Sequence[Sample], *, kernel_possible: bool) -> StampSource:
    """Kernel when every successful call had kernel stamps; with no successful call, what the
    platform would have given (`kernel_possible`)."""
    sources = {s.stamp_source for s in samples if s.ok}
    if sources == {StampSource.KERNEL}:
        return StampSource.KERNEL
    if not sources and kernel_possible:
        return StampSource.KERNEL
    return StampSource.READ_RETURN
