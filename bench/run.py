"""Measure the measurer: latency-gate's added latency over the truth, beside curl, hey and httpx.

    python bench/run.py                 # 3 rounds, every scenario, every peer found (a few minutes)
    python bench/run.py --rounds 5      # more rounds
    python bench/run.py --quick         # 1 round, small sizes: proves it runs (the smoke test)
    python bench/run.py --out DIR       # where results.json and results.md go [bench/results]
    python bench/run.py --skip-peers    # latency-gate only

A reference server (bench/refserver.py) runs in its own process and records, per request, the
kernel's receive stamp of the request's last bytes and the time just before it writes the
answer. Truth of a call = send - receive. For each tool, each scenario gives one number per
round: the statistic the tool reports (p50 of 20 sequential calls, p95 of a burst, the cold
call, the first-token p50) minus the same statistic of the server's truth for the same requests.
The table shows the median of the rounds and their min-max.

Tools: latency-gate through its CLI (`latency-gate probe URL --json PATH`, a fresh process as a
user runs it), `curl -w` (one process for the sequential calls, `--parallel` for a burst),
Debian's `hey -o csv`, and bench/naive_httpx.py (one AsyncClient, perf_counter, gather).

Also: start-up (exec of `latency-gate probe` to the server's receive stamp of its first request),
peak RSS growth for a 100 MB streamed answer (ru_maxrss of the child, against a 1 KiB answer),
and issue 7's load (`--warm-calls 1000 --concurrency 200`) with its peak RSS.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from latency_gate.assess.numbers.stats import percentile  # noqa: E402 - after the path is set

SUBPROCESS_TIMEOUT = 300.0
DEFAULT_VENV = Path(tempfile.gettempdir()) / "latency-gate-bench-venv"


def child_env() -> dict[str, str]:
    """The environment for every child: this checkout's latency_gate first on the path.

    An editable install elsewhere (or an older wheel) would otherwise be what gets measured.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


TOOLS = ("latency-gate", "curl", "hey", "naive-httpx")
STAMP_SOURCES: set[str] = set()  # what every latency-gate run said its stamps came from


@dataclass(frozen=True)
class Sizes:
    """How big each scenario is: the full run, or the quick smoke run."""

    rounds: int
    sequential: int
    burst_small: int
    burst_large: int
    stream_calls: int
    stream_chunks: int
    startup_runs: int
    big_mb: float
    load_warm: int
    load_concurrency: int


FULL = Sizes(3, 20, 10, 100, 5, 5, 5, 100, 1000, 200)
QUICK = Sizes(1, 5, 3, 5, 2, 2, 1, 5, 20, 10)


@dataclass
class Scenario:
    key: str
    label: str
    goal_ms: float | None = None  # latency-gate's goal on the added latency, if any
    rounds: dict[str, list[float]] = field(default_factory=dict)  # tool -> error ms per round
    notes: dict[str, str] = field(default_factory=dict)


def ms(seconds: float) -> float:
    return seconds * 1000.0


def pct(values: Sequence[float], q: float) -> float:
    result = percentile(values, q)
    if result is None:
        raise ValueError("no values")
    return result


# --- the reference server -----------------------------------------------------------------


