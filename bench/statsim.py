"""Seeded simulations of the gate's statistics (issue 12): the tables of docs/statistics.md.

    python bench/statsim.py --write         # every table, as in docs/statistics.md (~25 min)
    python bench/statsim.py --runs 100      # every table at 100 runs a cell: quicker, coarser
    python bench/statsim.py --only budget   # one table

Runs per cell by default: 1000 for the budget and error-rate tables, 300 for the baseline
tables (each run there is a pair of gate runs), 100 for the comparison of methods.

Each simulated run follows the real procedure with the same pure functions the engine calls
(latency_gate.assess): look 1 is 1 cold + 20 warm calls + one burst of 10; after each look
`next_step` says what to add; a check keeps the first decision it reaches; at the end `resolve`
applies `on_undecided`. Latencies are lognormal (the median scaled to the scenario), drawn with
random.Random seeded by (table, cell, run), so every figure is exactly reproducible.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from latency_gate.assess.checks import error_rate_check, percentile_check  # noqa: E402
from latency_gate.assess.intervals import linear_percentile  # noqa: E402
from latency_gate.assess.regression import (  # noqa: E402
    METHOD,
    Regression,
    error_rate_regression,
    percentile_regression,
)
from latency_gate.assess.resampling import Method  # noqa: E402
from latency_gate.assess.sampling import (  # noqa: E402
    DEFAULT_PLAN,
    NextStep,
    Phase,
    SamplingPlan,
    next_step,
    resolve,
)
from latency_gate.assess.sequential import Decision  # noqa: E402

Z95 = 1.6448536269514722
Draw = Callable[[random.Random], float]

# --- the endpoint ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """Lognormal latencies (median, sigma); a share `slow_share` of calls `slow_factor` x slower;
    each call fails with probability `fail_rate`."""

    median: float
    sigma: float
    scale: float = 1.0
    slow_share: float = 0.0
    slow_factor: float = 1.0
    fail_rate: float = 0.0

    def call(self, rng: random.Random) -> float | None:
        """One call's latency, or None when it failed."""
        latency = self.scale * self.median * math.exp(rng.gauss(0.0, self.sigma))
        if self.slow_share and rng.random() < self.slow_share:
            latency *= self.slow_factor
        if self.fail_rate and rng.random() < self.fail_rate:
            return None
        return latency


def median_for_p95(p95: float, sigma: float) -> float:
    """The lognormal median whose p95 is `p95`."""
    return p95 / math.exp(Z95 * sigma)


# --- one run of the gate, as the engine will do it --------------------------------------------


@dataclass
class Calls:
    """Everything a run measured so far."""

    warm: list[float] = field(default_factory=list)
    concurrent: list[float] = field(default_factory=list)
    failed: int = 0
    total: int = 0

    def take(self, endpoint: Endpoint, rng: random.Random, phase: str, count: int) -> None:
        for _ in range(count):
            latency = endpoint.call(rng)
            self.total += 1
            if latency is None:
                self.failed += 1
            elif phase == "warm":
                self.warm.append(latency)
            elif phase == "concurrent":
                self.concurrent.append(latency)


@dataclass(frozen=True)
class Budget:
    warm_p95: float = 3.0
    concurrent_p95: float = 3.0
    error_rate: float = 0.01


@dataclass
class RunOutcome:
    """Final outcome of each check, calls spent and the first look's classic numbers."""

    budget: dict[str, Decision]
    passed: dict[str, bool]
    by_policy: dict[str, bool]
    regression: dict[str, Regression]
    calls: Calls
    looks: int
    classic_warm_p95: float | None
    classic_concurrent_p95: float | None
    classic_error_rate: float
    stop_reason: str = ""


