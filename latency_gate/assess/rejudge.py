"""A result file's run judged again from its own samples: a file is data, not a verdict.

`merge` and `--baseline` read runs that anyone could have edited (a run whose every call took
10 s against a 3 s budget, marked passed). Its numbers, findings and verdict are derived here
again from its samples under its own budget (`config.budget`), through the same gate the live
run used: its looks are replayed in order (the first look's calls, then each step the gate asks
for), so a run judged again from an honest file gives the verdict it gave live. A file whose
calls do not follow its own looks is judged on what its calls say at each replayed look, and the
last on all of them. The re-judged verdict is the one that counts; a warning says when it
differs from the file's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from pydantic import ValidationError

from latency_gate.assess.budget.gate import Gate, plan_for
from latency_gate.assess.findings import find
from latency_gate.assess.load.levels import LevelLimits
from latency_gate.assess.load.replay import goodput_rows_again, judged_again
from latency_gate.assess.load.verdict import capacity_check
from latency_gate.assess.numbers import stats
from latency_gate.assess.numbers.timeline import chain_stats, stamp_stats
from latency_gate.assess.verdict import judge
from latency_gate.config import Budget
from latency_gate.config.plan.needs import effective_max_calls
from latency_gate.models import CallPhase, Capacity, Numbers, RunResult, Sample

__all__ = ["budget_of", "rejudge"]


def budget_of(config: Mapping[str, Any]) -> Budget:
    """The budget a run was held against, from its settings; ValueError when it has none that
    can be read (then the run cannot be judged)."""
    raw = config.get("budget")
    try:
        return Budget.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in ("budget", *first["loc"]))
        raise ValueError(f"its budget cannot be read (config.{where}: {first['msg']})") from None


def rejudge(run: RunResult) -> RunResult:
    """`run` with its numbers, phases, chain, findings and verdict derived again from its samples
    under its own budget and sampling settings; a warning added where the file said otherwise.
    Regressions against the run's own baseline cannot be tested again (the baseline's calls are
    not in the file): the ones it names still fail it. ValueError when it cannot be judged."""
    config = run.config
    budget = budget_of(config)
    plan = _Settings(
        budget=budget,
        warm_calls=_count(config, "warm_calls", 20),
        concurrency=_count(config, "concurrency", 10),
        max_calls=_count(config, "max_calls", None),
        on_undecided=str(config.get("on_undecided", "fail")),
        capacity=config.get("capacity") is True,
        capacity_max=_count(config, "capacity_max", 64),
    )
    gate = Gate(
        budget=budget,
        plan=plan_for(
            max_calls=effective_max_calls(plan),
            concurrency=plan.concurrency,
            on_undecided=plan.on_undecided,
            on_undecided_regression=str(config.get("on_undecided_regression", "pass")),
        ),
    )
    samples = run.samples
    _replay(gate, samples, first=_first_look(run, plan), concurrency=plan.concurrency)
    numbers = stats.numbers(samples)
    successful = sum(s.ok for s in samples)
    checks = gate.checks(samples, numbers)
    capacity = _capacity_again(run, budget, plan, gate.history.get("concurrent_p95"))
    if plan.capacity or run.capacity is not None:
        min_capacity = _count(config, "min_capacity", None) if "min_capacity" in config else None
        row = capacity_check(capacity, min_capacity)
        checks = checks if row is None else (*checks, row)
    goodput, rows = goodput_rows_again(run, budget)
    checks = (*checks, *rows)
    verdict = judge(
        checks,
        successful_calls=successful,
        interrupted=run.interrupted,
        regressions=() if run.baseline is None else run.baseline.regressions,
    )
    warnings = list(run.warnings)
    differing = _differing(run.numbers, numbers)
    if differing:
        warnings.append(
            f"{run.display_name}: the file's numbers do not match its own calls ({differing}); "
            "they were derived again from the calls"
        )
    if verdict.passed != run.verdict.passed:
        warnings.append(
            f"{run.display_name}: the file says {run.verdict.label}, but its calls held against "
            f"its own budget say {verdict.label}; {verdict.label} counts"
        )
    return run.model_copy(
        update={
            "numbers": numbers,
            "verdict": verdict,
            "excluded_from_latency": len(samples) - successful,
            "phases": stamp_stats(samples),
            "chain": chain_stats(samples),
            "findings": find(
                samples,
                numbers,
                streaming=config.get("stream") is True,
                concurrency=plan.concurrency,
            ),
            "warnings": tuple(warnings),
            "capacity": capacity,
            "goodput": goodput,
        }
    )


def _capacity_again(
    run: RunResult,
    budget: Budget,
    plan: _Settings,
    looks: list[int] | None,
) -> Capacity | None:
    """The file's capacity judged again from its levels' calls, under the run's own budget."""
    if run.capacity is None:
        return None
    if budget.max_concurrent_p95 is None:
        raise ValueError("its capacity was searched without a concurrent p95 budget")
    limits = LevelLimits(
        concurrent_p95=budget.max_concurrent_p95,
        error_rate=budget.max_error_rate,
        ttft_p95=budget.max_ttft_p95,
        on_undecided=plan.on_undecided,
    )
    concurrent = [s for s in run.samples if s.phase is CallPhase.CONCURRENT]
    return judged_again(
        run.capacity,
        limits,
        concurrent=concurrent,
        looks=looks or [len(concurrent)],
    )


@overload
def _count(config: Mapping[str, Any], key: str, default: int) -> int: ...
@overload
def _count(config: Mapping[str, Any], key: str, default: None) -> int | None: ...
def _count(config: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = config.get(key, default)
    if value is None and default is None:
        return None  # max_calls: auto
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 100_000:
        raise ValueError(f"its settings hold {key} {value!r}, not a count from 1 to 100,000")
    return value


@dataclass(frozen=True)
class _Settings:
    """What config.plan reads of a target, from a result file's settings."""

    budget: Budget
    warm_calls: int
    concurrency: int
    max_calls: int | None
    on_undecided: str
    capacity: bool = False
    capacity_max: int = 64


def _first_look(run: RunResult, plan: _Settings) -> int:
    """How many calls the run's first look made: as the file says, else the plan's."""
    if run.sampling is not None and 0 < run.sampling.first_look_calls <= len(run.samples):
        return run.sampling.first_look_calls
    return min(len(run.samples), 1 + plan.warm_calls + plan.concurrency)


def _replay(gate: Gate, samples: Sequence[Sample], *, first: int, concurrency: int) -> None:
    """The run's looks again: the first look's calls, then as many more as each step asked for,
    until the gate stops or the calls run out; the last look always sees every call."""
    seen = min(first, len(samples))
    while True:
        step = gate.look(samples[:seen])
        if step.stop or seen >= len(samples):
            break
        seen = min(len(samples), seen + step.warm_calls + step.bursts * concurrency)
    if seen < len(samples):
        gate.look(samples)


def _differing(claimed: Numbers, derived: Numbers) -> str:
    """The numbers the file claims that its calls do not give, as "warm p95 10 s", or ""."""
    names = []
    for name, value in derived.model_dump().items():
        said = getattr(claimed, name)
        if (said is None) != (value is None) or (
            said is not None and value is not None and abs(said - value) > 1e-9 * max(1, value)
        ):
            names.append(name.replace("_", " "))
    return ", ".join(names[:4]) + (", …" if len(names) > 4 else "")