class RefServer:
    """bench/refserver.py in its own process; `truth()` takes the records since the last call."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH / "refserver.py"), "--port", "0", "--duration", "3600"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"reference server did not start: {line!r}")
        self.base = f"http://127.0.0.1:{int(line)}"

    def truth(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.base}/_truth", timeout=30) as response:
            records: list[dict[str, Any]] = json.loads(response.read())
        return sorted(records, key=lambda r: r["recv_ns"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def call_truth(record: dict[str, Any]) -> float:
    """Seconds from the request's last byte in to just before the answer's last write."""
    return float(record["last_ns"] - record["recv_ns"]) / 1e9


def first_chunk_truth(record: dict[str, Any]) -> float:
    return float(record["first_chunk_ns"] - record["recv_ns"]) / 1e9


# --- running tools --------------------------------------------------------------------------


def latency_gate_command() -> list[str]:
    """The installed console script beside this Python (not a pyenv shim), else the module."""
    script = Path(sys.executable).parent / "latency-gate"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "latency_gate"]


def run(cmd: Sequence[str], *, ok_codes: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(
        list(cmd),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
        env=child_env(),
    )
    if done.returncode not in ok_codes:
        raise RuntimeError(f"{cmd[0]} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


@dataclass
class GateRun:
    result: dict[str, Any]
    max_rss_kb: int
    wall_s: float


def gate_probe(url: str, *args: str) -> GateRun:
    """`latency-gate probe URL ARGS --json PATH` in a fresh process; its JSON and peak RSS.

    One look (`--max-calls` the first look's calls: the cold call, ARGS' `--warm-calls` and
    `--concurrency`): the benchmark compares the same fixed set of calls across tools, so the
    gate must not take more while a check is undecided. (A cap under the first look is refused.)
    """
    counts = {
        name: int(value)
        for name, value in itertools.pairwise(args)
        if name in ("--warm-calls", "--concurrency")
    }
    first_look = 1 + counts["--warm-calls"] + counts["--concurrency"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "result.json"
        one_look = ("--max-calls", str(first_look), "--on-undecided", "pass")
        cmd = [*latency_gate_command(), "probe", url, *args, *one_look, "--json", str(path)]
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env()
        )
        rusage = wait_bounded(proc)
        wall = time.perf_counter() - started
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"latency-gate exited {proc.returncode}: {stderr[-2000:]}")
        result: dict[str, Any] = json.loads(path.read_text())
    STAMP_SOURCES.add(str(result["stamp_source"]))
    return GateRun(result, rusage.ru_maxrss, wall)


def wait_bounded(proc: subprocess.Popen[bytes]) -> Any:
    """os.wait4 for the child's own peak RSS, with a deadline after which it is killed."""
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return rusage
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.01)


def gate_latencies(result: dict[str, Any], phase: str) -> list[float]:
    return [
        s["latency"] for s in result["samples"] if s["phase"] == phase and s["ok"] and s["latency"]
    ]


def check_counts(tool: str, records: Sequence[Any], expected: int) -> None:
    if len(records) != expected:
        raise RuntimeError(f"{tool}: the server saw {len(records)} requests, expected {expected}")


# --- scenarios per tool ---------------------------------------------------------------------


def errors_from(
    reported_seq: Sequence[float],
    cold: float,
    truth_seq: Sequence[float],
    truth_cold: float,
) -> dict[str, float]:
    return {
        "cold": ms(cold - truth_cold),
        "sequential": ms(pct(reported_seq, 50) - pct(truth_seq, 50)),
    }


def burst_error(reported: Sequence[float], truth: Sequence[float]) -> float:
    return ms(pct(reported, 95) - pct(truth, 95))


def measure_gate(server: RefServer, sizes: Sizes) -> dict[str, float]:
    url = f"{server.base}/fixed?ms=50"
    n_seq, small, large = sizes.sequential, sizes.burst_small, sizes.burst_large
    first = gate_probe(url, "--warm-calls", str(n_seq), "--concurrency", str(small))
    truth = server.truth()
    check_counts("latency-gate", truth, 1 + n_seq + small)
    times = [call_truth(r) for r in truth]
    cold = gate_latencies(first.result, "cold")
    out = errors_from(gate_latencies(first.result, "warm"), cold[0], times[1 : 1 + n_seq], times[0])
    out["burst_small"] = burst_error(gate_latencies(first.result, "concurrent"), times[1 + n_seq :])
    second = gate_probe(url, "--warm-calls", "1", "--concurrency", str(large))
    truth = server.truth()
    check_counts("latency-gate", truth, 2 + large)
    out["burst_large"] = burst_error(
        gate_latencies(second.result, "concurrent"), [call_truth(r) for r in truth[2:]]
    )
    for mode in ("stream", "held"):
        out[f"first_token_{mode}"] = gate_first_token(server, mode, sizes)
    return out


def stream_url(server: RefServer, mode: str, sizes: Sizes) -> str:
    return f"{server.base}/{mode}?first_ms=200&every_ms=20&chunks={sizes.stream_chunks}"


def gate_first_token(server: RefServer, mode: str, sizes: Sizes) -> float:
    calls = sizes.stream_calls
    run_ = gate_probe(
        stream_url(server, mode, sizes),
        "--stream",
        "--warm-calls",
        str(calls),
        "--concurrency",
        "1",
    )
    truth = server.truth()
    check_counts("latency-gate", truth, calls + 2)
    warm = [s for s in run_.result["samples"] if s["phase"] == "warm" and s["ok"]]
    reported = [s["timings"]["first_token"] for s in warm]
    if len(reported) != calls or None in reported:
        raise RuntimeError(f"latency-gate reported no first token for some {mode} calls")
    return ms(pct(reported, 50) - pct([first_chunk_truth(r) for r in truth[1 : 1 + calls]], 50))


