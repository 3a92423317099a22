"""The history folder (`--history DIR`, action input `history`): read before the run, appended
to after it. An edge package: it reads and writes files; the rule that judges a run against the
runs read here is assess/compare/history.py.

A history folder is a cache (the Actions cache, most often): a file in it that cannot be read or
is not a result file is skipped with a warning naming it, never an error; a folder that is not
there is a first run. Only a path that is not a folder, or a folder that cannot be listed, is
bad input (exit 2). Reading is read.py; appending (when, how, the pruning, the commit a result
records) is append.py.

Appending writes this run's result (the same redacted JSON as `--json`) as a new file,
`latency-gate-<UTC time>[-<run id>].json`, never over another, then prunes the folder to the
newest `keep` files of that name pattern: no other file is ever deleted.
"""

from latency_gate.results.history_folder.append import (
    append_decision,
    append_result,
    prune,
    with_commit,
)
from latency_gate.results.history_folder.read import (
    DEFAULT_KEEP,
    AppendMode,
    HistoryOptions,
    parse_history_options,
    plan_history,
)

__all__ = [
    "DEFAULT_KEEP",
    "AppendMode",
    "HistoryOptions",
    "append_decision",
    "append_result",
    "parse_history_options",
    "plan_history",
    "prune",
    "with_commit",
]
