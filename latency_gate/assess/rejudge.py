"""A result file's run judged again from its own samples: a file is data, not a verdict.

`merge` and `--baseline` read runs that anyone could have edited (a run whose every call took
10 s against a 3 s budget, marked passed). Its numbers, findings and verdict are derived here
again from its samples under its own budget (`config.budget`), through the same public API the
live run uses (the gate, `stats.numbers`, `verdict.judge`), in one look over all its samples.

One look is not the run's own sequence of looks: a check the live run decided at an earlier look
may be undecided over all the calls, and then resolved by `on_undecided`. The re-judged verdict
is the one that counts; a warning says when it differs from the file's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from latency_gate.assess import stats
from latency_gate.assess.findings import find
from latency_gate.assess.gate import Gate, plan_for
from latency_gate.assess.timeline import chain_stats, stamp_stats
from latency_gate.assess.verdict import judge
from latency_gate.config import Budget
from latency_gate.models import Numbers, RunResult

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
    gate = Gate(
        budget=budget,
        plan=plan_for(
            max_calls=_count(config, "max_calls", 300),
            concurrency=_count(config, "concurrency", 10),
            on_undecided=str(config.get("on_undecided", "fail")),
        ),
    )
    samples = run.samples
    gate.look(samples)
    numbers = stats.numbers(samples)
    successful = sum(s.ok for s in samples)
    verdict = judge(
        gate.checks(samples, numbers),
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
                concurrency=_count(config, "concurrency", 10),
            ),
            "warnings": tuple(warnings),
        }
    )


def _count(config: Mapping[str, Any], key: str, default: int) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 100_000:
        raise ValueError(f"its settings hold {key} {value!r}, not a count from 1 to 100,000")
    return value


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