def curl_times(urls: int, url: str, fmt: str, *extra: str) -> list[float]:
    args = ["curl", "-s", "-N", "-w", fmt + "\\n", *extra]
    for _ in range(urls):
        args += [url, "-o", "/dev/null"]
    return [float(line) for line in run(args).split()]


def measure_curl(server: RefServer, sizes: Sizes) -> dict[str, float]:
    url = f"{server.base}/fixed?ms=50"
    n_seq = sizes.sequential
    seq = curl_times(n_seq + 1, url, "%{time_total}")
    truth = [call_truth(r) for r in server.truth()]
    check_counts("curl", truth, n_seq + 1)
    out = errors_from(seq[1:], seq[0], truth[1:], truth[0])
    for key, size in (("burst_small", sizes.burst_small), ("burst_large", sizes.burst_large)):
        parallel = ("--parallel", "--parallel-immediate", "--parallel-max", str(size))
        reported = curl_times(size, url, "%{time_total}", *parallel)
        truth = [call_truth(r) for r in server.truth()]
        check_counts("curl", truth, size)
        out[key] = burst_error(reported, truth)
    for mode in ("stream", "held"):
        calls = sizes.stream_calls
        first = curl_times(calls + 1, stream_url(server, mode, sizes), "%{time_starttransfer}")
        records = server.truth()
        check_counts("curl", records, calls + 1)
        truth = [first_chunk_truth(r) for r in records[1:]]
        out[f"first_token_{mode}"] = ms(pct(first[1:], 50) - pct(truth, 50))
    return out


def hey_times(n: int, c: int, url: str) -> list[float]:
    """hey's per-request response times, in the order they were sent (offset)."""
    text = run(["hey", "-n", str(n), "-c", str(c), "-o", "csv", url])
    rows = list(csv.DictReader(io.StringIO(text)))
    rows.sort(key=lambda row: float(row["offset"]))
    return [float(row["response-time"]) for row in rows]


def measure_hey(server: RefServer, sizes: Sizes) -> dict[str, float]:
    url = f"{server.base}/fixed?ms=50"
    n_seq = sizes.sequential
    seq = hey_times(n_seq + 1, 1, url)
    truth = [call_truth(r) for r in server.truth()]
    check_counts("hey", truth, n_seq + 1)
    out = errors_from(seq[1:], seq[0], truth[1:], truth[0])
    for key, size in (("burst_small", sizes.burst_small), ("burst_large", sizes.burst_large)):
        reported = hey_times(size, size, url)
        truth = [call_truth(r) for r in server.truth()]
        check_counts("hey", truth, size)
        out[key] = burst_error(reported, truth)
    return out  # hey has no notion of a first token


def naive(url: str, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(
        run([sys.executable, str(BENCH / "naive_httpx.py"), url, *args])
    )
    return out


def measure_naive(server: RefServer, sizes: Sizes) -> dict[str, float]:
    url = f"{server.base}/fixed?ms=50"
    n_seq, small, large = sizes.sequential, sizes.burst_small, sizes.burst_large
    got = naive(url, "--sequential", str(n_seq + 1), "--burst", str(small), "--burst", str(large))
    truth = [call_truth(r) for r in server.truth()]
    check_counts("naive-httpx", truth, n_seq + 1 + small + large)
    seq = got["sequential"]
    out = errors_from(seq[1:], seq[0], truth[1 : n_seq + 1], truth[0])
    out["burst_small"] = burst_error(
        got["bursts"][str(small)], truth[n_seq + 1 : n_seq + 1 + small]
    )
    out["burst_large"] = burst_error(got["bursts"][str(large)], truth[n_seq + 1 + small :])
    for mode in ("stream", "held"):
        calls = sizes.stream_calls
        first = naive(stream_url(server, mode, sizes), "--stream", str(calls + 1))["first_chunk"]
        records = server.truth()
        check_counts("naive-httpx", records, calls + 1)
        truth = [first_chunk_truth(r) for r in records[1:]]
        out[f"first_token_{mode}"] = ms(pct(first[1:], 50) - pct(truth, 50))
    return out


# --- start-up, memory, load -----------------------------------------------------------------


def clean_venv(path: Path) -> list[str]:
    """A venv holding this checkout (not editable) and its dependencies only, as a user's CI
    or the action's image has; made once, the project reinstalled on every run. Its command."""
    python = path / "bin" / "python"
    if not python.exists():
        subprocess.run(
            [sys.executable, "-m", "venv", str(path)], check=True, timeout=SUBPROCESS_TIMEOUT
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", str(ROOT)],
            check=True,
            timeout=SUBPROCESS_TIMEOUT,
        )
    with tempfile.TemporaryDirectory() as tmp:
        # Copy the tree: pip would otherwise leave build/ behind in the checkout.
        source = Path(tmp) / "src"
        shutil.copytree(
            ROOT, source, ignore=shutil.ignore_patterns(".git", "bench", "tests", "*cache*")
        )
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--force-reinstall",
                str(source),
            ],
            check=True,
            timeout=SUBPROCESS_TIMEOUT,
            capture_output=True,
        )
    return [str(path / "bin" / "latency-gate")]


