"""What a run costs in calls and wall time: the defaults, --max-time and the knobs that spend
less, against the loopback reference server at a fixed time a call (docs/benchmarks.md, "What a
run costs").

    python bench/cost.py                  # the table of docs/benchmarks.md (~8 min)
    python bench/cost.py --ms 50 --runs defaults

Each run is `python -m latency_gate probe URL --json FILE ...` in a process of its own, timed
from its start to its exit (the wall clock a CI step would see: start-up and the gate's floor
included); its calls and verdict are read from the result file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

RUNS: dict[str, tuple[str, ...]] = {
    "defaults": (),
    "max-time-10s": ("--max-time", "10s"),
    "max-time-30s": ("--max-time", "30s"),
    "max-calls-10": ("--max-calls", "10"),
    "warm-5-concurrency-5": ("--warm-calls", "5", "--concurrency", "5"),
    "error-rate-off": ("--max-error-rate", "off"),
}
# Every run at every latency, but the knobs' at 0.5 s alone (they are about calls, not time).
PLAN = [
    *((ms, run) for ms in (50, 500, 2000) for run in ("defaults", "max-time-10s", "max-time-30s")),
    *((500, run) for run in ("max-calls-10", "warm-5-concurrency-5", "error-rate-off")),
]


def start_server() -> tuple[subprocess.Popen[str], int]:
    """The reference server in a process of its own; its port."""
    server = subprocess.Popen(
        [sys.executable, str(REPO / "bench" / "refserver.py"), "--port", "0", "--duration", "3600"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, int(server.stdout.readline())


def one_run(port: int, ms: int, args: tuple[str, ...], out: Path) -> str:
    """One probe: a table row of its calls, times, verdict and why sampling stopped."""
    url = f"http://127.0.0.1:{port}/fixed?ms={ms}"
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "latency_gate", "probe", url, "--json", str(out), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    wall = time.monotonic() - began
    data = json.loads(out.read_text())
    calls = data["finished_at"] - data["started_at"]
    verdict = "PASS" if data["verdict"]["passed"] else "FAIL"
    stopped = data["sampling"]["stopped"].replace("_", " ")
    shown = " ".join(args) or "(defaults)"
    return (
        f"| {ms / 1000:g} s | `{shown}` | {len(data['samples'])} | {calls:.1f} | {wall:.1f} | "
        f"{verdict} (exit {done.returncode}) | {stopped} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", type=int, action="append", help="only these times a call")
    parser.add_argument("--runs", action="append", choices=sorted(RUNS), help="only these runs")
    options = parser.parse_args()
    server, port = start_server()
    print("| a call | options | calls | run (s) | process (s) | verdict | stopped |")
    print("|---|---|---:|---:|---:|---|---|")
    try:
        with tempfile.TemporaryDirectory() as folder:
            for ms, run in PLAN:
                if (options.ms and ms not in options.ms) or (
                    options.runs and run not in options.runs
                ):
                    continue
                print(one_run(port, ms, RUNS[run], Path(folder) / "r.json"), flush=True)
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
