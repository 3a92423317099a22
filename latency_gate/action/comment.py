"""The sticky PR comment as the `comment` input says: on which events and results it is created,
kept up to date or left alone, its marker and body, and a log line or warning saying what became
of it. GitHub trouble is a warning here, never a changed verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from latency_gate import github
from latency_gate.action.settings import ActionSettings
from latency_gate.config.files import read_bounded
from latency_gate.config.json_data import load_json
from latency_gate.models import RunResult
from latency_gate.report.markdown import is_run_url, render_comment

MAX_EVENT_BYTES = 64 * 1024 * 1024  # GitHub's event payloads are far smaller


def post_comment(
    settings: ActionSettings, results: Sequence[RunResult], env: Mapping[str, str], out: TextIO
) -> str | None:
    """Create or update the sticky PR comment as the `comment` mode says; never raises."""
    if settings.comment == "never":
        return None
    event_name = env.get("GITHUB_EVENT_NAME", "")
    event = _load_event(env.get("GITHUB_EVENT_PATH"))
    pr_number = github.pull_request_number(event_name, event)
    if pr_number is None:
        note = f"not a pull request event ({event_name or 'unknown'}): no PR comment"
        if settings.comment == "always":
            print(github.annotation("warning", note, title="latency-gate"), file=out)
        else:
            print(f"latency-gate: {note}", file=out)
        return None
    # on-failure starts a comment only on a failure, but keeps one that an earlier failing
    # run left up to date on every run: otherwise it would go on showing a stale FAIL.
    passed = all(result.verdict.passed for result in results)
    create = not (settings.comment == "on-failure" and passed)
    repository = env.get("GITHUB_REPOSITORY", "")
    marker = github.comment_marker(
        env.get("GITHUB_WORKFLOW", ""),
        env.get("GITHUB_JOB", ""),
        [result.display_name for result in results],
    )
    body = render_comment(results, marker=marker, run_url=_run_url(env))
    with github.GitHubClient(
        api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
        token=settings.github_token,
        repository=repository,
    ) as client:
        outcome = client.upsert_comment(pr_number, marker, body, create=create)
    if outcome.action == "skipped":
        print(
            "latency-gate: the budget held and there is no earlier report to update, "
            "so no PR comment (comment: on-failure)",
            file=out,
        )
    elif outcome.warning:
        print(
            github.annotation("warning", outcome.warning, title="latency-gate: PR comment"),
            file=out,
        )
    else:
        print(f"latency-gate: PR comment {outcome.action}: {outcome.url}", file=out)
    return outcome.url


def _load_event(path: str | None) -> Mapping[str, object]:
    if not path:
        return {}
    try:
        # load_json: a payload nested thousands deep (a repository_dispatch's client_payload is
        # whatever its sender posts) is a ValueError there, not json's RecursionError.
        data = load_json(read_bounded(Path(path), MAX_EVENT_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _run_url(env: Mapping[str, str]) -> str | None:
    """The workflow run's page, where the job summary is, or None outside a workflow run."""
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    repository, run_id = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_RUN_ID", "")
    url = f"{server}/{repository}/actions/runs/{run_id}"
    return url if repository and run_id.isdigit() and is_run_url(url) else None