def measure_startup(
    server: RefServer, runs: int, command: Sequence[str], *extra: str
) -> list[float]:
    """ms from just before exec of `latency-gate probe` to the receive stamp of its 1st request."""
    url = f"{server.base}/fixed?ms=0"
    out: list[float] = []
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for _ in range(runs):
        server.truth()
        cmd = [*command, "probe", url, "--warm-calls", "1", "--concurrency", "1", *extra]
        env = child_env() if list(command) == latency_gate_command() else clean
        before = time.time_ns()
        subprocess.run(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=SUBPROCESS_TIMEOUT,
            check=False,
            env=env,
        )
        records = server.truth()
        if not records:
            raise RuntimeError("start-up: the server saw no request")
        out.append((records[0]["recv_ns"] - before) / 1e6)
    return out


def measure_big(server: RefServer, mb: float) -> dict[str, Any]:
    """Peak RSS of the CLI for an mb-MiB streamed answer, against the same run with 1 KiB."""
    args = ("--warm-calls", "1", "--concurrency", "1", "--no-floor", "--timeout", "120s")
    small = gate_probe(f"{server.base}/big?mb={1 / 1024}", *args)
    server.truth()
    big = gate_probe(f"{server.base}/big?mb={mb}", *args)
    records = server.truth()
    received = [s["bytes_received"] for s in big.result["samples"]]
    expected = int(mb * 1024 * 1024)
    return {
        "mb": mb,
        "baseline_max_rss_mb": small.max_rss_kb / 1024,
        "big_max_rss_mb": big.max_rss_kb / 1024,
        "growth_mb": (big.max_rss_kb - small.max_rss_kb) / 1024,
        "calls_ok": all(s["ok"] for s in big.result["samples"]),
        "bytes_each": received,
        "all_bytes_received": all(b == expected for b in received),
        "server_records": len(records),
        "wall_s": big.wall_s,
    }


def measure_load(server: RefServer, warm: int, concurrency: int) -> dict[str, Any]:
    url = f"{server.base}/fixed?ms=0"
    got = gate_probe(
        url,
        "--warm-calls",
        str(warm),
        "--concurrency",
        str(concurrency),
        "--max-warm-p95",
        "10s",
        "--max-concurrent-p95",
        "10s",
    )
    records = server.truth()
    samples = got.result["samples"]
    return {
        "warm_calls": warm,
        "concurrency": concurrency,
        "calls": len(samples),
        "errors": sum(not s["ok"] for s in samples),
        "server_records": len(records),
        "max_rss_mb": got.max_rss_kb / 1024,
        "wall_s": got.wall_s,
        "passed": got.result["verdict"]["passed"],
    }


# --- the report -----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    versions: dict[str, str] = {"python": platform.python_version()}
    with contextlib.suppress(Exception):
        import httpx

        versions["httpx"] = httpx.__version__
    if shutil.which("curl"):
        versions["curl"] = run(["curl", "--version"]).split("\n")[0].split(" ")[1]
    if shutil.which("dpkg-query") and shutil.which("hey"):
        with contextlib.suppress(Exception):
            versions["hey"] = run(["dpkg-query", "-W", "-f", "${Version}", "hey"])
    probed = run([sys.executable, "-c", "import latency_gate; print(latency_gate.__file__)"])
    return {
        "latency_gate_measured": probed.strip(),
        "cpu": model,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "versions": versions,
    }


