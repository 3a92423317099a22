"""A result file named by an option (`--baseline`, `merge`, a history folder's files) read from
disk and parsed; a baseline file matched to the targets. An edge module: it reads files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from latency_gate.config import Target
from latency_gate.config.files import read_bounded
from latency_gate.config.regression import RegressionLimit
from latency_gate.errors import ConfigError
from latency_gate.models import RunResult
from latency_gate.results.json_file import parse_runs

if TYPE_CHECKING:
    from latency_gate.assess.compare.baseline import BaselinePlan

__all__ = ["load_runs", "plan_baseline"]

# A result file of 100,000 calls is some 60 MB; a bigger one is not a result file.
MAX_RESULT_BYTES = 256 * 1024 * 1024


def load_runs(path: Path, option: str, *, baseline: bool = False) -> list[RunResult]:
    """The runs of a result file, each judged again from its calls; a file that cannot be read
    or judged (as a `baseline`: a run without calls too) is a ConfigError naming `option`."""
    try:
        text = read_bounded(path, MAX_RESULT_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError.single(option, f"cannot read {str(path)!r}: {reason}") from None
    return parse_runs(text, f"{option} {path}", baseline=baseline)


def plan_baseline(
    targets: Sequence[Target], path: Path, limit: RegressionLimit, option: str = "--baseline"
) -> BaselinePlan:
    """Load the baseline at `path` and match it to `targets`; ConfigError on a bad file or a
    baseline of another configuration. A missing file is not an error (see BaselinePlan)."""
    from latency_gate.assess.compare.baseline import BaselinePlan, match_baseline  # noqa: PLC0415 (start-up)

    if not path.exists():
        return BaselinePlan(str(path), limit, None)
    runs = load_runs(path, option, baseline=True)
    return BaselinePlan(str(path), limit, match_baseline(targets, runs, option))
