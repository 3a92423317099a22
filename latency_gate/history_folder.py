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
import time
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
from latency_gate.formatting import plural
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
    from latency_gate.assess.history import (  # noqa: PLC0415 (start-up)
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
    """Read the folder and match its runs to `targets` (assess.history.HistoryPlan).

    Files are read newest first (by the time in our names, else by the file's own time) until
    every target has `size` usable runs, and at most the newest `keep` of them: a folder holds
    no more once pruned, and a folder of thousands would otherwise be parsed whole for the ten
    runs used. A file or a run dated past `now` (the clock, seconds since 1970) by more than
    assess.history.FUTURE_SLACK is skipped: it would stay "the newest" until that date.

    Each skipped file is passed to `warn`, named. ConfigError (naming `option`) only when the
    path is not a folder or the folder cannot be listed.
    """
    from latency_gate.assess.history import (  # noqa: PLC0415
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
        from latency_gate.assess.baseline import config_differences  # noqa: PLC0415

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
    named = _named_time(entry.name)
    return (info.st_mtime if named is None else named), None


def _named_time(name: str) -> float | None:
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


def _not_a_file(entry: os.DirEntry[str]) -> str | None:
    """Why a folder entry is not read as a result file: only regular files are (a link could
    point anywhere)."""
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if stat.S_ISREG(mode) else "not a regular file"


# Events whose run measures the default branch's own code, once GITHUB_REF says it is that
# branch. Not issue_comment, repository_dispatch, check_run, deployment_status and the like:
# GITHUB_REF is the default branch there whatever the event is about (a pull request's comment,
# a preview's deployment), so `auto` would append a pull request's run to main's history.
_MAIN_EVENTS = ("push", "schedule", "workflow_dispatch")


def append_decision(
    mode: AppendMode, environ: Mapping[str, str], *, read: Callable[[Path], bytes] | None = None
) -> tuple[bool, str]:
    """Whether to append this run to the history, and why (said in the log).

    `auto` appends in GitHub Actions on a push, a schedule or a manual dispatch of the
    repository's default branch (GITHUB_REF is refs/heads/<repository.default_branch of the
    event payload at GITHUB_EVENT_PATH>), and on a `workflow_run` that followed one of those on
    the default branch of this repository. Any other event may be about a pull request, whose
    history is main's: not appended (`true` appends on it, under an `if:` of the workflow's own).
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
    if event not in (*_MAIN_EVENTS, "workflow_run"):
        return False, (
            f"not appended: a {event or 'unnamed'} event may be about a pull request "
            "(history-append auto appends on push, schedule, workflow_dispatch and a "
            "workflow_run of those; true appends on any)"
        )
    payload = _payload(environ.get("GITHUB_EVENT_PATH", ""), read or _read_event)
    default = _text(payload, "repository", "default_branch")
    if default is None:
        return False, "not appended: the event payload names no default branch"
    ref = environ.get("GITHUB_REF", "")
    if ref != f"refs/heads/{default}":
        return False, f"not appended: {ref!r} is not the default branch {default!r}"
    if event == "workflow_run" and (why := _not_main_run(payload, default)) is not None:
        return False, f"not appended: the workflow_run followed {why} (history-append auto)"
    return True, f"appended: a {event} run on the default branch {default!r}"


def _not_main_run(payload: object, default: str) -> str | None:
    """Why the run a `workflow_run` event followed is not a run of the default branch's own
    code (a pull request's, a fork's, another branch's), or None when it is."""
    trigger = _text(payload, "workflow_run", "event") or "an unnamed event"
    if trigger not in _MAIN_EVENTS:
        return f"a {trigger} run"
    branch = _text(payload, "workflow_run", "head_branch")
    if branch != default:
        return f"a run of the branch {branch!r}"
    head = _text(payload, "workflow_run", "head_repository", "full_name")
    here = _text(payload, "repository", "full_name")
    if head is None or head != here:
        return f"a run of another repository ({head!r})"
    return None


def _read_event(path: Path) -> bytes:
    return read_bounded(path, MAX_EVENT_BYTES)


def _payload(path: str, read: Callable[[Path], bytes]) -> object:
    if not path:
        return None
    try:
        return json.loads(read(Path(path)))
    except (OSError, ValueError):
        return None


def _text(payload: object, *keys: str) -> str | None:
    """The non-empty string at payload[keys[0]][keys[1]]..., or None."""
    for key in keys:
        payload = payload.get(key) if isinstance(payload, dict) else None
    return payload if isinstance(payload, str) and payload else None


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


def prune(folder: Path, keep: int, now: datetime) -> list[Path]:
    """Delete all but the newest `keep` of this tool's history files (their names sort by
    time); no other file, link or folder is touched. A name dated past `now` by more than
    FUTURE_SLACK (a clock ahead, or a file made so) counts as the oldest: ten of them would
    otherwise outrank every file written from now on, which would be pruned at once, for good.
    Returns the files deleted."""
    from latency_gate.assess.history import FUTURE_SLACK  # noqa: PLC0415

    latest = now.timestamp() + FUTURE_SLACK
    ours = sorted(
        (
            entry.name
            for entry in os.scandir(folder)
            if OURS.fullmatch(entry.name) and _not_a_file(entry) is None
        ),
        key=lambda name: ((_named_time(name) or 0.0) <= latest, name),
    )
    deleted = []
    for name in ours[: max(0, len(ours) - keep)]:
        path = folder / name
        path.unlink()
        deleted.append(path)
    return deleted
