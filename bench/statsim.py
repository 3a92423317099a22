"""Seeded simulations of the shipped gate: the tables of docs/statistics.md.

    python bench/statsim.py --write          # every table, as in docs/statistics.md
    python bench/statsim.py --runs 100       # every table at 100 runs a cell: quicker, coarser
    python bench/statsim.py --only budget    # one table

Every run goes through the gate itself (bench/gatesim.py drives latency_gate.assess's Gate look
by look and judges with the function `assess_run` uses), so a figure is what a user gets: a
check undecided at the cap counts as the policy decides it. Latencies come from three shapes:
lognormal with sigma 0.3 (a steady API) and 0.6 (the heavy tail of LLM answers of varied
length), and the recorded calls of the llama.cpp test server (bench/data/llama_shape.json,
bench/llama_shape.py). Runs are seeded by (table, cell, run): the same code gives the same
figures.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import candidates  # noqa: E402
import llmsim  # noqa: E402
import shapesim  # noqa: E402
from gatesim import (  # noqa: E402
    Drift,
    Endpoint,
    Outcome,
    Settings,
    llama,
    llama_starved,
    lognormal,
    rng_for,
    run,
    run_ab,
)

from latency_gate.assess.compare.history import predict  # noqa: E402
from latency_gate.config import Budget  # noqa: E402

LATENCY = ("warm_p95", "concurrent_p95")


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def table_row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def shapes() -> list[tuple[str, Callable[..., Endpoint]]]:
    """The four shapes of the budget tables, by label."""
    return [
        ("lognormal, sigma 0.3", lambda **f: lognormal(0.3, **f)),
        ("lognormal, sigma 0.6", lambda **f: lognormal(0.6, **f)),
        ("llama.cpp, recorded", llama),
        ("llama.cpp, starved machine", llama_starved),
    ]


@dataclass(frozen=True)
class Tally:
    """Shares over the runs of one cell."""

    runs: int
    red: dict[str, float]  # per check: did not pass (FAIL by the test or by the policy)
    by_value: dict[str, float]  # per check: decided at the cap (by value or policy)
    run_red: float
    calls: float
    looks: float


def tally(outcomes: Iterable[Outcome], names: Sequence[str]) -> Tally:
    red = dict.fromkeys(names, 0)
    by_value = dict.fromkeys(names, 0)
    run_red = calls = looks = runs = 0
    for out in outcomes:
        runs += 1
        for name in names:
            red[name] += out.failed(name)
            by_value[name] += out.checks[name].by_policy
        run_red += not out.verdict.passed
        calls += out.calls
        looks += out.looks
    return Tally(
        runs,
        {k: v / runs for k, v in red.items()},
        {k: v / runs for k, v in by_value.items()},
        run_red / runs,
        calls / runs,
        looks / runs,
    )


def cell(
    table: str, number: int, runs: int, endpoint: Endpoint, settings: Settings | None = None
) -> list[Outcome]:
    """`runs` seeded runs of the gate against `endpoint`."""
    chosen = settings or Settings()
    return [run(endpoint, rng_for(table, number, i), chosen) for i in range(runs)]


# --- budget -----------------------------------------------------------------------------------

MULTIPLES = (0.8, 0.9, 1.0, 1.1, 1.25)


ONLY = {
    "warm_p95": Budget(max_concurrent_p95=None, max_error_rate=None),
    "concurrent_p95": Budget(max_warm_p95=None, max_error_rate=None),
}


def red_alone(
    table: str,
    number: int,
    runs: int,
    endpoint: Endpoint,
    check: str,
    *,
    on_undecided: str = "estimate",
) -> Tally:
    """One latency check gated alone (the others off), so that its own rate is seen: with every
    check gated, a run stops at the first FAIL and the other checks are not needed."""
    settings = Settings(budget=ONLY[check], on_undecided=on_undecided)
    return tally(cell(table, number, runs, endpoint, settings), (check,))


def table_budget(runs: int) -> str:
    """P(red) per latency check (gated alone) and per run (default budget), by shape and true
    p95 / budget, with the default policy (estimate) and with on-undecided fail; calls and looks
    of a run with the default budget."""
    rows = [
        "| shape | true p95 / budget | calls over the budget (warm, concurrent) "
        "| warm p95 red | concurrent p95 red | run red "
        "| decided at the cap (warm, concurrent) | on-undecided fail: warm, concurrent red "
        "| calls | looks |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    number = 0
    for label, make in shapes():
        for multiple in MULTIPLES:
            endpoint = make(multiple=multiple)
            warm = red_alone("budget-w", number, runs, endpoint, "warm_p95")
            concurrent = red_alone("budget-c", number, runs, endpoint, "concurrent_p95")
            warm_strict = red_alone(
                "budget-w", number, runs, endpoint, "warm_p95", on_undecided="fail"
            )
            concurrent_strict = red_alone(
                "budget-c", number, runs, endpoint, "concurrent_p95", on_undecided="fail"
            )
            whole = tally(cell("budget", number, runs, endpoint), LATENCY)
            rows.append(
                table_row(
                    label,
                    f"{multiple:g}x",
                    f"{pct(endpoint.warm.share_over(multiple))}, "
                    f"{pct(endpoint.concurrent.share_over(multiple))}",
                    pct(warm.red["warm_p95"]),
                    pct(concurrent.red["concurrent_p95"]),
                    pct(whole.run_red),
                    f"{pct(warm.by_value['warm_p95'])}, "
                    f"{pct(concurrent.by_value['concurrent_p95'])}",
                    f"{pct(warm_strict.red['warm_p95'])}, "
                    f"{pct(concurrent_strict.red['concurrent_p95'])}",
                    f"{whole.calls:.0f}",
                    f"{whole.looks:.1f}",
                )
            )
            progress(f"budget {rows[-1]}")
            number += 1
    return "\n".join(rows)


def table_whole(runs: int) -> str:
    """The whole run at 0.8x on the three shapes table (a)'s targets are for (not the starved
    one): a run is red when either check fails, so it is red at least as often as the runs
    where each check fails; each run's red checks counted on table (a)'s whole-run seeds (its
    1,000 are the first of them), with two standard errors of the share (at least 3 / runs,
    the 95 % bound of a share never seen)."""
    rows = [
        "| shape | true p95 / budget | run red (± 2 s.e.) | warm p95 red in the run "
        "| concurrent p95 red in the run | both | runs |",
        "|---|---|---|---|---|---|---|",
    ]
    number = 0
    for label, make in shapes()[:3]:  # table (a)'s numbering: the starved shape is the last
        for multiple in MULTIPLES:
            if multiple == 0.8:
                outs = cell("budget", number, runs, make(multiple=multiple))
                red = sum(not out.verdict.passed for out in outs) / runs
                warm = sum(out.failed("warm_p95") for out in outs) / runs
                concurrent = sum(out.failed("concurrent_p95") for out in outs) / runs
                both = (
                    sum(out.failed("warm_p95") and out.failed("concurrent_p95") for out in outs)
                    / runs
                )
                error = max(2 * math.sqrt(red * (1 - red) / runs), 3 / runs)  # none: 3/n
                rows.append(
                    table_row(
                        label,
                        f"{multiple:g}x",
                        f"{pct(red)} ± {pct(error)}",
                        pct(warm),
                        pct(concurrent),
                        pct(both),
                        f"{runs:,}",
                    )
                )
                progress(f"whole {rows[-1]}")
            number += 1
    return "\n".join(rows)


def table_correlated(runs: int) -> str:
    """The concurrent check when the calls of a burst share the endpoint's load: each burst
    multiplied by one factor exp(N(0, tau)), the p95 over calls held at the multiple."""
    rows = [
        "| burst factor tau | 0.8x: concurrent p95 red | 1.25x: concurrent p95 red | calls |",
        "|---|---|---|---|",
    ]
    for number, tau in enumerate((0.0, 0.1, 0.2, 0.3)):
        healthy = red_alone(
            "corr", 2 * number, runs, lognormal(0.6, multiple=0.8, burst_tau=tau), "concurrent_p95"
        )
        slow = red_alone(
            "corr",
            2 * number + 1,
            runs,
            lognormal(0.6, multiple=1.25, burst_tau=tau),
            "concurrent_p95",
        )
        rows.append(
            table_row(
                f"{tau:g}",
                pct(healthy.red["concurrent_p95"]),
                pct(slow.red["concurrent_p95"]),
                f"{healthy.calls:.0f}",
            )
        )
        progress(f"corr {rows[-1]}")
    return "\n".join(rows)


# --- error rate --------------------------------------------------------------------------------

FAIL_SHARES = (0.0, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05)


def table_error_rate(runs: int) -> str:
    """The error budget 0.01: P(FAIL) by true failure share, how often the cap decided, calls,
    and PASSes printed beside a rate over the budget."""
    rows = [
        "| true failure share | P(FAIL) | decided at the cap | PASS beside a rate over 1 % "
        "| on-undecided fail: P(FAIL) | calls |",
        "|---|---|---|---|---|---|",
    ]
    for number, share in enumerate(FAIL_SHARES):
        endpoint = lognormal(0.3, multiple=0.5, fail_rate=share)
        outs = cell("error", number, runs, endpoint)
        default = tally(outs, ("error_rate",))
        over = sum(
            o.checks["error_rate"].passed is True and (o.numbers.error_rate > 0.01) for o in outs
        )
        strict = tally(
            cell("error", number, runs, endpoint, Settings(on_undecided="fail")), ("error_rate",)
        )
        rows.append(
            table_row(
                f"{share * 100:g} %",
                pct(default.red["error_rate"]),
                pct(default.by_value["error_rate"]),
                pct(over / runs),
                pct(strict.red["error_rate"]),
                f"{default.calls:.0f}",
            )
        )
        progress(f"error {rows[-1]}")
    return "\n".join(rows)


# --- caps -------------------------------------------------------------------------------------

CAPS: tuple[int | None, ...] = (31, 71, 121, 200, 300, None)


def table_caps(runs: int) -> str:
    """What max-calls does: a perfect endpoint (far under budget, no failure) and a healthy one
    (sigma 0.6 at 0.8x, 0.5 % failures), each policy. A cap under what a perfect endpoint needs
    is refused with on-undecided fail (exit 2, before any call)."""
    rows = [
        "| max-calls | perfect: run red (estimate) | healthy: run red (estimate) "
        "| healthy: run red (fail) | healthy: calls |",
        "|---|---|---|---|---|",
    ]
    from latency_gate.config.plan.needs import calls_needed

    minimum = calls_needed(Budget(), warm_calls=20, concurrency=10).minimum
    for number, cap in enumerate(CAPS):
        perfect = tally(
            cell("caps", 2 * number, runs, lognormal(0.3, multiple=0.3), Settings(max_calls=cap)),
            LATENCY,
        )
        healthy_ep = lognormal(0.6, multiple=0.8, fail_rate=0.005)
        healthy = tally(
            cell("caps", 2 * number + 1, runs, healthy_ep, Settings(max_calls=cap)), LATENCY
        )
        if cap is not None and cap < minimum:
            strict = "refused (exit 2)"
        else:
            fail = Settings(max_calls=cap, on_undecided="fail")
            strict = pct(tally(cell("caps", 100 + number, runs, healthy_ep, fail), LATENCY).run_red)
        rows.append(
            table_row(
                "auto (500)" if cap is None else str(cap),
                pct(perfect.run_red),
                pct(healthy.run_red),
                strict,
                f"{healthy.calls:.0f}",
            )
        )
        progress(f"caps {rows[-1]}")
    return "\n".join(rows)


# --- interval coverage -------------------------------------------------------------------------


def _misses(outs: Iterable[Outcome], number: str, truth: float) -> tuple[float, float, int]:
    """Shares of runs whose shown 95 % interval of the p95 lies above the truth (lower side
    missed) and below it (upper side missed; only runs whose upper side exists count), and how
    many runs had an upper side."""
    low_miss = high_miss = with_high = runs = 0
    for out in outs:
        runs += 1
        low, high = out.checks[number].interval or (None, None)
        low_miss += low is not None and low > truth
        if high is not None:
            with_high += 1
            high_miss += high < truth
    return low_miss / runs, (high_miss / with_high if with_high else math.nan), with_high


def table_coverage(runs: int) -> str:
    """How often the shown 95 % interval of a p95 misses the true p95, each side (nominal 2.5 %),
    for an endpoint at its budget, after the run's looks (the interval is computed at the stop,
    which the sequential sampling chose)."""
    rows = [
        "| endpoint at 1.0x | warm: low side missed | warm: high side missed "
        "| concurrent: low side missed | concurrent: high side missed |",
        "|---|---|---|---|---|",
    ]
    cases: list[tuple[str, Endpoint]] = [
        ("lognormal sigma 0.3", lognormal(0.3, multiple=1.0)),
        ("lognormal sigma 0.6", lognormal(0.6, multiple=1.0)),
        ("sigma 0.6, bursts correlated (tau 0.2)", lognormal(0.6, multiple=1.0, burst_tau=0.2)),
        ("sigma 0.6, whole milliseconds", lognormal(0.6, multiple=1.0, quantum=0.001)),
        ("sigma 0.6, whole 100 ms", lognormal(0.6, multiple=1.0, quantum=0.1)),
    ]
    for number, (label, endpoint) in enumerate(cases):
        outs = cell("coverage", number, runs, endpoint)
        truth = 1.0 * endpoint.budget
        if endpoint.quantum:
            truth = math.ceil(truth / endpoint.quantum) * endpoint.quantum
        warm = _misses(outs, "warm_p95", truth)
        concurrent = _misses(outs, "concurrent_p95", truth)
        rows.append(
            table_row(
                label,
                pct(warm[0]),
                f"{pct(warm[1])} (of {warm[2]})",
                pct(concurrent[0]),
                f"{pct(concurrent[1])} (of {concurrent[2]})",
            )
        )
        progress(f"coverage {rows[-1]}")
    return "\n".join(rows)


# --- regressions against one earlier run ----------------------------------------------------------

REGRESSION_SIGMAS = (0.25, 0.5)
BASE_FAIL_RATE = 0.005


def _pairs(
    table: str, number: int, runs: int, base_ep: Endpoint, head_ep: Endpoint
) -> list[Outcome]:
    outs = []
    for i in range(runs):
        rng = rng_for(table, number, i)
        base = run(base_ep, rng)
        outs.append(run(head_ep, rng, base=base.samples))
    return outs


def _regression_row(outs: Sequence[Outcome]) -> tuple[float, float, float, float, float]:
    runs = len(outs)
    flagged = {n: sum(o.regressed(n) for o in outs) / runs for n in (*LATENCY, "error_rate")}
    any_flagged = sum(any(o.regressed(n) for n in flagged) for o in outs) / runs
    undecided = sum(bool(o.verdict.undecided) and o.verdict.passed for o in outs) / runs
    red = sum(not o.verdict.passed for o in outs) / runs
    return max(flagged.values()), any_flagged, undecided, red, sum(o.calls for o in outs) / runs


def table_regressions(runs: int) -> str:
    """Against one earlier run (`--baseline`): an unchanged endpoint (with +5 % drift between
    the runs), and real regressions. Flagged: called a regression; warned: a PASS whose verdict
    line names an undecided regression; red: the run FAILed for any reason (0.5 % failures on
    both sides, far under the latency budget)."""
    rows = [
        "| head | sigma | flagged (worst number) | any number flagged | PASS with an "
        "undecided regression warned | run red | head calls |",
        "|---|---|---|---|---|---|---|",
    ]
    changes: list[tuple[str, Callable[[Endpoint], Endpoint]]] = [
        ("unchanged", lambda e: e),
        ("unchanged, +5 % drift", lambda e: replace(e, scale=1.05)),
        ("every call +25 %", lambda e: replace(e, scale=1.25)),
        ("every call +50 %", lambda e: replace(e, scale=1.5)),
        ("10 % of calls 3x slower", lambda e: replace(e, slow_share=0.1, slow_factor=3.0)),
    ]
    number = 0
    for label, change in changes:
        for sigma in REGRESSION_SIGMAS:
            base_ep = lognormal(sigma, multiple=0.2, fail_rate=BASE_FAIL_RATE)
            head_ep = change(base_ep)
            worst, any_flagged, warned, red, calls = _regression_row(
                _pairs("regression", number, runs, base_ep, head_ep)
            )
            rows.append(
                table_row(
                    label,
                    f"{sigma:g}",
                    pct(worst),
                    pct(any_flagged),
                    pct(warned),
                    pct(red),
                    f"{calls:.0f}",
                )
            )
            progress(f"regression {rows[-1]}")
            number += 1
    return "\n".join(rows)


# --- A/B in one run (--baseline-url) --------------------------------------------------------------

AB_CHANGES: list[tuple[str, Callable[[Endpoint], Endpoint]]] = [
    ("unchanged", lambda e: e),
    ("+5 % (under the 10 % limit)", lambda e: replace(e, scale=1.05)),
    ("every call +25 %", lambda e: replace(e, scale=1.25)),
    ("10 % of calls 3x slower", lambda e: replace(e, slow_share=0.1, slow_factor=3.0)),
]
AB_DRIFTS: list[tuple[str, Drift]] = [
    ("none", Drift()),
    ("tau 0.2", Drift(tau=0.2)),
    ("+50 % from call 100", Drift(step_at=100, step=1.5)),
]


def _ab_row(outs: Sequence[Outcome]) -> tuple[float, float, float, float, float, float]:
    runs = len(outs)
    warm = sum(o.regressed("warm_p95") for o in outs) / runs
    concurrent = sum(o.regressed("concurrent_p95") for o in outs) / runs
    any_flagged = sum(any(o.regressed(n) for n in (*LATENCY, "error_rate")) for o in outs) / runs
    warned = sum(bool(o.verdict.undecided) and o.verdict.passed for o in outs) / runs
    red = sum(not o.verdict.passed for o in outs) / runs
    return warm, concurrent, any_flagged, warned, red, sum(o.calls for o in outs) / runs


def table_ab(runs: int) -> str:
    """A/B in one run: the base measured beside the head, calls interleaved in the engine's
    order, drift shared by both arms (a factor per run, or a step of +50 % a third of the way
    in). Flagged: called a regression; warned: a PASS that names an undecided regression."""
    rows = [
        "| head against base | sigma | drift | warm p95 flagged | concurrent p95 flagged "
        "| any number flagged | PASS, undecided warned | calls per arm |",
        "|---|---|---|---|---|---|---|---|",
    ]
    number = 0
    for label, change in AB_CHANGES:
        for sigma in REGRESSION_SIGMAS:
            drifts = AB_DRIFTS if label == "unchanged" else AB_DRIFTS[:2]
            for drift_label, drift in drifts:
                base_ep = lognormal(sigma, multiple=0.2, fail_rate=BASE_FAIL_RATE)
                head_ep = change(base_ep)
                outs = [
                    run_ab(head_ep, base_ep, rng_for("ab", number, i), drift=drift)
                    for i in range(runs)
                ]
                warm, concurrent, any_flagged, warned, _, calls = _ab_row(outs)
                rows.append(
                    table_row(
                        label,
                        f"{sigma:g}",
                        drift_label,
                        pct(warm),
                        pct(concurrent),
                        pct(any_flagged),
                        pct(warned),
                        f"{calls:.0f}",
                    )
                )
                progress(f"ab {rows[-1]}")
                number += 1
    return "\n".join(rows)


# --- history (--history) -------------------------------------------------------------------------

HISTORY_SIZES = (3, 5, 10, 20)
HISTORY_TAUS = (0.0, 0.05, 0.1, 0.2)


def _history_flags(
    cell_number: int, runs: int, *, k: int, tau: float, change: Callable[[Endpoint], Endpoint]
) -> tuple[float, float, float]:
    """Share of runs whose warm p95, concurrent p95, and either, the shipped rule
    (assess/compare/history.py `predict`) calls a regression: K earlier runs and the head, each run
    with its own drift factor exp(N(0, tau)) between runs."""
    base_ep = lognormal(0.25, multiple=0.2)
    flags = {"warm_p95": 0, "concurrent_p95": 0}
    either = 0
    for i in range(runs):
        rng = rng_for("history", cell_number, i)
        history = [run(base_ep, rng, drift=Drift(tau=tau)).numbers for _ in range(k)]
        head = run(change(base_ep), rng, drift=Drift(tau=tau)).numbers
        hit = False
        for name in flags:
            values = [getattr(n, name) for n in history if getattr(n, name) is not None]
            found = predict(getattr(head, name), values, max_relative=0.10)
            if found is not None and found.regressed:
                flags[name] += 1
                hit = True
        either += hit
    return flags["warm_p95"] / runs, flags["concurrent_p95"] / runs, either / runs


def table_history(runs: int) -> str:
    """Against a history of K earlier runs (lognormal sigma 0.25), drift between runs tau:
    false alarms of an unchanged endpoint per number, and two regressions caught."""
    rows = [
        "| K | tau | unchanged: warm p95 flagged | unchanged: concurrent p95 flagged "
        "| 10 % of calls 3x slower caught | every call +50 % caught |",
        "|---|---|---|---|---|---|",
    ]
    number = 0
    for k in HISTORY_SIZES:
        for tau in HISTORY_TAUS:
            warm, concurrent, _ = _history_flags(number, runs, k=k, tau=tau, change=lambda e: e)
            _, _, tail = _history_flags(
                number + 1,
                runs,
                k=k,
                tau=tau,
                change=lambda e: replace(e, slow_share=0.1, slow_factor=3.0),
            )
            _, _, slower = _history_flags(
                number + 2, runs, k=k, tau=tau, change=lambda e: replace(e, scale=1.5)
            )
            rows.append(
                table_row(str(k), f"{tau:g}", pct(warm), pct(concurrent), pct(tail), pct(slower))
            )
            progress(f"history {rows[-1]}")
            number += 3
    return "\n".join(rows)


def table_earlier_run_drift(runs: int) -> str:
    """One earlier run as the baseline, an unchanged endpoint, drift between the two runs tau:
    how often a number is called a regression (what 'one earlier run: drift between runs is not
    accounted for' costs)."""
    rows = [
        "| tau | sigma | warm p95 flagged | concurrent p95 flagged | any number flagged |",
        "|---|---|---|---|---|",
    ]
    number = 0
    for tau in (0.0, 0.05, 0.1, 0.2):
        for sigma in REGRESSION_SIGMAS:
            base_ep = lognormal(sigma, multiple=0.2, fail_rate=BASE_FAIL_RATE)
            outs = []
            for i in range(runs):
                rng = rng_for("drift", number, i)
                base = run(base_ep, rng, drift=Drift(tau=tau))
                outs.append(run(base_ep, rng, base=base.samples, drift=Drift(tau=tau)))
            warm, concurrent, any_flagged, _, _, _ = _ab_row(outs)
            rows.append(
                table_row(f"{tau:g}", f"{sigma:g}", pct(warm), pct(concurrent), pct(any_flagged))
            )
            progress(f"drift {rows[-1]}")
            number += 1
    return "\n".join(rows)


TABLES: dict[str, Callable[[int], str]] = {
    "budget": table_budget,
    "whole": table_whole,
    "correlated": table_correlated,
    "error-rate": table_error_rate,
    "caps": table_caps,
    "coverage": table_coverage,
    "regressions": table_regressions,
    "ab": table_ab,
    "history": table_history,
    "earlier-run-drift": table_earlier_run_drift,
    "candidates": candidates.table,
    "llm-ab": lambda runs: llmsim.table(runs, progress),
    "clumps": lambda runs: shapesim.table_clumps(runs, progress),
    "tails": lambda runs: shapesim.table_tails(runs, progress),
    "creep": lambda runs: shapesim.table_creep(runs, progress),
}

DEFAULT_RUNS = {
    "budget": 1000,
    "whole": 2000,
    "correlated": 1000,
    "error-rate": 1000,
    "caps": 500,
    "coverage": 1000,
    "regressions": 300,
    "ab": 200,
    "history": 400,
    "earlier-run-drift": 300,
    "candidates": 300,
    "llm-ab": 300,
    "clumps": 500,
    "tails": 1000,
    "creep": 300,
}


def _keeping_marks(table: str) -> Callable[[re.Match[str]], str]:
    return lambda match: match[1] + table + "\n" + match[2]


def write_tables(doc: Path, tables: dict[str, str], marker: str = "statsim") -> None:
    """Replace each `<!-- MARKER:NAME -->...<!-- /MARKER:NAME -->` block in `doc`."""
    text = doc.read_text(encoding="utf-8")
    for name, table in tables.items():
        pattern = re.compile(
            rf"(<!-- {marker}:{name} -->\n).*?(<!-- /{marker}:{name} -->)", re.DOTALL
        )
        text, count = pattern.subn(_keeping_marks(table), text)
        if count != 1:
            raise SystemExit(f"{doc}: no {marker}:{name} block")
    doc.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, help="simulated runs per cell, for every table")
    parser.add_argument("--only", choices=sorted(TABLES), action="append", help="some tables")
    parser.add_argument("--write", action="store_true", help="update docs/statistics.md")
    args = parser.parse_args(argv)
    names = args.only or list(TABLES)
    runs = {name: args.runs or DEFAULT_RUNS[name] for name in names}
    tables = {name: TABLES[name](runs[name]) for name in names}
    for name, table in tables.items():
        print(f"## {name} ({runs[name]} runs a cell)\n\n{table}\n")
    if args.write:
        write_tables(ROOT / "docs" / "statistics.md", tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
