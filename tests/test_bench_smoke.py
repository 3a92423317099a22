"""The benchmark still runs end to end: `python bench/run.py --quick` (no timing assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_quick_benchmark_writes_a_row_for_every_scenario(tmp_path: Path) -> None:
    """A quick run exits 0 with a table row and a latency-gate value for every scenario."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    keys = [sc["key"] for sc in results["scenarios"]]
    assert keys == [
        "sequential",
        "burst_small",
        "burst_large",
        "cold",
        "first_token_stream",
        "first_token_held",
    ]
    assert all(len(sc["rounds"]["latency-gate"]) == 1 for sc in results["scenarios"])
    table = (tmp_path / "results.md").read_text()
    for sc in results["scenarios"]:
        assert f"| {sc['label']} |" in table
    assert (
        results["load"]["calls"]
        == results["load"]["warm_calls"] + 1 + results["load"]["concurrency"]
    )
    assert results["big"]["all_bytes_received"] is True
