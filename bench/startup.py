"""Start-up A/B: latency-gate from several venvs, runs interleaved, against one reference server.

    python bench/startup.py VENV [VENV ...] [--runs 9] [--no-floor] [--instructions]

Each VENV holds latency-gate installed (not editable) with its dependencies, as a user's CI or
the action's image has it (`python -m venv V && V/bin/pip install .`). What is measured is the
start-up figure of docs/benchmarks.md: from just before exec of `latency-gate probe` to the
kernel's receive stamp of that process's first request on the reference server (bench/run.py,
`measure_startup`). Runs alternate between the venvs, one at a time, so a machine that grows
busier during the run weighs on every venv alike; compare the medians of one run of this script,
not figures from different runs.

`--instructions` counts instead the CPU instructions from exec to the first connect to the
server (valgrind's callgrind; an audit hook ends the process there). On a virtual machine
whose wall-clock start-up wanders by 100 ms from one run to the next with nothing else running,
this count moves by under 0.5 %: it is how a change to start-up is judged, and the wall clock
says what a user waits.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import measure_startup, reference_server  # a script beside this one

# Run as `python -c HOOK PORT probe ...`: ends the process at its first connect to PORT.
HOOK = """
import os, sys
port = int(sys.argv.pop(1))
def hook(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (port,):
        os._exit(0)
sys.addaudithook(hook)
from latency_gate.cli import main
main(sys.argv[1:])
"""


def count_instructions(venv: Path, port: int, *extra: str) -> float:
    """Millions of instructions from exec of the venv's Python to its first connect to port."""
    url = f"http://127.0.0.1:{port}/fixed?ms=0"
    args = ["probe", url, "--warm-calls", "1", "--concurrency", "1", *extra]
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            str(venv / "bin" / "python"),
            "-P",  # not the working directory first: the venv's latency_gate is measured
            "-c",
            HOOK,
            str(port),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{venv}: callgrind failed: {done.stderr[-500:]}")
    return int(found.group(1)) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("venvs", nargs="+", type=Path, help="venvs holding latency-gate")
    parser.add_argument("--runs", type=int, default=9, help="runs per venv [%(default)s]")
    parser.add_argument("--no-floor", action="store_true", help="pass --no-floor to the probe")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions (valgrind), once each"
    )
    args = parser.parse_args(argv)
    commands = {str(v): [str(v / "bin" / "latency-gate")] for v in args.venvs}
    for name, command in commands.items():
        if not Path(command[0]).exists():
            parser.error(f"{name}: no bin/latency-gate in this venv")
    extra = ("--no-floor",) if args.no_floor else ()
    if args.instructions:
        if not shutil.which("valgrind"):
            parser.error("--instructions needs valgrind (apt-get install valgrind)")
        with reference_server() as server:
            for venv in args.venvs:
                millions = count_instructions(venv, int(server.base.rsplit(":", 1)[1]), *extra)
                print(f"{millions:8.1f} M instructions  {venv}")
        return 0
    got: dict[str, list[float]] = {name: [] for name in commands}
    with reference_server() as server:
        for command in commands.values():  # one uncounted run each: page cache, pyc
            measure_startup(server, 1, command, *extra)
        for _ in range(args.runs):
            for name, command in commands.items():
                got[name] += measure_startup(server, 1, command, *extra)
    for name, values in got.items():
        print(
            f"{statistics.median(values):6.1f} ms median "
            f"({min(values):.1f} to {max(values):.1f}, {len(values)} runs)  {name}"
        )
    print(json.dumps({name: [round(v, 2) for v in vs] for name, vs in got.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
