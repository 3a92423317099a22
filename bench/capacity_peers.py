"""The capacity of the llama.cpp test server with 1, 2 and 4 slots: latency-gate's search beside
guidellm's goodput profile, on the same server, for the same budget.

    python bench/capacity_peers.py                      # 1, 2 and 4 slots, one round each
    python bench/capacity_peers.py --slots 2 --rounds 3 --name capacity_peers_run2

Run by hand, not by CI (guidellm lives in a venv of its own: bench/llm_peers.py makes it and the
tokenizer it needs). For each slot count a new server (xllamacpp, SmolLM2-135M-Instruct Q4_1,
2 threads, in a process of its own) is started; one streamed call of --max-tokens tokens is
timed (the median of 3 after a warm-up) and the budget is --budget-calls times it (2.5). Then,
one after another on that server:

- latency-gate: `probe --capacity` from 2 calls at once, capacity-max 16, only concurrent p95
  gated against the budget (the search's levels are bursts, each decided by the p95's
  sequential test);
- guidellm 0.8.1: `--profile kind=goodput` from 2 streams, max_streams 16, tolerance 0.01 (to one
  stream), target_attainment 0.95 (the p95), the budget as an end-to-end latency objective
  (`e2el_ms`), each probe --guidellm-requests requests (guidellm has no sequential test: a
  probe is a fixed count; its Wilson interval flags probes too short to decide).

Reported per tool: the capacity found, the levels tried (with each one's p95 or attainment), the
calls made and the wall time. Results go to bench/results/NAME.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from llm_peers import (  # noqa: E402
    DEFAULT_VENV,
    MODEL_FILE,
    LlamaServer,
    build_tokenizer,
    peer_versions,
    peers_venv,
    prompts_file,
)

PROMPT = "Name three colours."


def one_call(base: str, max_tokens: int) -> float:
    """The median of 3 streamed calls one after another (after a warm-up), in seconds."""
    took = []
    for _ in range(4):
        body = json.dumps(
            {
                "messages": [{"role": "user", "content": f"[{secrets.token_hex(4)}] {PROMPT}"}],
                "max_tokens": max_tokens,
                "stream": True,
            }
        ).encode()
        request = urllib.request.Request(
            f"{base}/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        began = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
        took.append(time.perf_counter() - began)
    return statistics.median(took[1:])


def guidellm_command(
    bin_dir: Path,
    base: str,
    opts: argparse.Namespace,
    profile: str,
    *,
    data: Path,
    tokenizer: Path,
    out: Path,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """`guidellm run` against the llama.cpp server at `base`: streamed chat answers of
    --max-tokens, --guidellm-requests requests a run of `profile`, prompts from `data`, its
    JSON report to `out` (goodput_peers.py runs it too)."""
    return [
        str(bin_dir / "guidellm"), "run",
        "--backend", f"kind=openai_http,target={base},model=smollm2,max_tokens={opts.max_tokens}",
        "--profile", profile,
        *extra,
        "--constraint", f"kind=max_requests,count={opts.guidellm_requests}",
        "--data", f"kind=json_file,path={data}",
        "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
        "--output", f"kind=json,path={out}",
        "--disable-console-interactive",
    ]  # fmt: skip


def run_probe(
    base: str, flags: list[str], work: Path, *, max_tokens: int, timeout: float
) -> tuple[dict[str, Any], str, float]:
    """`latency-gate probe` of the server's streamed chat completions with `flags`, its result
    file read back: (the result, what it printed, its wall seconds). Exit 0 or 1 (a verdict)
    is a run; anything else raises."""
    out = work / "gate.json"
    cmd = [
        sys.executable, "-m", "latency_gate", "probe", f"{base}/v1/chat/completions",
        "--prompt", PROMPT, "--stream", "--max-tokens", str(max_tokens),
        "--warm-calls", "3", "--concurrency", "2",
        "--max-warm-p95", "off", "--max-error-rate", "off",
        *flags, "--json", str(out),
    ]  # fmt: skip
    began = time.monotonic()
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    wall = time.monotonic() - began
    if done.returncode not in (0, 1):
        raise RuntimeError(f"latency-gate exited {done.returncode}: {done.stdout[-2000:]}")
    return json.loads(out.read_text()), done.stdout, wall


def made_and_latencies(benchmark: dict[str, Any]) -> tuple[int, list[float], list[float]]:
    """Of one guidellm benchmark: the requests it made (successful, errored or incomplete),
    its successful requests' latencies (sorted) and start times (sorted), in seconds."""
    requests = benchmark["requests"]
    made = sum(len(requests.get(kind) or []) for kind in ("successful", "errored", "incomplete"))
    timings = [r["info"]["timings"] for r in requests.get("successful") or []]
    latencies = sorted(t["request_end"] - t["request_start"] for t in timings)
    return made, latencies, sorted(t["request_start"] for t in timings)