def fmt(values: Sequence[float]) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:+.2f}"
    return f"{med:+.2f} ({min(values):+.2f} to {max(values):+.2f})"


def render(results: dict[str, Any]) -> str:
    lines = [
        "## Added latency over the server's truth, ms: median of rounds (min to max)",
        "",
        "| scenario | " + " | ".join(results["tools"]) + " |",
        "|---|" + "---|" * len(results["tools"]),
    ]
    for sc in results["scenarios"]:
        cells = []
        for tool in results["tools"]:
            values = sc["rounds"].get(tool, [])
            cells.append(sc["notes"].get(tool, fmt(values)) if not values else fmt(values))
        lines.append(f"| {sc['label']} | " + " | ".join(cells) + " |")
    lines += ["", "## Goals (latency-gate)", "", "| goal | measured | met |", "|---|---|---|"]
    for goal in results["goals"]:
        lines.append(f"| {goal['goal']} | {goal['measured']} | {'yes' if goal['met'] else 'NO'} |")
    load = results["load"]
    lines += [
        "",
        f"Rounds: {results['rounds']}. Load average (1 min) during the run: "
        f"{min(results['loadavg']):.2f} to {max(results['loadavg']):.2f}. "
        f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores, "
        f"versions {results['machine']['versions']}.",
        f"Start-up runs in {results['startup_venv'] or 'this environment'} (ms, with the "
        f"floor): {[round(x, 1) for x in results['startup_ms']]}; "
        f"with --no-floor: {[round(x, 1) for x in results['startup_no_floor_ms']]}. "
        f"In this environment: {[round(x, 1) for x in results['startup_here_ms']]}; "
        f"with --no-floor: {[round(x, 1) for x in results['startup_here_no_floor_ms']]}.",
        f"Stamp sources reported by latency-gate: {results['stamp_sources']}.",
        f"Big body: {results['big']}.",
        f"Load: {load}.",
    ]
    if results["skipped"]:
        lines.append(f"Skipped: {results['skipped']}.")
    return "\n".join(lines) + "\n"


