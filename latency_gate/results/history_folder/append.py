"""This run's result appended to the history folder: when `auto` appends, the file written, the
folder pruned, and the commit a result records to name it in later runs' trends."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from latency_gate.config.files import read_bounded
from latency_gate.config.json_data import load_json
from latency_gate.models import RunResult
from latency_gate.results.history_folder.read import OURS, AppendMode, named_time, not_a_file

__all__ = ["append_decision", "append_result", "prune", "with_commit"]

_RUN_ID = re.compile(r"[0-9A-Za-z]{1,40}")
MAX_EVENT_BYTES = 64 * 1024 * 1024
# A commit's SHA-1, or SHA-256 in a repository of that format.
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def with_commit(results: Sequence[RunResult], environ: Mapping[str, str]) -> list[RunResult]:
    """The results with the commit they measured (GITHUB_SHA, when it is a commit's SHA), which
    names each run in the trend of the runs held against it later."""
    commit = environ.get("GITHUB_SHA", "").strip().lower()
    if not _COMMIT.fullmatch(commit):
        return list(results)
    return [result.model_copy(update={"commit": commit}) for result in results]


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
        return True, "appended (history-append is true)"
    if mode == "false":
        return False, "not appended (history-append is false)"
    if environ.get("GITHUB_ACTIONS") != "true":
        return False, "not appended: not in GitHub Actions (history-append auto)"
    event = environ.get("GITHUB_EVENT_NAME", "")
    if event.startswith("pull_request"):
        return False, f"not appended: a {event} run never appends (history-append auto)"
    if event not in (*_MAIN_EVENTS, "workflow_run"):
        return False, (
            f"not appended: {_a(event or 'unnamed')} event may be about a pull request "
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
    trigger = _text(payload, "workflow_run", "event")
    if trigger is None:
        return "a run whose event the payload does not name"
    if trigger not in _MAIN_EVENTS:
        return f"{_a(trigger)} run"
    branch = _text(payload, "workflow_run", "head_branch")
    if branch != default:
        return f"a run of the branch {branch!r}"
    head = _text(payload, "workflow_run", "head_repository", "full_name")
    here = _text(payload, "repository", "full_name")
    if head is None or head != here:
        return f"a run of another repository ({head!r})"
    return None


def _a(word: str) -> str:
    """`word` after its indefinite article: "an issue_comment", "a push"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _read_event(path: Path) -> bytes:
    return read_bounded(path, MAX_EVENT_BYTES)


def _payload(path: str, read: Callable[[Path], bytes]) -> object:
    if not path:
        return None
    try:
        # load_json: a payload nested thousands deep is a ValueError, not a RecursionError.
        return load_json(read(Path(path)).decode("utf-8"))
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
    from latency_gate.assess.compare.history import FUTURE_SLACK  # noqa: PLC0415

    latest = now.timestamp() + FUTURE_SLACK
    ours = sorted(
        (
            entry.name
            for entry in os.scandir(folder)
            if OURS.fullmatch(entry.name) and not_a_file(entry) is None
        ),
        key=lambda name: ((named_time(name) or 0.0) <= latest, name),
    )
    deleted = []
    for name in ours[: max(0, len(ours) - keep)]:
        path = folder / name
        path.unlink()
        deleted.append(path)
    return deleted
