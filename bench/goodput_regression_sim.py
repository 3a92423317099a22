"""Seeded simulations of the goodput's regression row: how often a nightly goodput search is
called REGRESSED, or left undecided, against an earlier night or a history of nights, when the
endpoint is unchanged and when it became slower, with nights that drift.

    python bench/goodput_regression_sim.py --write        # the table of docs/statistics.md
    python bench/goodput_regression_sim.py --runs 40      # quicker and coarser, prints only

Every search is bench/goodputsim.py's (the shipped `RateSearch`, `start_rate`, `due_times` and
`OpenLevel`, on endpoints of n slots with lognormal service times), and every comparison is the
shipped `search_delta` (assess/load/regression.py) with the default 10 % limit, so a figure is
what a user gets: "FAIL" counts the regressions it decides, and with on-undecided-regression:
fail the undecided ones too.

A run is five earlier nights and this one. Each night's service times are the endpoint's times
a night factor: exp(N(0, drift)) (drift 0: nights alike; 0.1: a night's speed moves about 10 %,
as a shared endpoint's load does), and this night's are also `slower` times the earlier ones'.
"one earlier run" compares this night with the newest earlier one (`--baseline`, or a history
of fewer than 3 runs); "history" with the median of the five (`--history`). The true drop is
the long-run goodput's (bench/goodputsim.truth, by time rescaling: an endpoint k times slower
holds at budget B what the endpoint holds at B / k, divided by k), without drift.
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parent))

from goodputsim import (
    ROOT,
    TRUTH_CALLS,
    Found,
    budget_of,
    length_for,
    searched,
    start_of,
    truth,
)
from statsim import pct, progress, table_row, write_tables

from latency_gate.assess.load.levels import LevelLimits
from latency_gate.assess.load.regression import search_delta
from latency_gate.config.regression import RegressionLimit
from latency_gate.models import Goodput, NumberDelta

CELLS = ((1, 0.3), (4, 0.3), (4, 0.6))
SLOWER = (1.0, 1.05, 1.25, 1.5)
DRIFTS = (0.0, 0.1)
LIMITS = (0.10, 0.20)  # --max-regression's relative limit
NIGHTS = 5
DEFAULT_RUNS = 100


@dataclass(frozen=True)
class Row:
    slots: int
    sigma: float
    drift: float
    limit: float
    slower: float
    true_drop: float
    one_regressed: float  # against one earlier run: decided regressed
    one_undecided: float
    history_regressed: float  # against the median of the five
    history_undecided: float
    runs: int


def as_goodput(found: Found, budget: float) -> Goodput:
    """The search's figure as RateRun.goodput gives it (the levels left out: search_delta reads
    the figure, its bounds and the budget)."""
    return Goodput(
        search=True,
        found=found.rate,
        upper=found.upper,
        breaking=found.broke,
        complete=True,
        limit=budget,
        start=found.start,
        precision=1.1,
        level_seconds=None,
        level_calls=1000,
        warmup=0.0,
        hold=0.0,
        calls=found.calls,
        seconds=found.seconds,
        levels=(),
    )


def night(slots: int, sigma: float, scale: float, seed: str) -> Found:
    budget = budget_of(sigma)
    rng = random.Random(seed)
    start = start_of(slots, sigma, rng, scale)
    limits = LevelLimits(concurrent_p95=budget)
    length = length_for(budget)
    return searched(
        start, slots=slots, sigma=sigma, limits=limits, length=length, rng=rng, scale=scale
    )


@functools.cache
def true_goodput(slots: int, sigma: float, slower: float) -> float:
    return truth(slots, sigma, budget_of(sigma) / slower, TRUTH_CALLS // 3) / slower


def cell(slots: int, sigma: float, drift: float, runs: int) -> list[Row]:
    """Every `SLOWER` of one endpoint and drift, on the same earlier nights, at each of `LIMITS`
    (the same searches compared at each)."""
    started = time.monotonic()
    budget = budget_of(sigma)
    base_truth = true_goodput(slots, sigma, 1.0)
    outcomes: dict[tuple[float, float, bool], list[NumberDelta]] = {}
    for run in range(runs):
        rng = random.Random(f"nights/{slots}/{sigma}/{drift}/{run}")
        factors = [math.exp(rng.gauss(0.0, drift)) for _ in range(NIGHTS + 1)]
        earlier = [
            as_goodput(night(slots, sigma, f, f"night/{slots}/{sigma}/{drift}/{run}/{i}"), budget)
            for i, f in enumerate(factors[:NIGHTS])
        ]
        for slower in SLOWER:
            seed = f"head/{slots}/{sigma}/{drift}/{run}/{slower}"
            head = as_goodput(night(slots, sigma, slower * factors[NIGHTS], seed), budget)
            for limit in LIMITS:
                for history in (False, True):
                    bases = earlier if history else earlier[-1:]
                    delta = search_delta(
                        "goodput", head, bases, RegressionLimit(relative=limit), history=history
                    )
                    assert delta is not None
                    outcomes.setdefault((slower, limit, history), []).append(delta)

    def share(slower: float, limit: float, history: bool, outcome: str) -> float:
        return fmean(d.outcome == outcome for d in outcomes[slower, limit, history])

    progress(f"  {slots} slots, sigma {sigma}, drift {drift}: {time.monotonic() - started:.0f} s")
    return [
        Row(
            slots=slots,
            sigma=sigma,
            drift=drift,
            limit=limit,
            slower=slower,
            true_drop=1 - true_goodput(slots, sigma, slower) / base_truth,
            one_regressed=share(slower, limit, False, "regressed"),
            one_undecided=share(slower, limit, False, "undecided"),
            history_regressed=share(slower, limit, True, "regressed"),
            history_undecided=share(slower, limit, True, "undecided"),
            runs=runs,
        )
        for limit in LIMITS
        for slower in SLOWER
    ]


def table(rows: Sequence[Row]) -> str:
    """A row per night's slowdown: against one earlier run and against the history, the share
    of runs FAIL (the regressions decided; with on-undecided-regression: fail, add the
    undecided) and undecided."""
    lines = [
        table_row(
            "slots n",
            "sigma",
            "nights' drift",
            "max-regression",
            "this night slower by",
            "true goodput drop",
            "one earlier run: FAIL / undecided",
            "history of 5: FAIL / undecided",
        ),
        table_row(*["--:"] * 8),
    ]
    for r in rows:
        if r.limit != LIMITS[0] and r.drift == 0:
            continue  # the wider limit is for nights that drift
        lines.append(
            table_row(
                str(r.slots),
                f"{r.sigma:g}",
                f"{r.drift:g}",
                f"{r.limit * 100:.0f} %",
                f"{(r.slower - 1) * 100:.0f} %",
                f"{r.true_drop * 100:.1f} %",
                f"{pct(r.one_regressed)} / {pct(r.one_undecided)}",
                f"{pct(r.history_regressed)} / {pct(r.history_undecided)}",
            )
        )
    runs = {r.runs for r in rows}
    return "\n".join(lines) + f"\n\n({', '.join(map(str, sorted(runs)))} runs a row.)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="simulated runs a cell")
    parser.add_argument("--write", action="store_true", help="update docs/statistics.md")
    args = parser.parse_args(argv)
    rows = [
        row
        for slots, sigma in CELLS
        for drift in DRIFTS
        for row in cell(slots, sigma, drift, args.runs)
    ]
    text = table(rows)
    print(text)
    if args.write:
        write_tables(ROOT / "docs" / "statistics.md", {"regression": text}, marker="goodputsim")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