def p95_ms(latencies: list[float]) -> int | None:
    """The p95 of sorted latencies in whole milliseconds (None for fewer than two)."""
    if len(latencies) < 2:
        return None
    return round(statistics.quantiles(latencies, n=100, method="inclusive")[94] * 1000)


def peers_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """The options both peer comparisons take: which slots, the answer's length, the budget in
    single calls, the tools, the model, guidellm's venv and the results' name."""
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--budget-calls", type=float, default=2.5)
    parser.add_argument("--tools", nargs="+", default=["latency-gate", "guidellm"])
    parser.add_argument(
        "--model",
        type=Path,
        default=Path(
            os.environ.get("LATENCY_GATE_TEST_MODEL", ROOT / ".cache" / "models" / MODEL_FILE)
        ),
    )
    parser.add_argument("--peers-venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--name", default=name)


def peers_setup(opts: argparse.Namespace, prefix: str) -> tuple[Path, Path, Path]:
    """guidellm's venv and tokenizer when guidellm runs, and a work folder: (bin dir, work
    folder, tokenizer)."""
    wanted = "guidellm" in opts.tools
    bin_dir = peers_venv(opts.peers_venv, 600) if wanted else Path()
    work_root = Path(tempfile.mkdtemp(prefix=prefix))
    tokenizer = (
        build_tokenizer(bin_dir, opts.model, work_root / "tokenizer", 600) if wanted else work_root
    )
    return bin_dir, work_root, tokenizer


