"""How long one probe takes, and how much memory, to read a large history folder.

    python bench/history_read.py                       # 2,000 files, this checkout
    python bench/history_read.py --code ../old-checkout --files 500

Writes a folder of `--files` copies of one real result of the demo endpoint (the default probe,
about 130 calls, 130 KB), named as the action names them, an hour apart, then times one
`probe --no-floor --history FOLDER` of the same endpoint, its peak memory from `/usr/bin/time
-f %M`. Both with the package at `--code` (this checkout by default): a result written by a newer
version is not one an older version can read. One run: a reading of the folder's cost, not a
statistic (docs/benchmarks.md, "Reading a history folder").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from latency_gate.demo import EndpointSpec, serve_in_thread  # noqa: E402 (after the path)


def _probe(code: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(code), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    command = ["/usr/bin/time", "-f", "max-rss-kb %M", sys.executable, "-m", "latency_gate"]
    return subprocess.run(
        [*command, "probe", *args], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to time")
    given = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="history-read-"))
    try:
        with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
            one = work / "one.json"
            done = _probe(given.code, server.url, "--no-floor", "--json", str(one), cwd=work)
            if not one.is_file():
                sys.exit(f"the first probe wrote no result: {done.stderr[-2000:]}")
            document = json.loads(one.read_text(encoding="utf-8"))
            folder = work / "history"
            folder.mkdir()
            for i in range(given.files):
                when = document["started_at"] - (i + 1) * 3600.0
                copy = {**document, "started_at": when, "finished_at": when + 1.0}
                stamp = datetime.fromtimestamp(when, UTC).strftime("%Y%m%dT%H%M%SZ")
                (folder / f"latency-gate-{stamp}.json").write_text(json.dumps(copy))
            started = time.monotonic()
            done = _probe(given.code, server.url, "--no-floor", "--history", str(folder), cwd=work)
            seconds = time.monotonic() - started
        memory = next(
            (line.split()[-1] for line in done.stderr.splitlines() if line.startswith("max-rss")),
            "?",
        )
        print(
            f"{given.files} files of {one.stat().st_size // 1024} KB "
            f"({len(document['samples'])} calls each): {seconds:.1f} s, "
            f"{int(memory) / 1024:.0f} MB at most, exit {done.returncode}"
            if memory.isdigit()
            else f"{seconds:.1f} s, memory unknown, exit {done.returncode}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
