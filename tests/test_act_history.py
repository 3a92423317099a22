"""The README's history workflow (docs/examples/latency-history.yml) run by act, offline, with
the Actions cache carrying the history folder from run to run through act's own cache server.

Three pushes to the default branch, then a pull request, each a separate act run (a runner of
its own: act copies the workspace afresh for every run, so the folder can only come through the
cache). The first push finds no cache and no history and writes the folder's first result; the
second and third restore the newest cache, compare with what the earlier runs wrote (fewer than
3 runs: the newest one) and append; the pull request restores the third push's cache, is judged
against the history of those 3 runs, never appends, and does not save; its PR comment (to the
fake GitHub API) carries the trend chart.

What runs: act 0.2.89 with its built-in cache server (`--cache-server-path`, on 127.0.0.1);
actions/cache v5.0.5, restore and save, as its own source builds it (tests/act/actions-cache,
built by .ci/setup-act.sh with npm, since act cannot clone it offline; `--local-repository
actions/cache@v5=DIR`); the action itself as `latency-gate/latency-gate@main` from a copy of this
repository (`--local-repository`), built from its Dockerfile on the stand-in base. The only
change to the workflow: the endpoint's URLs are two demo endpoints' on the bridge (main's, and
the pull request's preview on another port). What does not run here:
GitHub's cache service, and its scoping of caches by branch (act's server hands any cache to any
run: that a pull request reads its base branch's caches is GitHub's rule, not tested here).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from demo_process import demo_server
from fake_github import FakeGitHub
from test_act import (
    PR_NUMBER,
    REPOSITORY,
    TOKEN,
    ActEnv,
    ActRun,
    _commit_all,
    _describe,
    _unavailable,
    act_env,  # noqa: F401 - the fixture, shared with test_act.py
    run_act,
)

# alone: its runs are compared with each other (a regression beyond noise fails them), and the
# first pass's load changes between one run and the next (tests/run-all.sh's second pass).
pytestmark = [pytest.mark.act, pytest.mark.docker, pytest.mark.slow, pytest.mark.alone]

EXAMPLE = REPO_ROOT / "docs" / "examples" / "latency-history.yml"
EXAMPLE_URL = (
    "url: ${{ github.event_name == 'pull_request' && format('https://pr-{0}.preview.example.com"
    "/v1/chat/completions', github.event.number) || "
    "'https://staging.example.com/v1/chat/completions' }}"
)
# Main's runs measure one demo endpoint (its "staging"), the pull request another on a port of
# its own (its preview): the same request at another origin.
ACT_URL = "url: ${{ github.event_name == 'pull_request' && env.PREVIEW_URL || env.DEMO_URL }}"
CACHE_ACTION = REPO_ROOT / "tests" / "act" / "actions-cache"
# What act needs of actions/cache: its manifests and the built bundles (not its node_modules).
CACHE_ACTION_PARTS = ("action.yml", "LICENSE", "restore", "save", "dist")
JOB = "latency"
FOLDER = ".latency-history"


@dataclass(frozen=True)
class HistoryRuns:
    pushes: list[ActRun]
    pull_request: ActRun
    github: FakeGitHub
    main_origin: str  # what main's pushes measured
    preview_origin: str  # what the pull request measured


def _origin(url: str) -> str:
    return url.split("/v1/", maxsplit=1)[0]


def _repository_copy(destination: Path) -> Path:
    """The repository's files (tracked, and new ones not ignored) in a git repository of its
    own: what `latency-gate/latency-gate@main` resolves to (act tars a local repository whole)."""
    listed = subprocess.run(
        [
            "git",
            "-C",
            str(REPO_ROOT),
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (REPO_ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, destination / name)
    _commit_all(destination)
    return destination


def _cache_action_copy(destination: Path) -> Path:
    if not (CACHE_ACTION / "dist" / "restore-only" / "index.js").is_file():
        _unavailable(f"actions/cache is not built in {CACHE_ACTION}: run .ci/setup-act.sh")
    destination.mkdir()
    for part in CACHE_ACTION_PARTS:
        source = CACHE_ACTION / part
        if source.is_dir():
            shutil.copytree(source, destination / part)
        else:
            shutil.copy2(source, destination / part)
    _commit_all(destination)
    return destination


def _event(folder: Path, name: str, payload: dict[str, object]) -> str:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


def _pull_request(root: Path) -> str:
    """A pull_request event's payload (PR_NUMBER, from `feature` into main) in `root`."""
    repo = {"default_branch": "main", "full_name": REPOSITORY}
    return _event(
        root,
        "pull_request",
        {
            "action": "synchronize",
            "number": PR_NUMBER,
            "pull_request": {
                "number": PR_NUMBER,
                "head": {"sha": "0" * 40, "ref": "feature"},
                "base": {"ref": "main"},
            },
            "repository": repo,
        },
    )