def gate_run(
    endpoint: Endpoint,
    rng: random.Random,
    *,
    budget: Budget = Budget(),
    plan: SamplingPlan = DEFAULT_PLAN,
    base: Calls | None = None,
    max_relative: float = 0.10,
    method: Method = METHOD,
    first_warm: int = 20,
) -> RunOutcome:
    """One run: look 1 (1 cold + `first_warm` warm (`warm-calls`) + one burst), then looks
    while `next_step` asks."""
    calls = Calls()
    calls.take(endpoint, rng, "cold", 1)
    calls.take(endpoint, rng, "warm", first_warm)
    calls.take(endpoint, rng, "concurrent", plan.concurrency)
    classic = (
        linear_percentile(calls.warm, 95),
        linear_percentile(calls.concurrent, 95),
        calls.failed / calls.total,
    )
    budget_decisions: dict[str, Decision] = {}
    regressions: dict[str, Regression] = {}
    looks = 1
    while True:
        errors = error_rate_check(calls.failed, calls.total, budget.error_rate)
        current = {
            "warm_p95": percentile_check(calls.warm, 95, budget.warm_p95).decision,
            "concurrent_p95": percentile_check(
                calls.concurrent, 95, budget.concurrent_p95
            ).decision,
            "error_rate": errors.decision,
        }
        for name, decision in current.items():  # a decided check keeps its first decision
            if budget_decisions.get(name, Decision.UNDECIDED) is Decision.UNDECIDED:
                budget_decisions[name] = decision
        if base is not None:
            for name, head, base_values in (
                ("warm_p95", calls.warm, base.warm),
                ("concurrent_p95", calls.concurrent, base.concurrent),
            ):
                if regressions.get(name, Regression.UNDECIDED) is not Regression.UNDECIDED:
                    continue
                result = percentile_regression(
                    head,
                    base_values,
                    95,
                    max_relative=max_relative,
                    alpha=plan.regression_alpha,
                    method=method,
                )
                regressions[name] = result.outcome if result else Regression.UNDECIDED
            if regressions.get("error_rate", Regression.UNDECIDED) is Regression.UNDECIDED:
                regressions["error_rate"] = error_rate_regression(
                    calls.failed,
                    calls.total,
                    base.failed,
                    base.total,
                    max_relative=max_relative,
                    alpha=plan.regression_alpha,
                ).outcome
        phases = {"warm_p95": Phase.WARM, "concurrent_p95": Phase.CONCURRENT}
        undecided = [
            (name, phases.get(name, Phase.ALL))
            for name, decision in budget_decisions.items()
            if decision is Decision.UNDECIDED
        ] + [
            (f"{name} regression", phases[name])
            for name, outcome in regressions.items()
            if outcome is Regression.UNDECIDED and name in phases
        ]
        step: NextStep = next_step(
            plan,
            looks_done=looks,
            calls_made=calls.total,
            undecided=undecided,
            error_calls_to_pass=errors.calls_to_pass,
        )
        if step.stop:
            break
        calls.take(endpoint, rng, "warm", step.warm_calls)
        calls.take(endpoint, rng, "concurrent", step.bursts * plan.concurrency)
        looks += 1
    passed: dict[str, bool] = {}
    by_policy: dict[str, bool] = {}
    for name, decision in budget_decisions.items():
        passed[name], by_policy[name] = resolve(decision, plan)
    return RunOutcome(
        budget=budget_decisions,
        passed=passed,
        by_policy=by_policy,
        regression=regressions,
        calls=calls,
        looks=looks,
        classic_warm_p95=classic[0],
        classic_concurrent_p95=classic[1],
        classic_error_rate=classic[2],
        stop_reason=step.reason,
    )


def run_rng(table: str, cell: int, run: int) -> random.Random:
    """The generator of one simulated run, fixed by (table, cell, run)."""
    return random.Random(f"{table}/{cell}/{run}")


# --- the tables -----------------------------------------------------------------------------

SIGMAS = (0.1, 0.25, 0.5)
NUMBERS = ("warm_p95", "concurrent_p95", "error_rate")
# Far under the 3 s budget, so the budget checks decide early and the comparison is what is
# measured: median 0.4 s (p95 0.47 s at sigma 0.1, 0.91 s at 0.5).
REGRESSION_MEDIAN = 0.4
BASE_FAIL_RATE = 0.005


