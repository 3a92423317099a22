"""Seeded simulations of the gate outside the shapes of table (a): failures in clumps and tails
heavier than sigma 0.6 (docs/statistics.md, tables (l) and (m); run through bench/statsim.py).

    python bench/statsim.py --only clumps --only tails --write

As everywhere in statsim, each run is the shipped `Gate` driven look by look
(bench/gatesim.py): only the endpoint is simulated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from gatesim import Endpoint, Outcome, Settings, lognormal, pareto, rng_for, run

from latency_gate.config.plan import hypotheses

# --- failures in clumps ----------------------------------------------------------------------

CLUMP_SHARES = (0.005, 0.01, 0.02, 0.03)
CLUMP_LENGTHS = (1, 5, 10)
# The cost of a PASS that allows for clumps of 5 until the calls show theirs: its clean PASS
# needs 651 calls, and with a few clumps seen a run needs up to about 1,500 to decide.
ALLOWING = 5
ALLOWING_CAP = 1500


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def table_row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _error_tally(outs: Sequence[Outcome]) -> tuple[float, float, float, float]:
    """P(FAIL) of the error check, FAIL by its test, decided at the cap, mean calls."""
    runs = len(outs)
    checks = [o.checks["error_rate"] for o in outs]
    red = sum(c.passed is False for c in checks) / runs
    by_test = sum(c.passed is False and not c.by_policy for c in checks) / runs
    capped = sum(c.by_policy for c in checks) / runs
    return red, by_test, capped, sum(o.calls for o in outs) / runs


def _allowing(endpoint: Endpoint, table: str, number: int, runs: int) -> list[Outcome]:
    """Runs with the PASS allowing for clumps of ALLOWING calls
    (config.plan.hypotheses.ERROR_CLUMP) and a cap that leaves it room."""
    kept = hypotheses.ERROR_CLUMP
    hypotheses.ERROR_CLUMP = ALLOWING
    try:
        settings = Settings(max_calls=ALLOWING_CAP)
        return [run(endpoint, rng_for(table, number, i), settings) for i in range(runs)]
    finally:
        hypotheses.ERROR_CLUMP = kept


def table_clumps(runs: int, progress: Callable[[str], None]) -> str:
    """The error budget 0.01 when failures come in clumps of 1, 5 and 10 calls in a row: the
    shipped test (clumps counted as events, a PASS on clean calls as before) and the same test
    allowing for clumps of 5 on the PASS side, with the calls that costs."""
    rows = [
        table_row(
            "true failure share",
            "clumps of",
            "P(FAIL)",
            "FAIL by the test",
            "decided at the cap",
            "calls",
            f"allowing clumps of {ALLOWING}, max-calls {ALLOWING_CAP:,}: P(FAIL)",
            "calls",
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    number = 0
    for share in CLUMP_SHARES:
        for length in CLUMP_LENGTHS:
            endpoint = lognormal(0.3, multiple=0.5, fail_rate=share, fail_clump=length)
            shipped = [run(endpoint, rng_for("clumps", number, i)) for i in range(runs)]
            red, by_test, capped, calls = _error_tally(shipped)
            costly = _error_tally(_allowing(endpoint, "clumps-allowing", number, runs))
            rows.append(
                table_row(
                    f"{share * 100:g} %",
                    str(length),
                    pct(red),
                    pct(by_test),
                    pct(capped),
                    f"{calls:.0f}",
                    pct(costly[0]),
                    f"{costly[3]:.0f}",
                )
            )
            progress(f"clumps {rows[-1]}")
            number += 1
    return "\n".join(rows)


# --- tails heavier than sigma 0.6 ---------------------------------------------------------------

TAIL_MULTIPLES = (0.8, 0.9, 1.0, 1.1, 1.25)
ONLY = {
    "warm_p95": {"max_concurrent_p95": None, "max_error_rate": None},
    "concurrent_p95": {"max_warm_p95": None, "max_error_rate": None},
}


def heavy_shapes() -> list[tuple[str, Callable[..., Endpoint]]]:
    return [
        ("lognormal, sigma 1.0", lambda **f: lognormal(1.0, **f)),
        ("Pareto, alpha 2.5", lambda **f: pareto(2.5, **f)),
    ]


def _red(outs: Iterable[Outcome], check: str) -> tuple[float, float]:
    """Share of runs whose `check` did not pass, and of those whose sentence says the tail is
    heavier than the promise."""
    listed = list(outs)
    red = [o for o in listed if o.failed(check)]
    said = sum("the tail is heavy" in o.checks[check].meaning for o in red)
    return len(red) / len(listed), said / len(listed)


def table_tails(runs: int, progress: Callable[[str], None]) -> str:
    """The budget checks on tails heavier than sigma 0.6, each latency check gated alone, and
    how often a red run's sentence says the tail is too heavy for the promise."""
    from latency_gate.config import Budget

    rows = [
        table_row(
            "shape",
            "true p95 / budget",
            "calls over the budget",
            "warm p95 red",
            "concurrent p95 red",
            "red and said too heavy (warm, concurrent)",
            "run red (default budget)",
            "calls",
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    number = 0
    for label, make in heavy_shapes():
        for multiple in TAIL_MULTIPLES:
            endpoint = make(multiple=multiple)
            found: dict[str, tuple[float, float]] = {}
            for check, off in ONLY.items():
                settings = Settings(budget=Budget(**off))
                outs = [run(endpoint, rng_for("tails", number, i), settings) for i in range(runs)]
                found[check] = _red(outs, check)
            whole = [run(endpoint, rng_for("tails-run", number, i)) for i in range(runs)]
            calls = sum(o.calls for o in whole) / runs
            red = sum(not o.verdict.passed for o in whole) / runs
            rows.append(
                table_row(
                    label,
                    f"{multiple:g}x",
                    pct(endpoint.warm.share_over(multiple)),
                    pct(found["warm_p95"][0]),
                    pct(found["concurrent_p95"][0]),
                    f"{pct(found['warm_p95'][1])}, {pct(found['concurrent_p95'][1])}",
                    pct(red),
                    f"{calls:.0f}",
                )
            )
            progress(f"tails {rows[-1]}")
            number += 1
    return "\n".join(rows)


# --- a slow creep of main's runs ------------------------------------------------------------------

CREEP_TAUS = (0.05, 0.1, 0.2)
CREEP_RUNS = 40
CREEP_WINDOW = 10


def _creep_sequence(
    number: int, replicate: int, *, growth: float, tau: float
) -> tuple[list[bool], list[bool]]:
    """One sequence of CREEP_RUNS runs of an endpoint growing `growth` a run, drift tau between
    runs: for each run from the window's end on, whether the shipped rules warned of a creep
    (assess/compare/creep.py, over the window before it) and whether the head's prediction rule
    (assess/compare/history.py) called it a regression."""
    from gatesim import Drift

    from latency_gate.assess.compare.creep import creep
    from latency_gate.assess.compare.history import predict

    rng = rng_for("creep", number, replicate)
    base = lognormal(0.25, multiple=0.2)
    numbers = []
    for i in range(CREEP_RUNS):
        endpoint = base if not growth else replace_scale(base, (1 + growth) ** i)
        numbers.append(run(endpoint, rng, drift=Drift(tau=tau)).numbers)
    warned: list[bool] = []
    flagged: list[bool] = []
    for i in range(CREEP_WINDOW, CREEP_RUNS):
        window = numbers[i - CREEP_WINDOW : i]
        warn = flag = False
        for name in ("warm_p95", "concurrent_p95"):
            values = [getattr(n, name) for n in window]
            found = creep(name, values)
            warn = warn or (found is not None and found.flagged)
            head = getattr(numbers[i], name)
            prediction = predict(head, values, max_relative=0.10)
            flag = flag or (prediction is not None and prediction.regressed)
        warned.append(warn)
        flagged.append(flag)
    return warned, flagged


def replace_scale(endpoint: Endpoint, scale: float) -> Endpoint:
    from dataclasses import replace

    return replace(endpoint, scale=scale)


def table_creep(runs: int, progress: Callable[[str], None]) -> str:
    """The trend test of a history of 10 runs (assess/compare/creep.py) and the head's prediction
    rule, over sequences of 40 runs: an unchanged endpoint (false warnings a run) and one growing 2
    % a run (2.16x after 40), with drift tau between runs."""
    rows = [
        table_row(
            "endpoint",
            "drift tau",
            "creep warned, a run",
            "head called a regression, a run",
            "first warned by run 20 / 30 / 40",
            "size at run 20 / 30 / 40",
        ),
        "|---|---|---|---|---|---|",
    ]
    number = 0
    for label, growth in (("unchanged", 0.0), ("+2 % a run", 0.02)):
        for tau in CREEP_TAUS:
            sequences = [_creep_sequence(number, r, growth=growth, tau=tau) for r in range(runs)]
            per_run = sum(sum(w) for w, _ in sequences) / sum(len(w) for w, _ in sequences)
            heads = sum(sum(f) for _, f in sequences) / sum(len(f) for _, f in sequences)
            by = []
            for run_number in (20, 30, 40):
                upto = run_number - CREEP_WINDOW
                by.append(pct(sum(any(w[:upto]) for w, _ in sequences) / runs))
            sizes = " / ".join(f"{(1 + growth) ** (n - 1):.2f}x" for n in (20, 30, 40))
            rows.append(
                table_row(label, f"{tau:g}", pct(per_run), pct(heads), " / ".join(by), sizes)
            )
            progress(f"creep {rows[-1]}")
            number += 1
    return "\n".join(rows)