def write_results(
    opts: argparse.Namespace,
    bin_dir: Path,
    rows: list[dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
    **extra: Any,
) -> None:
    """bench/results/NAME.json and .md, and the table printed."""
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "peers": ", ".join(f"{k} {v}" for k, v in peer_versions(bin_dir).items())
        if "guidellm" in opts.tools
        else "none",
        "options": {k: str(v) for k, v in vars(opts).items()},
        **extra,
        "rows": rows,
    }
    (BENCH / "results" / f"{opts.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (BENCH / "results" / f"{opts.name}.md").write_text(render(results))
    print(render(results))


def run_gate(base: str, budget: float, opts: argparse.Namespace, work: Path) -> dict[str, Any]:
    flags = [
        "--timeout", "60s", "--max-concurrent-p95", f"{budget:.3f}s",
        "--capacity", "--capacity-max", "16", "--no-floor",
    ]  # fmt: skip
    result, _, wall = run_probe(base, flags, work, max_tokens=opts.max_tokens, timeout=1800)
    capacity = result["capacity"]
    run_calls = len(result["samples"])
    return {
        "capacity": capacity["found"],
        "complete": capacity["complete"],
        "levels": [
            {
                "concurrency": lv["concurrency"],
                "held": lv["held"],
                "p95_ms": None if lv["p95"] is None else round(lv["p95"] * 1000),
                "calls": lv["calls"],
                "by": lv["decided_by"],
            }
            for lv in capacity["levels"]
        ],
        "search_calls": capacity["calls"],
        "search_seconds": round(capacity["seconds"], 1),
        "run_calls": run_calls,
        "calls": run_calls + capacity["calls"],
        "wall_seconds": round(wall, 1),
    }


def run_guidellm(
    base: str,
    budget: float,
    opts: argparse.Namespace,
    work: Path,
    *,
    bin_dir: Path,
    tokenizer: Path,
) -> dict[str, Any]:
    data = prompts_file(work / "guidellm.jsonl", 5000, "prompt", PROMPT)
    out = work / "guidellm.json"
    metrics = {"kind": "generative", "slo": {"e2el_ms": round(budget * 1000, 1)}}
    cmd = guidellm_command(
        bin_dir, base, opts,
        "kind=goodput,initial_streams=2,max_streams=16,tolerance=0.01,target_attainment=0.95",
        data=data, tokenizer=tokenizer, out=out, extra=("--metrics", json.dumps(metrics)),
    )  # fmt: skip
    began = time.monotonic()
    log = work / "guidellm.log"
    with log.open("w") as sink:
        done = subprocess.run(
            cmd, stdout=sink, stderr=subprocess.STDOUT, timeout=3600, check=False,
            env=dict(os.environ, PYTHONPATH=""),
        )  # fmt: skip
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise RuntimeError(f"guidellm exited {done.returncode}: {log}")
    report = json.loads(out.read_text())
    levels = []
    calls = 0
    for benchmark in report["benchmarks"]:
        made, latencies, _ = made_and_latencies(benchmark)
        calls += made
        levels.append(
            {
                "concurrency": benchmark["config"]["strategy"]["streams"],
                "attainment": benchmark["metrics"].get("slo_attainment"),
                "p95_ms": p95_ms(latencies),
                "calls": made,
            }
        )
    held = [lv["concurrency"] for lv in levels if (lv["attainment"] or 0) >= 0.95]
    broke = [lv["concurrency"] for lv in levels if (lv["attainment"] or 0) < 0.95]
    found = max((c for c in held if not broke or c < min(broke)), default=0)
    tail = [line for line in log.read_text(errors="replace").splitlines() if "Goodput" in line]
    return {
        "capacity": found,
        "levels": levels,
        "calls": calls,
        "wall_seconds": round(wall, 1),
        "said": tail[-1][-400:] if tail else "",
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        f"# Capacity on llama.cpp: latency-gate beside guidellm ({results['date']})",
        "",
        f"Machine: {results['machine']}. Peers: {results['peers']}.",
        "",
        "| slots | one call | budget | tool | capacity | levels (held / broke, p95 or attainment) "
        "| calls | seconds |",
        "|--:|--:|--:|---|--:|---|--:|--:|",
    ]
    for row in results["rows"]:
        for tool in ("latency-gate", "guidellm"):
            got = row.get(tool)
            if got is None:
                continue
            if tool == "latency-gate":
                shown = ", ".join(
                    f"{lv['concurrency']} {'held' if lv['held'] else 'broke'} ({lv['p95_ms']} ms,"
                    f" {lv['calls']})"
                    for lv in got["levels"]
                )
                calls = f"{got['calls']} ({got['search_calls']} search)"
                seconds = f"{got['wall_seconds']} ({got['search_seconds']} search)"
            else:
                shown = ", ".join(
                    f"{lv['concurrency']} {lv['attainment']:.2f} ({lv['p95_ms']} ms, {lv['calls']})"
                    for lv in got["levels"]
                )
                calls, seconds = str(got["calls"]), str(got["wall_seconds"])
            lines.append(
                f"| {row['slots']} | {row['one_call_ms']} ms | {row['budget_ms']} ms | {tool} "
                f"| {got['capacity']} | {shown} | {calls} | {seconds} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    peers_arguments(parser, "capacity_peers")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--guidellm-requests", type=int, default=40)
    opts = parser.parse_args(argv)
    bin_dir, work_root, tokenizer = peers_setup(opts, "capacity-peers-")
    rows = []
    for round_ in range(opts.rounds):
        for slots in opts.slots:
            work = work_root / f"r{round_}-s{slots}"
            work.mkdir()
            server = LlamaServer(opts.model, work / "server.log", slots=slots)
            try:
                single = one_call(server.base, opts.max_tokens)
                budget = round(opts.budget_calls * single, 3)
                row: dict[str, Any] = {
                    "round": round_,
                    "slots": slots,
                    "one_call_ms": round(single * 1000),
                    "budget_ms": round(budget * 1000),
                }
                order = opts.tools if round_ % 2 == 0 else list(reversed(opts.tools))
                for tool in order:
                    print(
                        f"round {round_}, {slots} slots, budget {budget:.3f} s: {tool}",
                        file=sys.stderr,
                        flush=True,
                    )
                    if tool == "latency-gate":
                        row[tool] = run_gate(server.base, budget, opts, work)
                    else:
                        row[tool] = run_guidellm(
                            server.base, budget, opts, work, bin_dir=bin_dir, tokenizer=tokenizer
                        )
                rows.append(row)
            finally:
                server.stop()
    write_results(opts, bin_dir, rows, render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
