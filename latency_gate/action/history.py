"""This run's result appended to the history folder, as `history-append` says: `auto` on the
repository's default branch and never on a pull request. The folder is a cache: a write that
fails is a warning, never a changed verdict or exit code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from latency_gate import github
from latency_gate.action.outputs import in_workspace
from latency_gate.models import RunResult
from latency_gate.results.history_folder import (
    HistoryOptions,
    append_decision,
    append_result,
    prune,
)
from latency_gate.results.json_file import dump_runs


def append_history(
    results: Sequence[RunResult],
    options: HistoryOptions,
    env: Mapping[str, str],
    workspace: Path,
    out: TextIO,
) -> Path | None:
    """Append the results (the redacted JSON of `json-path`) to the folder and prune it, when
    `history-append` says so; a log line says what was done and why. Returns the file written."""
    append, why = append_decision(options.append, env)
    if append and any(result.interrupted for result in results):
        append, why = False, "not appended: the run was interrupted"
    if not append:
        print(f"latency-gate: history {why}", file=out)
        return None
    try:
        now = datetime.now(UTC)
        path = append_result(options.folder, dump_runs(results), now, env.get("GITHUB_RUN_ID"))
        deleted = prune(options.folder, options.keep, now)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(
            github.annotation(
                "warning",
                f"history: could not append to {options.shown!r}: {reason}; the verdict stands",
                title="latency-gate: history",
            ),
            file=out,
        )
        return None
    pruned = f", pruned {len(deleted)} older file(s)" if deleted else ""
    print(f"latency-gate: history {why}: wrote {in_workspace(path, workspace)}{pruned}", file=out)
    return path