def goals(results: dict[str, Any], scenarios: list[Scenario]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for sc in scenarios:
        values = sc.rounds.get("latency-gate", [])
        if sc.goal_ms is None or not values:
            continue
        med = statistics.median(values)
        rows.append(
            {
                "goal": f"{sc.label}: at most {sc.goal_ms:g} ms",
                "measured": fmt(values),
                "met": abs(med) <= sc.goal_ms,
            }
        )
    startup = results["startup_ms"]
    rows.append(
        {
            "goal": "start-up to the first request on the wire: at most 300 ms"
            + (" (clean venv)" if results["startup_venv"] else ""),
            "measured": f"{fmt(startup)} ms "
            f"(with --no-floor: {fmt(results['startup_no_floor_ms'])})",
            "met": statistics.median(startup) <= 300,
        }
    )
    big = results["big"]
    rows.append(
        {
            "goal": f"{big['mb']:g} MB streamed answer: peak RSS grows at most 50 MB",
            "measured": f"{big['growth_mb']:+.1f} MB ({big['baseline_max_rss_mb']:.1f} -> "
            f"{big['big_max_rss_mb']:.1f} MB), all bytes counted: {big['all_bytes_received']}",
            "met": big["growth_mb"] <= 50 and big["all_bytes_received"],
        }
    )
    load = results["load"]
    rows.append(
        {
            "goal": f"--warm-calls {load['warm_calls']} --concurrency {load['concurrency']} "
            "completes (peak RSS reported)",
            "measured": f"{load['calls']} calls, {load['errors']} errors, "
            f"{load['wall_s']:.1f} s, peak RSS {load['max_rss_mb']:.1f} MB",
            "met": load["errors"] == 0
            and load["calls"] == load["warm_calls"] + 1 + load["concurrency"],
        }
    )
    return rows


@contextlib.contextmanager
def reference_server() -> Iterator[RefServer]:
    server = RefServer()
    try:
        yield server
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Run every scenario; write results.json and results.md to --out; print the tables."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("--rounds", type=int, help="rounds per scenario [3; 1 with --quick]")
    parser.add_argument("--quick", action="store_true", help="1 round, small sizes (smoke test)")
    parser.add_argument("--skip-peers", action="store_true", help="measure latency-gate only")
    parser.add_argument("--out", default=str(BENCH / "results"), help="folder for the results")
    parser.add_argument(
        "--venv",
        default=str(DEFAULT_VENV),
        help="clean venv for the start-up goal, made with pip if missing; 'none' to use only "
        "this environment [%(default)s; none with --quick]",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.quick and "--venv" not in (argv if argv is not None else sys.argv[1:]):
        args.venv = "none"
    if args.rounds:
        sizes = Sizes(args.rounds, *list(sizes.__dict__.values())[1:])

    scenarios = [
        Scenario("sequential", f"{sizes.sequential} sequential calls, p50", 0.3),
        Scenario("burst_small", f"burst of {sizes.burst_small}, p95", 0.5),
        Scenario("burst_large", f"burst of {sizes.burst_large}, p95", 1.0),
        Scenario("cold", "cold call (new connection)"),
        Scenario("first_token_stream", "first token, headers sent at once, p50", 1.0),
        Scenario("first_token_held", "first token, headers held, p50", 1.0),
    ]
    measures: dict[str, Callable[[RefServer, Sizes], dict[str, float]]] = {
        "latency-gate": measure_gate
    }
    skipped: list[str] = []
    if not args.skip_peers:
        peers: list[tuple[str, Callable[[RefServer, Sizes], dict[str, float]], str | None]] = [
            ("curl", measure_curl, "curl"),
            ("hey", measure_hey, "hey"),
            ("naive-httpx", measure_naive, None),
        ]
        for tool, fn, needs in peers:
            if needs and not shutil.which(needs):
                skipped.append(f"{tool} (not installed)")
                continue
            measures[tool] = fn
    for sc in scenarios:
        if "hey" in measures and sc.key.startswith("first_token"):
            sc.notes["hey"] = "n/a"

    loadavg: list[float] = []
    results: dict[str, Any] = {"rounds": sizes.rounds, "sizes": sizes.__dict__}
    with reference_server() as server:
        for number in range(sizes.rounds):
            for tool, fn in measures.items():
                loadavg.append(os.getloadavg()[0])
                print(f"round {number + 1}/{sizes.rounds}: {tool}", file=sys.stderr, flush=True)
                got = fn(server, sizes)
                for sc in scenarios:
                    if sc.key in got:
                        sc.rounds.setdefault(tool, []).append(got[sc.key])
        print("start-up", file=sys.stderr, flush=True)
        here = latency_gate_command()
        results["startup_here_ms"] = measure_startup(server, sizes.startup_runs, here)
        results["startup_here_no_floor_ms"] = measure_startup(
            server, sizes.startup_runs, here, "--no-floor"
        )
        results["startup_venv"] = None
        if args.venv != "none":
            print(f"start-up in a clean venv ({args.venv})", file=sys.stderr, flush=True)
            try:
                venv = clean_venv(Path(args.venv))
            except (subprocess.SubprocessError, OSError) as exc:
                skipped.append(f"clean-venv start-up ({exc})")
            else:
                results["startup_venv"] = args.venv
                results["startup_ms"] = measure_startup(server, sizes.startup_runs, venv)
                results["startup_no_floor_ms"] = measure_startup(
                    server, sizes.startup_runs, venv, "--no-floor"
                )
        if results["startup_venv"] is None:
            results["startup_ms"] = results["startup_here_ms"]
            results["startup_no_floor_ms"] = results["startup_here_no_floor_ms"]
        print("big body", file=sys.stderr, flush=True)
        results["big"] = measure_big(server, sizes.big_mb)
        print("load", file=sys.stderr, flush=True)
        loadavg.append(os.getloadavg()[0])
        results["load"] = measure_load(server, sizes.load_warm, sizes.load_concurrency)
        loadavg.append(os.getloadavg()[0])

    results.update(
        tools=list(measures),
        scenarios=[sc.__dict__ for sc in scenarios],
        loadavg=loadavg,
        machine=machine(),
        skipped=skipped,
        stamp_sources=sorted(STAMP_SOURCES),
        command=" ".join(["python", "bench/run.py", *(argv if argv is not None else sys.argv[1:])]),
    )
    results["goals"] = goals(results, scenarios)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    text = render(results)
    (out / "results.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
