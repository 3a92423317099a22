"""The goodput of the llama.cpp test server with 1, 2 and 4 slots: latency-gate's search beside
guidellm's Poisson sweep, on the same server, model and budget.

    python bench/goodput_peers.py                      # 1, 2 and 4 slots, one round each
    python bench/goodput_peers.py --slots 2 --name goodput_peers_run2

Run by hand, not by CI (guidellm lives in a venv of its own: bench/llm_peers.py makes it and the
tokenizer it needs). For each slot count a new server (xllamacpp, SmolLM2-135M-Instruct Q4_1,
2 threads, in a process of its own) is started; one streamed call of --max-tokens tokens is
timed (the median of 3 after 5 warm-up calls) and the budget is --budget-calls times it. Then, one
after another on that server:

- latency-gate: `probe --goodput`, only concurrent p95 gated against the budget: open-loop
  Poisson levels, doubled then bisected, each decided by the p95's sequential test;
- guidellm 0.8.1: `--profile kind=sweep,strategy_type=poisson` (a synchronous run, a throughput
  run, then Poisson rates evenly between them), or with --guidellm-factors one
  `--profile kind=poisson,rate=R` run at each of latency-gate's figure times those factors (the
  sweep puts every rate above a small server's saturation: docs/benchmarks.md);
  --guidellm-requests requests a rate; its goodput is the highest rate whose share of requests
  within the budget (end to end) is at least 95 %, under every rate with less. guidellm
  0.8.1 seeds each worker process's Poisson generator alike: with its 10 workers, the gaps
  between requests come in runs of 10 equal ones (its own records' `targeted_start`), not a
  Poisson process; --guidellm-workers 1 makes them one. And it draws every run's gaps from one
  seed (42): each rate gets the same gaps, scaled; --guidellm-seed N gives run i the seed N + i.

vLLM's `bench serve --request-rate --goodput` needs vLLM itself, which does not install on this
CPU-only machine: it is not run. Reported per tool: the goodput, the levels tried (each one's
p95 from due, or share within the budget), the calls made and the wall time. Results go to
bench/results/NAME.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from capacity_peers import (  # noqa: E402 (one_call: the median of 3 after a warm-up)
    PROMPT,
    guidellm_command,
    made_and_latencies,
    one_call,
    p95_ms,
    peers_arguments,
    peers_setup,
    run_probe,
    write_results,
)
from llm_peers import LlamaServer, prompts_file  # noqa: E402


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_gate(base: str, budget: float, opts: argparse.Namespace, work: Path) -> dict[str, Any]:
    flags = [
        "--timeout", opts.timeout, "--max-concurrent-p95", f"{budget:.3f}s", "--goodput",
        "--goodput-time", opts.goodput_time, "--rate-for", opts.rate_for,
    ]  # fmt: skip
    result, printed, wall = run_probe(base, flags, work, max_tokens=opts.max_tokens, timeout=7200)
    (work / "gate.txt").write_text(printed)
    goodput = result["goodput"]
    run_calls = len(result["samples"])
    if goodput is None:  # the run stopped before its calls at a rate (the server did not answer)
        return {
            "goodput": 0.0,
            "not_measured": "; ".join(result["verdict"]["reasons"]) or "no calls at a rate",
            "levels": [],
            "search_calls": 0,
            "search_seconds": 0.0,
            "run_calls": run_calls,
            "calls": run_calls,
            "wall_seconds": round(wall, 1),
        }
    return {
        "goodput": goodput["found"],
        "breaking": goodput["breaking"],
        "upper": goodput.get("upper"),
        "complete": goodput["complete"],
        "stopped": goodput["stopped"],
        "levels": [
            {
                "rate": lv["rate"],
                "held": lv["held"],
                "near": lv.get("near", False),
                "p95_ms": None if lv["p95"] is None else round(lv["p95"] * 1000),
                "lag_p95_ms": None
                if lv["send_lag_p95"] is None
                else round(lv["send_lag_p95"] * 1000, 1),
                "calls": lv["calls"],
                "by": lv["decided_by"],
            }
            for lv in goodput["levels"]
        ],
        "search_calls": goodput["calls"],
        "search_seconds": round(goodput["seconds"], 1),
        "run_calls": run_calls,
        "calls": run_calls + goodput["calls"],
        "wall_seconds": round(wall, 1),
    }


def guidellm_rates(gate: dict[str, Any] | None, factors: list[float]) -> list[float]:
    """The Poisson rates guidellm runs at when placed by hand: latency-gate's figure times each
    factor, and its upper end when it said an interval, so that both tools' answers are read
    at the same rates; rounded to three digits."""
    if gate is None or not gate.get("goodput"):
        raise SystemExit("--guidellm-factors needs latency-gate's figure: run it first")
    rates = {float(f"{gate['goodput'] * f:.3g}") for f in factors}
    if gate.get("upper"):
        rates.add(float(f"{gate['upper']:.3g}"))
    return sorted(rates)


def run_guidellm(
    base: str,
    budget: float,
    opts: argparse.Namespace,
    work: Path,
    *,
    bin_dir: Path,
    tokenizer: Path,
    rates: list[float] | None = None,
) -> dict[str, Any]:
    """guidellm's sweep (`rates` None), or one Poisson run of --guidellm-requests at each of
    `rates`; its goodput is the highest rate with 95 % of requests within the budget, under
    every rate that had fewer."""
    profiles = (
        [f"kind=sweep,sweep_size={opts.sweep_size},strategy_type=poisson"]
        if rates is None
        else [f"kind=poisson,rate={rate}" for rate in rates]
    )
    env = dict(os.environ, PYTHONPATH="")
    if opts.guidellm_workers:
        env["GUIDELLM__MAX_WORKER_PROCESSES"] = str(opts.guidellm_workers)
    began = time.monotonic()
    log = work / "guidellm.log"
    benchmarks: list[dict[str, Any]] = []
    for i, profile in enumerate(profiles):
        out = work / f"guidellm-{i}.json"
        # Prompts of its own for every run: guidellm reads a file from its first row each time,
        # and llama.cpp's prompt cache then answers a prompt sent before with 1 token to
        # evaluate instead of 17 (seen at stop 37: a third less work for the server a call).
        count = opts.guidellm_requests * (opts.sweep_size + 2) + 100
        data = prompts_file(work / f"guidellm-{i}.jsonl", count, "prompt", PROMPT)
        # guidellm 0.8.1 draws every run's Poisson gaps from one seed (42 unless told): each
        # rate gets the same gaps, scaled (stop 38's records: 100 gaps, correlation 1.0
        # between runs), so its rates are one arrival pattern, not independent runs.
        seed = (
            ()
            if opts.guidellm_seed is None
            else ("--seed", f"kind=static,value={opts.guidellm_seed + i}")
        )
        cmd = guidellm_command(
            bin_dir, base, opts, profile, data=data, tokenizer=tokenizer, out=out, extra=seed
        )
        with log.open("a") as sink:
            done = subprocess.run(
                cmd, stdout=sink, stderr=subprocess.STDOUT, timeout=7200, check=False, env=env
            )
        if done.returncode != 0:
            raise RuntimeError(f"guidellm exited {done.returncode}: {log}")
        benchmarks += json.loads(out.read_text())["benchmarks"]
    wall = time.monotonic() - began
    levels = []
    calls = 0
    for benchmark in benchmarks:
        strategy = benchmark["config"]["strategy"]
        made, latencies, starts = made_and_latencies(benchmark)
        calls += made
        achieved = (
            (len(starts) - 1) / (starts[-1] - starts[0])
            if len(starts) > 1 and starts[-1] > starts[0]
            else None
        )
        within = sum(lat <= budget for lat in latencies) / made if made else 0.0
        levels.append(
            {
                "strategy": strategy.get("type_", strategy.get("type", "?")),
                "rate": strategy.get("rate"),
                "achieved": None if achieved is None else round(achieved, 3),
                "within": round(within, 3),
                "p95_ms": p95_ms(latencies),
                "calls": made,
            }
        )
    rated = [lv for lv in levels if lv["rate"] is not None]
    held = [lv["rate"] for lv in rated if lv["within"] >= 0.95]
    broke = [lv["rate"] for lv in rated if lv["within"] < 0.95]
    found = max((r for r in held if not broke or r < min(broke)), default=0.0)
    return {
        "goodput": found,
        "levels": levels,
        "calls": calls,
        "wall_seconds": round(wall, 1),
    }


def _outcome(level: dict[str, Any]) -> str:
    """held, near (undecided at its end: its calls could not tell) or broke; results written
    before `near` was kept say it by the level's end ("level cap")."""
    if level["held"]:
        return "held"
    near = level.get("near", level.get("by") == "level cap")
    return "near" if near else "broke"