@dataclass(frozen=True)
class PairStats:
    flagged: dict[str, float]
    any_flagged: float
    head_calls: float
    base_calls: float


def regression_cell(
    table: str,
    cell: int,
    *,
    runs: int,
    base_ep: Endpoint,
    head_ep: Endpoint,
    plan: SamplingPlan,
    method: Method = METHOD,
    first_warm: int = 20,
) -> PairStats:
    """Share of runs where each number is called a regression (base and head both real runs,
    each with `first_warm` warm calls in its first look: `warm-calls`, the same on both sides
    since a baseline of other settings is refused)."""
    counts = dict.fromkeys(NUMBERS, 0)
    any_count = 0
    head_calls = base_calls = 0
    for run in range(runs):
        rng = run_rng(table, cell, run)
        base = gate_run(base_ep, rng, plan=plan, first_warm=first_warm)
        head = gate_run(
            head_ep, rng, plan=plan, base=base.calls, method=method, first_warm=first_warm
        )
        flagged = [n for n in NUMBERS if head.regression.get(n) is Regression.REGRESSED]
        for name in flagged:
            counts[name] += 1
        any_count += bool(flagged)
        head_calls += head.calls.total
        base_calls += base.calls.total
    return PairStats(
        {n: c / runs for n, c in counts.items()},
        any_count / runs,
        head_calls / runs,
        base_calls / runs,
    )


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def table_row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


@dataclass(frozen=True)
class Case:
    """One row of a baseline table: a base endpoint of `sigma`, the head changed from it."""

    label: str
    sigma: float
    change: Mapping[str, float]  # Endpoint fields of the head


# What the head changes: the label in the tables and the Endpoint fields changed.
Change = tuple[str, Mapping[str, float]]
DRIFT: Change = ("unchanged, +5 % drift", {"scale": 1.05})
SLOWER: Change = ("every call +50 %", {"scale": 1.5})
SLOW_TAIL: Change = ("10 % of calls 3x slower", {"slow_share": 0.1, "slow_factor": 3.0})


def cases_of(*changes: Change, sigmas: Sequence[float]) -> list[Case]:
    """Each change at each sigma, change by change."""
    return [Case(label, sigma, change) for label, change in changes for sigma in sigmas]


# regression_cell for one case, taking `method` and `first_warm`.
Measure = Callable[..., PairStats]


def regression_table(
    table: str,
    header: Sequence[str],
    cases: Sequence[Case],
    row: Callable[[Case, Measure], str],
    *,
    runs: int,
    plan: SamplingPlan,
) -> str:
    """`header`, then `row(case, measure)` for each case. Cells are numbered in the order of
    `cases`, and (table, cell) seeds the runs: keep the order to keep the figures."""
    rows = list(header)
    for cell, case in enumerate(cases):
        base_ep = Endpoint(REGRESSION_MEDIAN, case.sigma, fail_rate=BASE_FAIL_RATE)
        head_ep = replace(base_ep, **case.change)
        measure = partial(
            regression_cell, table, cell, runs=runs, base_ep=base_ep, head_ep=head_ep, plan=plan
        )
        rows.append(row(case, measure))
        progress(f"{table} cell {cell}: {rows[-1]}")
    return "\n".join(rows)


def table_false_alarms(runs: int, plan: SamplingPlan) -> str:
    header = (
        "| sigma | drift | warm p95 | concurrent p95 | error rate | any number "
        "| calls (base, head) |",
        "|---|---|---|---|---|---|---|",
    )
    cases = [
        Case(label, sigma, change)
        for sigma in SIGMAS
        for label, change in (("none", {"scale": 1.0}), ("+5 %", DRIFT[1]))
    ]

    def row(case: Case, measure: Measure) -> str:
        s = measure()
        flagged = (pct(s.flagged[name]) for name in NUMBERS)
        calls = f"{s.base_calls:.0f}, {s.head_calls:.0f}"
        return table_row(f"{case.sigma:g}", case.label, *flagged, pct(s.any_flagged), calls)

    return regression_table("a", header, cases, row, runs=runs, plan=plan)


