"""The history folder (`--history DIR`, action input `history`): read before the run, appended
to after it. An edge module: it reads and writes files; the rule that judges a run against the
runs read here is assess/history.py.

A history folder is a cache (the Actions cache, most often): a file in it that cannot be read or
is not a result file is skipped with a warning naming it, never an error; a folder that is not
there is a first run. Only a path that is not a folder, or a folder that cannot be listed, is
bad input (exit 2).

Appending writes this run's result (the same redacted JSON as `--json`) as a new file,
`latency-gate-<UTC time>[-<run id>].json`, never over another, then prunes the folder to the
newest `keep` files of that name pattern: no other file is ever deleted.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from latency_gate.config import Target
from latency_gate.config.files import read_bounded
from latency_gate.config.parsing import parse_count
from latency_gate.config.regression import RegressionLimit
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.models import RunResult
from latency_gate.run import load_runs

if TYPE_CHECKING:
    from latency_gate.assess.history import HistoryPlan

__all__ = [
    "DEFAULT_KEEP",
    "AppendMode",
    "HistoryOptions",
    "append_decision",
    "append_result",
    "parse_history_options",
    "plan_history",
    "prune",
]

AppendMode = Literal["auto", "true", "false"]
APPEND_MODES: tuple[AppendMode, ...] = ("auto", "true", "false")
DEFAULT_KEEP = 50
MAX_RUNS = 1000
# What append_result writes, and all prune ever deletes.
OURS = re.compile(r"latency-gate-\d{8}T\d{6}Z(?:-[0-9A-Za-z]{1,40})?(?:-\d{1,3})?\.json")
_RUN_ID = re.compile(r"[0-9A-Za-z]{1,40}")
MAX_EVENT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class HistoryOptions:
    """The history settings, validated: the folder (as given, and resolved), the runs used,
    the files kept, and when to append."""

    folder: Path
    shown: str
    size: int
    keep: int
    append: AppendMode


def parse_history_options(
    folder: Path,
    shown: str,
    *,
    size: str | None,
    keep: str | None,
    append: str | None,
    names: Mapping[str, str],
) -> HistoryOptions:
    """Validate the history settings; ConfigError names each bad one as `names` spells it
    (keys "size", "keep", "append")."""
    from latency_gate.assess.history import DEFAULT_SIZE, MIN_RUNS  # noqa: PLC0415 (start-up)

    problems: list[InputProblem] = []

    def count(key: str, text: str | None, default: int, minimum: int) -> int:
        if text is None:
            return default
        try:
            value = parse_count(text, minimum)
        except ValueError as exc:
            problems.append(InputProblem(names[key], str(exc)))
            return default
        if value > MAX_RUNS:
            problems.append(InputProblem(names[key], f"expected at most {MAX_RUNS}, got {value}"))
        return value

    runs = count("size", size, DEFAULT_SIZE, MIN_RUNS)
    kept = count("keep", keep, DEFAULT_KEEP, 1)
    if kept < runs and not problems:
        problems.append(
            InputProblem(
                names["keep"],
                f"keeps {kept} files, fewer than the {runs} runs {names['size']} uses: "
                "the history could never fill",
            )
        )
    mode = (append or "auto").strip().lower()
    if mode not in APPEND_MODES:
        problems.append(
            InputProblem(names["append"], f"expected auto, true or false; got {append!r}")
        )
    if problems:
        raise ConfigError(problems)
    return HistoryOptions(folder, shown, runs, kept, mode)  # type: ignore[arg-type]


def plan_history(
    targets: Sequence[Target],
    options: HistoryOptions,
    limit: RegressionLimit,
    option: str,
    warn: Callable[[str], None],
) -> HistoryPlan:
    """Read the folder and match its runs to `targets` (assess.history.HistoryPlan).

    Each skipped file is passed to `warn`, named. ConfigError (naming `option`) only when the
    path is not a folder or the folder cannot be listed.
    """
    from latency_gate.assess.history import HistoryPlan, match_history  # noqa: PLC0415

    folder = options.folder
    try:
        if not folder.exists():
            return HistoryPlan(options.shown, limit, options.size, None)
        if not folder.is_dir():
            raise ConfigError.single(option, f"{options.shown!r} is not a folder")
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError.single(option, f"cannot read {options.shown!r}: {reason}") from None
    runs: list[RunResult] = []
    unreadable: list[str] = []
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue
        why = _not_a_file(entry)
        if why is None:
            try:
                runs += load_runs(Path(entry.path), option)
            except ConfigError as exc:
                why = "; ".join(problem.message for problem in exc.problems)
        if why is not None:
            unreadable.append(f"{entry.name!r} ({why})")
    plan = HistoryPlan(
        options.shown,
        limit,
        options.size,
        match_history(targets, runs, options.size),
        tuple(unreadable),
    )
    for warning in plan.warnings():
        warn(warning)
    return plan


def _not_a_file(entry: os.DirEntry[str]) -> str | None:
    """Why a folder entry is not read as a result file: only regular files are (a link could
    point anywhere)."""
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if stat.S_ISREG(mode) else "not a regular file"


def append_decision(
    mode: AppendMode, environ: Mapping[str, str], *, read: Callable[[Path], bytes] | None = None
) -> tuple[bool, str]:
    """Whether to append this run to the history, and why (said in the log).

    `auto` appends in GitHub Actions on a push (or any event but a pull request's) to the
    repository's default branch: GITHUB_REF is refs/heads/<repository.default_branch of the
    event payload at GITHUB_EVENT_PATH>. A pull request never appends: its history is main's.
    """
    if mode == "true":
        return True, "history-append is true"
    if mode == "false":
        return False, "history-append is false"
    if environ.get("GITHUB_ACTIONS") != "true":
        return False, "not appended: not in GitHub Actions (history-append auto)"
    event = environ.get("GITHUB_EVENT_NAME", "")
    if event.startswith("pull_request"):
        return False, f"not appended: a {event} run never appends (history-append auto)"
    default = _default_branch(environ.get("GITHUB_EVENT_PATH", ""), read or _read_event)
    if default is None:
        return False, "not appended: the event payload names no default branch"
    ref = environ.get("GITHUB_REF", "")
    if ref != f"refs/heads/{default}":
        return False, f"not appended: {ref!r} is not the default branch {default!r}"
    return True, f"appended: a {event or 'push'} run on the default branch {default!r}"


def _read_event(path: Path) -> bytes:
    return read_bounded(path, MAX_EVENT_BYTES)


def _default_branch(path: str, read: Callable[[Path], bytes]) -> str | None:
    if not path:
        return None
    try:
        payload = json.loads(read(Path(path)))
    except (OSError, ValueError):
        return None
    repository = payload.get("repository") if isinstance(payload, dict) else None
    branch = repository.get("default_branch") if isinstance(repository, dict) else None
    return branch if isinstance(branch, str) and branch else None


def append_result(folder: Path, text: str, now: datetime, run_id: str | None = None) -> Path:
    """Write `text` (a result document) into `folder` as a new file named by `now` (UTC) and
    `run_id` (kept only when it is a plain id), never over an existing file; returns its path.
    OSError when it cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    suffix = f"-{run_id}" if run_id and _RUN_ID.fullmatch(run_id) else ""
    for attempt in range(1, 1000):
        again = "" if attempt == 1 else f"-{attempt}"
        path = folder / f"latency-gate-{stamp}{suffix}{again}.json"
        try:
            with path.open("x", encoding="utf-8") as file:
                file.write(text)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free name for {stamp} in {folder}")


def prune(folder: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` of this tool's history files (their names sort by
    time); no other file, link or folder is touched. Returns the files deleted."""
    ours = sorted(
        entry.name
        for entry in os.scandir(folder)
        if OURS.fullmatch(entry.name) and _not_a_file(entry) is None
    )
    deleted = []
    for name in ours[: max(0, len(ours) - keep)]:
        path = folder / name
        path.unlink()
        deleted.append(path)
    return deleted
