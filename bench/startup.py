"""Start-up A/B: latency-gate from several venvs, runs interleaved, against one reference server.

    python bench/startup.py VENV [VENV ...] [--runs 9] [--no-floor]

Each VENV holds latency-gate installed (not editable) with its dependencies, as a user's CI or
the action's image has it (`python -m venv V && V/bin/pip install .`). What is measured is the
start-up figure of docs/benchmarks.md: from just before exec of `latency-gate probe` to the
kernel's receive stamp of that process's first request on the reference server (bench/run.py,
`measure_startup`). Runs alternate between the venvs, one at a time, so a machine that grows
busier during the run weighs on every venv alike; compare the medians of one run of this script,
not figures from different runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import measure_startup, reference_server  # a script beside this one


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("venvs", nargs="+", type=Path, help="venvs holding latency-gate")
    parser.add_argument("--runs", type=int, default=9, help="runs per venv [%(default)s]")
    parser.add_argument("--no-floor", action="store_true", help="pass --no-floor to the probe")
    args = parser.parse_args(argv)
    commands = {str(v): [str(v / "bin" / "latency-gate")] for v in args.venvs}
    for name, command in commands.items():
        if not Path(command[0]).exists():
            parser.error(f"{name}: no bin/latency-gate in this venv")
    extra = ("--no-floor",) if args.no_floor else ()
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