def _figure(got: dict[str, Any]) -> str:
    """latency-gate's goodput as its report says it: a rate, an interval, at least or under."""
    found = got["goodput"]
    upper = got.get("upper")
    if upper is None and any(
        _outcome(lv) == "near" and lv["rate"] > found for lv in got["levels"]
    ):  # results written before `upper` was kept: the lowest rate that broke above the near ones
        upper = got.get("breaking")
    said = f"{found:.3g}/s" if upper is None else f"{found:.3g} to {upper:.3g}/s"
    return said if got.get("complete", True) else f"{said} (cut by its cap)"


def render(results: dict[str, Any]) -> str:
    lines = [
        f"# Goodput on llama.cpp: latency-gate beside guidellm ({results['date']})",
        "",
        f"Machine: {results['machine']}. Peers: {results['peers']}.",
        "",
        "| slots | one call | budget | tool | goodput | levels | calls | seconds | load |",
        "|--:|--:|--:|---|--:|---|--:|--:|---|",
    ]
    for row in results["rows"]:
        for tool in ("latency-gate", "guidellm"):
            got = row.get(tool)
            if got is None:
                continue
            if tool == "latency-gate":
                shown = ", ".join(
                    f"{lv['rate']:g}/s {_outcome(lv)} ({lv['p95_ms']} ms, {lv['calls']})"
                    for lv in got["levels"]
                )
                calls = f"{got['calls']} ({got['search_calls']} at a rate)"
                seconds = f"{got['wall_seconds']} ({got['search_seconds']} at a rate)"
            else:
                shown = ", ".join(
                    f"{lv['strategy']} {lv['rate'] or lv['achieved']:.3g}/s {lv['within']:.2f} "
                    f"({lv['p95_ms']} ms, {lv['calls']})"
                    for lv in got["levels"]
                    if (lv["rate"] or lv["achieved"]) is not None
                )
                calls, seconds = str(got["calls"]), str(got["wall_seconds"])
            figure = _figure(got) if tool == "latency-gate" else f"{got['goodput']:.3g}/s"
            lines.append(
                f"| {row['slots']} | {row['one_call_ms']} ms | {row['budget_ms']} ms | {tool} "
                f"| {figure} | {shown} | {calls} | {seconds} | {got['load']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    peers_arguments(parser, "goodput_peers")
    parser.add_argument("--guidellm-requests", type=int, default=60)
    parser.add_argument("--sweep-size", type=int, default=10)
    parser.add_argument(
        "--guidellm-workers",
        type=int,
        help="guidellm's worker processes (GUIDELLM__MAX_WORKER_PROCESSES; its default is 10). "
        "guidellm 0.8.1 seeds every worker's Poisson generator alike, so with 10 workers its "
        "gaps come in runs of 10 equal ones: 1 gives Poisson arrivals",
    )
    parser.add_argument(
        "--guidellm-seed",
        type=int,
        help="a seed of its own for each guidellm run, from this one up (`--seed "
        "kind=static,value=N`); without it every run draws the same gaps (guidellm's 42)",
    )
    parser.add_argument(
        "--guidellm-factors",
        type=lambda text: [float(f) for f in text.split(",")],
        help="instead of guidellm's sweep, Poisson runs at latency-gate's figure (and upper "
        "end) times each of these factors, such as 0.8,0.9,1,1.1,1.25",
    )
    parser.add_argument("--goodput-time", default="auto", help="latency-gate's --goodput-time")
    parser.add_argument("--rate-for", default="auto", help="latency-gate's --rate-for")
    parser.add_argument("--timeout", default="60s", help="latency-gate's --timeout")
    opts = parser.parse_args(argv)
    bin_dir, work_root, tokenizer = peers_setup(opts, "goodput-peers-")
    rows = []
    for slots in opts.slots:
        work = work_root / f"s{slots}"
        work.mkdir()
        server = LlamaServer(opts.model, work / "server.log", slots=slots)
        try:
            one_call(server.base, opts.max_tokens)  # a server's first calls are slow: warm it
            single = one_call(server.base, opts.max_tokens)
            budget = round(opts.budget_calls * single, 3)
            row: dict[str, Any] = {
                "slots": slots,
                "one_call_ms": round(single * 1000),
                "budget_ms": round(budget * 1000),
            }
            for tool in opts.tools:
                print(f"{slots} slots, budget {budget:.3f} s: {tool}", file=sys.stderr, flush=True)
                before = load_average()
                if tool == "latency-gate":
                    row[tool] = run_gate(server.base, budget, opts, work)
                else:
                    rates = (
                        guidellm_rates(row.get("latency-gate"), opts.guidellm_factors)
                        if opts.guidellm_factors
                        else None
                    )
                    row[tool] = run_guidellm(
                        server.base, budget, opts, work, bin_dir=bin_dir, tokenizer=tokenizer,
                        rates=rates,
                    )  # fmt: skip
                row[tool]["load"] = f"{before} → {load_average()}"
            rows.append(row)
        finally:
            server.stop()
    write_results(opts, bin_dir, rows, render, work=str(work_root))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
