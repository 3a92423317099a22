"""The history folder read before the run: its options validated, its files read newest first
and matched to the targets (history_folder/__init__.py says what a history folder is)."""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from latency_gate.config import Target
from latency_gate.config.parsing import parse_count
from latency_gate.config.regression import RegressionLimit
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.formatting import plural
from latency_gate.models import RunResult
from latency_gate.results.loading import load_runs

if TYPE_CHECKING:
    from latency_gate.assess.compare.history import HistoryPlan

__all__ = [
    "DEFAULT_KEEP",
    "OURS",
    "AppendMode",
    "HistoryOptions",
    "named_time",
    "not_a_file",
    "parse_history_options",
    "plan_history",
]

AppendMode = Literal["auto", "true", "false"]
APPEND_MODES: tuple[AppendMode, ...] = ("auto", "true", "false")
DEFAULT_KEEP = 50
# What append_result writes, and all prune ever deletes.
OURS = re.compile(r"latency-gate-\d{8}T\d{6}Z(?:-[0-9A-Za-z]{1,40})?(?:-\d{1,3})?\.json")


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
    from latency_gate.assess.compare.history import (  # noqa: PLC0415 (start-up)
        DEFAULT_SIZE,
        MAX_RUNS,
        MIN_RUNS,
    )

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
    *,
    now: float | None = None,
) -> HistoryPlan:
    """Read the folder and match its runs to `targets` (assess.compare.history.HistoryPlan).

    Files are read newest first (by the time in our names, else by the file's own time) until
    every target has `size` usable runs, and at most the newest `keep` of them: a folder holds
    no more once pruned, and a folder of thousands would otherwise be parsed whole for the ten
    runs used. A file or a run dated past `now` (the clock, seconds since 1970) by more than
    assess.compare.history.FUTURE_SLACK is skipped: it would stay "the newest" until that date.

    Each skipped file is passed to `warn`, named. ConfigError (naming `option`) only when the
    path is not a folder or the folder cannot be listed.
    """
    from latency_gate.assess.compare.history import (  # noqa: PLC0415
        FUTURE_SLACK,
        HistoryPlan,
        match_history,
    )

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
    latest = (time.time() if now is None else now) + FUTURE_SLACK
    skipped: list[str] = []
    dated: list[tuple[float, os.DirEntry[str]]] = []
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue
        when, why = _dated(entry)
        if why is None and when > latest:
            why = f"dated {_utc(when)}, after this run's clock: a clock ahead, or a file made so"
        if why is None:
            dated.append((when, entry))
        else:
            skipped.append(f"{entry.name!r} ({why})")
    dated.sort(key=lambda pair: (pair[0], pair[1].name), reverse=True)
    runs: list[RunResult] = []
    usable = _Usable(targets, options.size)
    for _, entry in dated[: options.keep]:
        if usable.full:
            break
        try:
            found = load_runs(Path(entry.path), option)
        except ConfigError as exc:
            why = "; ".join(problem.message for problem in exc.problems)
            skipped.append(f"{entry.name!r} ({why})")
            continue
        ahead = [run for run in found if run.started_at > latest]
        if ahead:
            started = _utc(max(run.started_at for run in ahead))
            skipped.append(
                f"{entry.name!r} (a run started {started}, after this run's clock: a clock "
                "ahead, or a file made so)"
            )
        taken = [run for run in found if run.started_at <= latest]
        usable.add(taken)
        runs += taken
    unread = len(dated) - min(len(dated), options.keep)
    if unread and not usable.full:
        warn(
            f"history: {plural(unread, 'older file')} of {options.shown} not read: only the "
            f"newest {options.keep} are (history-keep)"
        )
    plan = HistoryPlan(
        options.shown,
        limit,
        options.size,
        match_history(targets, runs, options.size),
        tuple(sorted(skipped)),
    )
    for warning in plan.warnings():
        warn(warning)
    return plan


class _Usable:
    """How many usable runs (the same name and comparable settings) of each target were read."""

    def __init__(self, targets: Sequence[Target], size: int) -> None:
        self.settings = {target.name: target.comparable() for target in targets}
        self.counts = dict.fromkeys(self.settings, 0)
        self.size = size

    def add(self, runs: Sequence[RunResult]) -> None:
        from latency_gate.assess.compare.baseline import config_differences  # noqa: PLC0415

        for run in runs:
            settings = self.settings.get(run.target)
            if settings is not None and not config_differences(settings, run.config):
                self.counts[run.target] += 1

    @property
    def full(self) -> bool:
        """Every target has `size` usable runs: no older file can change which are used."""
        return all(count >= self.size for count in self.counts.values())


def _dated(entry: os.DirEntry[str]) -> tuple[float, str | None]:
    """When a folder entry was written (the time in our name, else the file's own time), or
    why it is not read as a result file: only regular files are (a link could point anywhere)."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return 0.0, exc.strerror or str(exc)
    if not stat.S_ISREG(info.st_mode):
        return 0.0, "not a regular file"
    named = named_time(entry.name)
    return (info.st_mtime if named is None else named), None


def named_time(name: str) -> float | None:
    """The UTC time in one of our file names, seconds since 1970; None for another name."""
    if not OURS.fullmatch(name):
        return None
    stamp = name.removeprefix("latency-gate-")[:16]
    try:
        return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:  # 20261399T999999Z: our shape, no date
        return None


def _utc(when: float) -> str:
    try:
        return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, ValueError, OSError):  # a file's own time past the year 9999
        return f"{when:.0f} s after 1970"


def not_a_file(entry: os.DirEntry[str]) -> str | None:
    """Why a folder entry is not read as a result file: only regular files are (a link could
    point anywhere)."""
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if stat.S_ISREG(mode) else "not a regular file"