def table_detection(runs: int, plan: SamplingPlan) -> str:
    header = (
        "| change | sigma | warm p95 caught | concurrent p95 caught | run flagged | head calls |",
        "|---|---|---|---|---|---|",
    )
    cases = cases_of(SLOWER, SLOW_TAIL, sigmas=SIGMAS)

    def row(case: Case, measure: Measure) -> str:
        s = measure()
        caught = (pct(s.flagged[name]) for name in ("warm_p95", "concurrent_p95"))
        return table_row(
            case.label, f"{case.sigma:g}", *caught, pct(s.any_flagged), f"{s.head_calls:.0f}"
        )

    return regression_table("b", header, cases, row, runs=runs, plan=plan)


def table_bigger_base(runs: int, plan: SamplingPlan) -> str:
    """A tail-only change with `warm-calls` 20 (the default) and 100, on both runs."""
    header = (
        "| case | sigma | warm p95 flagged, warm-calls 20 | same, warm-calls 100 "
        "| head calls (20, 100) |",
        "|---|---|---|---|---|",
    )
    cases = [*cases_of(DRIFT, sigmas=(0.25, 0.5)), *cases_of(SLOW_TAIL, sigmas=SIGMAS)]

    def row(case: Case, measure: Measure) -> str:
        small, big = (measure(first_warm=n) for n in (20, 100))
        flagged = (pct(stats.flagged["warm_p95"]) for stats in (small, big))
        calls = f"{small.head_calls:.0f}, {big.head_calls:.0f}"
        return table_row(case.label, f"{case.sigma:g}", *flagged, calls)

    return regression_table("e", header, cases, row, runs=runs, plan=plan)


def table_methods(runs: int, plan: SamplingPlan) -> str:
    """The candidates for the regression test, side by side: share of runs flagged."""
    methods: tuple[Method, ...] = ("permutation", "bootstrap", "bootstrap-basic")
    header = (
        "| case | sigma | " + " | ".join(methods) + " |",
        "|---|---|" + "---|" * len(methods),
    )
    cases = cases_of(DRIFT, SLOWER, SLOW_TAIL, sigmas=(0.25, 0.5))

    def row(case: Case, measure: Measure) -> str:
        shares = (pct(measure(method=method).any_flagged) for method in methods)
        return table_row(case.label, f"{case.sigma:g}", *shares)

    return regression_table("m", header, cases, row, runs=runs, plan=plan)


MULTIPLES = (0.8, 0.9, 1.0, 1.1, 1.2)
BUDGET_SIGMA = 0.3


def budget_cell(
    cell: int, runs: int, multiple: float, plan: SamplingPlan
) -> tuple[dict[str, float], dict[str, float], float, float]:
    """P(FAIL) per latency check before (point estimate) and after, and calls, looks spent."""
    budget = Budget()
    endpoint = Endpoint(median_for_p95(multiple * budget.warm_p95, BUDGET_SIGMA), BUDGET_SIGMA)
    before = {"warm_p95": 0, "concurrent_p95": 0}
    after = {"warm_p95": 0, "concurrent_p95": 0}
    calls = looks = 0
    for run in range(runs):
        out = gate_run(endpoint, run_rng("c", cell, run), budget=budget, plan=plan)
        warm = out.classic_warm_p95
        concurrent = out.classic_concurrent_p95
        before["warm_p95"] += warm is None or warm > budget.warm_p95
        before["concurrent_p95"] += concurrent is None or concurrent > budget.concurrent_p95
        for name in after:
            after[name] += not out.passed[name]
        calls += out.calls.total
        looks += out.looks
    return (
        {k: v / runs for k, v in before.items()},
        {k: v / runs for k, v in after.items()},
        calls / runs,
        looks / runs,
    )


