"""The step outputs: the verdict, the five numbers in seconds, the capacity (calls at once), the
goodput (requests a second), where the JSON result is and the PR comment's URL, as the strings
GitHub hands to later steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from latency_gate.models import RunResult


def output_values(
    results: Sequence[RunResult],
    passed: bool,
    json_path: Path,
    workspace: Path,
    comment_url: str | None,
) -> dict[str, str]:
    """Outputs; the per-number ones are empty for several targets (the JSON has each)."""
    numbers = results[0].numbers if len(results) == 1 else None
    report_path = in_workspace(json_path, workspace)

    def seconds(number: str) -> str:
        value: float | None = None if numbers is None else getattr(numbers, number)
        return "" if value is None else f"{value:.6f}"

    capacity = results[0].capacity if len(results) == 1 else None
    goodput = results[0].goodput if len(results) == 1 else None
    searched = goodput is not None and goodput.search
    return {
        "passed": "true" if passed else "false",
        "verdict": "PASS" if passed else "FAIL",
        "cold-start": seconds("cold_start"),
        "warm-p50": seconds("warm_p50"),
        "warm-p95": seconds("warm_p95"),
        "concurrent-p95": seconds("concurrent_p95"),
        "error-rate": seconds("error_rate"),
        "capacity": "" if capacity is None else str(capacity.found),
        "goodput": f"{goodput.found:g}" if searched and goodput is not None else "",
        "report-path": report_path,
        "comment-url": comment_url or "",
    }


def in_workspace(path: Path, workspace: Path) -> str:
    """`path` relative to the workspace where it is spelt inside it, else as it is."""
    try:
        return str(path.relative_to(workspace))
    except ValueError:
        return str(path)