@pytest.fixture(scope="module")
def history_runs(
    act_env: ActEnv,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HistoryRuns]:
    """Three pushes and a pull request of the example workflow, one cache server between them."""
    root = tmp_path_factory.mktemp("act-history")
    cache_action = _cache_action_copy(root / "actions-cache")
    repository = _repository_copy(root / "repository")
    workdir = root / "workdir"
    (workdir / ".github" / "workflows").mkdir(parents=True)
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.count(EXAMPLE_URL) == 1
    workflow = workdir / ".github" / "workflows" / EXAMPLE.name
    workflow.write_text(text.replace(EXAMPLE_URL, ACT_URL), encoding="utf-8")
    _commit_all(workdir)
    repo = {"default_branch": "main", "full_name": REPOSITORY}
    push = _event(root, "push", {"ref": "refs/heads/main", "repository": repo})
    pull_request = _pull_request(root)
    cache_server = root / "cache-server"
    with (
        FakeGitHub(token=TOKEN, host=act_env.bridge) as github,
        demo_server(act_env.bridge) as url,
        demo_server(act_env.bridge) as preview,
    ):
        common = (
            *("--local-repository", f"actions/cache@v5={cache_action}"),
            *("--local-repository", f"latency-gate/latency-gate@main={repository}"),
            *("-s", f"GITHUB_TOKEN={TOKEN}", "--env", f"GITHUB_API_URL={github.url}"),
            *("--env", f"GITHUB_REPOSITORY={REPOSITORY}", "--env", f"DEMO_URL={url}"),
            *("--env", f"PREVIEW_URL={preview}"),
        )

        def run(event: str, payload: str, run_id: int) -> ActRun:
            return run_act(
                act_env,
                workdir,
                event,
                str(workflow.relative_to(workdir)),
                *common,
                *("-e", payload, "--env", f"GITHUB_RUN_ID={run_id}"),
                cache_server=cache_server,
            )

        pushes = [run("push", push, run_id) for run_id in (101, 102, 103)]
        last = run("pull_request", pull_request, 104)
        print(
            "latency-history.yml under act: "
            + ", ".join(f"{r.seconds:.1f} s" for r in [*pushes, last])
        )
        yield HistoryRuns(pushes, last, github, _origin(url), _origin(preview))


def _said(run: ActRun) -> str:
    """Everything the job printed, one line."""
    return " ".join(" ".join(run.messages(JOB)).split())


def test_every_run_succeeds(history_runs: HistoryRuns) -> None:
    """All four runs pass: the history of an unchanged endpoint does not flag it."""
    for run in [*history_runs.pushes, history_runs.pull_request]:
        assert run.jobs() == {JOB: "success"}, _describe(run)
        assert run.returncode == 0


def test_the_first_push_starts_the_history(history_runs: HistoryRuns) -> None:
    """No cache yet: no history is said, this run's result is written, and the folder saved."""
    said = _said(history_runs.pushes[0])
    assert "Cache not found for input keys: latency-history-101, latency-history-" in said
    assert "no history folder at .latency-history (a first run?)" in said
    assert "history appended: a push run on the default branch 'main': wrote " in said
    assert "-101.json" in said
    assert "Cache saved with key: latency-history-101" in said


@pytest.mark.parametrize(("push", "earlier"), [(1, 1), (2, 2)])
def test_later_pushes_read_what_the_earlier_ones_wrote(
    history_runs: HistoryRuns, push: int, earlier: int
) -> None:
    """Each later push restores the newest cache, compares with the earlier runs' results
    (fewer than 3: the newest one, said so), appends its own and saves under its own key."""
    said = _said(history_runs.pushes[push])
    run_id = 101 + push
    assert f"Cache restored from key: latency-history-{run_id - 1}" in said
    runs = "run" if earlier == 1 else "runs"
    assert (
        f"history: {earlier} usable {runs}, fewer than 3: compared with the newest one only; "
        "drift between runs is not accounted for" in said
    )
    assert f"-{run_id}.json" in said
    assert f"Cache saved with key: latency-history-{run_id}" in said


def test_the_pull_request_is_judged_against_main_history(history_runs: HistoryRuns) -> None:
    """The pull request restores the third push's cache and is judged against those 3 runs,
    though it probes its own preview at another origin (said so), never appends, and skips the
    save step."""
    run = history_runs.pull_request
    said = _said(run)
    assert "Cache restored from key: latency-history-103" in said
    assert (
        "against the history of 3 runs (prediction interval, drift between runs included): no "
        "number regressed" in said
    )
    assert (
        f"This run measured {history_runs.preview_origin}; the history's runs measured "
        f"{history_runs.main_origin}: the same request" in said
    )
    assert "history not appended: a pull_request run never appends (history-append auto)" in said
    assert "Cache saved" not in said
    assert "Save the latency history" not in run.steps(JOB)


def test_the_pull_request_comment_draws_the_trend(history_runs: HistoryRuns) -> None:
    """The PR comment (on the fake GitHub API) carries one chart: 3 earlier runs and this one."""
    (comment,) = history_runs.github.all_comments()
    body = comment["body"]
    assert body.count("```mermaid") == 1
    assert "warm p95, 3 earlier runs and this one" in body
    assert history_runs.github.violations == []