def table_budget(runs: int, plan: SamplingPlan) -> str:
    rows = [
        "| true p95 / budget | warm p95 before | warm p95 after | concurrent p95 before "
        "| concurrent p95 after | after, on-undecided pass (warm, concurrent) | calls | looks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lenient = replace(plan, on_undecided="pass")
    for cell, multiple in enumerate(MULTIPLES):
        before, after, calls, looks = budget_cell(cell, runs, multiple, plan)
        _, after_pass, _, _ = budget_cell(cell, runs, multiple, lenient)
        rows.append(
            f"| {multiple:.1f}x | {pct(before['warm_p95'])} | {pct(after['warm_p95'])} "
            f"| {pct(before['concurrent_p95'])} | {pct(after['concurrent_p95'])} "
            f"| {pct(after_pass['warm_p95'])}, {pct(after_pass['concurrent_p95'])} "
            f"| {calls:.0f} | {looks:.1f} |"
        )
        progress(f"c {multiple}x: after {after}")
    return "\n".join(rows)


FAIL_RATES = (0.0, 0.005, 0.01, 0.02, 0.05)


def table_error_rate(runs: int, plan: SamplingPlan) -> str:
    rows = [
        "| true failure share | P(FAIL) before (k/31 <= 0.01) | P(FAIL) after "
        "| of which undecided at the cap | calls |",
        "|---|---|---|---|---|",
    ]
    for cell, rate in enumerate(FAIL_RATES):
        endpoint = Endpoint(REGRESSION_MEDIAN, 0.25, fail_rate=rate)
        before = after = by_policy = calls = 0
        for run in range(runs):
            out = gate_run(endpoint, run_rng("d", cell, run), plan=plan)
            before += out.classic_error_rate > 0.01
            after += not out.passed["error_rate"]
            by_policy += out.by_policy["error_rate"]
            calls += out.calls.total
        rows.append(
            f"| {rate * 100:g} % | {pct(before / runs)} | {pct(after / runs)} "
            f"| {pct(by_policy / runs)} | {calls / runs:.0f} |"
        )
        progress(f"d {rate}: after {after / runs}")
    return "\n".join(rows)


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


TABLES: dict[str, Callable[[int, SamplingPlan], str]] = {
    "methods": table_methods,
    "false-alarms": table_false_alarms,
    "detection": table_detection,
    "budget": table_budget,
    "error-rate": table_error_rate,
    "bigger-base": table_bigger_base,
}


def _keeping_marks(table: str) -> Callable[[re.Match[str]], str]:
    return lambda match: match[1] + table + "\n" + match[2]


DEFAULT_RUNS = {
    "methods": 100,
    "false-alarms": 300,
    "detection": 300,
    "budget": 1000,
    "error-rate": 1000,
    "bigger-base": 200,
}


def write_tables(doc: Path, tables: dict[str, str]) -> None:
    """Replace each `<!-- statsim:NAME -->...<!-- /statsim:NAME -->` block in `doc`."""
    text = doc.read_text(encoding="utf-8")
    for name, table in tables.items():
        pattern = re.compile(
            rf"(<!-- statsim:{name} -->\n).*?(<!-- /statsim:{name} -->)", re.DOTALL
        )
        text, count = pattern.subn(_keeping_marks(table), text)
        if count != 1:
            raise SystemExit(f"{doc}: no statsim:{name} block")
    doc.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, help="simulated runs per cell, for every table")
    parser.add_argument("--only", choices=sorted(TABLES), action="append", help="some tables")
    parser.add_argument("--write", action="store_true", help="update docs/statistics.md")
    args = parser.parse_args(argv)
    names = args.only or list(TABLES)
    runs = {name: args.runs or DEFAULT_RUNS[name] for name in names}
    tables = {name: TABLES[name](runs[name], DEFAULT_PLAN) for name in names}
    for name, table in tables.items():
        print(f"## {name} ({runs[name]} runs a cell)\n\n{table}\n")
    if args.write:
        write_tables(ROOT / "docs" / "statistics.md", tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
