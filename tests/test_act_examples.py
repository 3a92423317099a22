"""Every workflow of docs/examples/ run by act, offline, against loopback demo endpoints.

The README and docs/ quote these files whole (tests/test_docs_examples.py checks that), so what
runs here is what a user pastes. Each run makes only the changes a machine without GitHub
needs, each named in its CHANGES: the endpoint's URL becomes a demo endpoint's (on the bridge
for the Docker action, whose container is there; on 127.0.0.1 for the host form, which runs on
the runner), and in the matrix's merge job the package is installed from a copy of this
repository instead of GitHub, and `gh pr comment` (GitHub's CLI, which talks to github.com
only) is not run. Everything else is the file as written: the action itself as
`latency-gate/latency-gate@main` (and `.../host@main`) from a copy of this repository
(`--local-repository`), actions/setup-python and actions/cache as tests/test_act.py and
tests/test_act_history.py give them, and actions/upload-artifact and download-artifact by the
stand-ins in tests/act/ (a folder shared by the jobs of one run).

latency-history.yml and goodput-nightly.yml are run by tests/test_act_history.py and
tests/test_act_nightly.py, over several runs sharing a cache; test_every_example_is_run_here_
or_by_its_own_module keeps that list whole.

Set up as tests/test_act.py is (.ci/setup-act.sh); skips without it, fails instead under
LATENCY_GATE_REQUIRE_ACT=1.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from demo_process import demo_server
from fake_github import FakeGitHub
from test_act import (
    REPOSITORY,
    TOKEN,
    ActEnv,
    ActRun,
    _commit_all,
    _describe,
    act_env,  # noqa: F401 - the fixture, shared with test_act.py
    run_act,
)
from test_act_history import _cache_action_copy, _event, _pull_request, _repository_copy

pytestmark = [pytest.mark.act, pytest.mark.docker, pytest.mark.slow]

EXAMPLES = REPO_ROOT / "docs" / "examples"
STAND_INS = REPO_ROOT / "tests" / "act"
# The workflows of docs/examples/ that other act modules run, over several runs each.
RUN_ELSEWHERE = {
    "latency-history.yml": "tests/test_act_history.py",
    "goodput-nightly.yml": "tests/test_act_nightly.py",
}
RUN_HERE = [
    "baseline-from-main.yml",
    "http-endpoint.yml",
    "matrix-merge.yml",
    "model-upgrade.yml",
    "openai-chat.yml",
]
OPENAI_KEY = "sk-act-example-0123456789abcdef"
# The OpenAI-compatible examples' endpoint, as act's runs reach a demo instead.
OPENAI_TO_DEMO = {
    "url: https://api.openai.com/v1/chat/completions # any OpenAI-compatible server": (
        "url: ${{ env.DEMO_URL }}"
    )
}


def _workflow(workdir: Path, name: str, changes: dict[str, str]) -> str:
    """docs/examples/NAME as a workflow of `workdir`, with `changes` made (each found once);
    its path relative to `workdir`."""
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    for example, ours in changes.items():
        assert text.count(example) == 1, example
        text = text.replace(example, ours)
    path = workdir / ".github" / "workflows" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path.relative_to(workdir))


def _stand_in(root: Path, name: str) -> Path:
    """A git repository holding the stand-in tests/act/NAME, for --local-repository."""
    folder = root / name
    shutil.copytree(STAND_INS / name, folder)
    _commit_all(folder)
    return folder


def _said(run: ActRun, job: str) -> str:
    """Everything the job printed, one line."""
    return " ".join(" ".join(run.messages(job)).split())


def test_every_example_is_run_here_or_by_its_own_module() -> None:
    """Each workflow of docs/examples/ is run under act by this module or by the one named."""
    workflows = sorted(p.name for p in EXAMPLES.glob("*.yml") if p.name != "latency-targets.yml")
    assert workflows == sorted([*RUN_HERE, *RUN_ELSEWHERE])
    for module in RUN_ELSEWHERE.values():
        assert (REPO_ROOT / module).is_file()


# --- the README's two workflows --------------------------------------------------------------


@dataclass(frozen=True)
class ReadmeRuns:
    openai: ActRun
    http: ActRun
    github: FakeGitHub


@pytest.fixture(scope="module")
def readme_runs(
    act_env: ActEnv,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ReadmeRuns]:
    """openai-chat.yml and http-endpoint.yml, each on a pull_request, the Docker action against
    a demo endpoint on the bridge, the comment to the fake GitHub API."""
    root = tmp_path_factory.mktemp("act-readme")
    repository = _repository_copy(root / "repository")
    workdir = root / "workdir"
    openai = _workflow(
        workdir,
        "openai-chat.yml",
        OPENAI_TO_DEMO,
    )
    http = _workflow(
        workdir,
        "http-endpoint.yml",
        {
            "url: https://preview-${{ github.event.number }}.example.com/api/search?q=hello": (
                "url: ${{ env.ECHO_URL }}"
            )
        },
    )
    _commit_all(workdir)
    event = _pull_request(root)
    with (
        FakeGitHub(token=TOKEN, host=act_env.bridge) as github,
        demo_server(act_env.bridge) as url,
        demo_server(act_env.bridge, "--preset", "echo") as echo,
    ):
        common = (
            *("-e", event, "-s", f"GITHUB_TOKEN={TOKEN}", "-s", f"OPENAI_API_KEY={OPENAI_KEY}"),
            *("--env", f"GITHUB_API_URL={github.url}", "--env", f"GITHUB_REPOSITORY={REPOSITORY}"),
            *("--env", f"DEMO_URL={url}", "--env", f"ECHO_URL={echo}"),
            *("--local-repository", f"latency-gate/latency-gate@main={repository}"),
        )
        first = run_act(act_env, workdir, "pull_request", openai, *common)
        second = run_act(act_env, workdir, "pull_request", http, *common)
        print(f"README workflows under act: {first.seconds:.1f} s, {second.seconds:.1f} s")
        yield ReadmeRuns(first, second, github)


def test_openai_workflow_passes_as_pasted(readme_runs: ReadmeRuns) -> None:
    """The README's first workflow runs: a streamed chat request with its model and prompt,
    PASS within its budgets, the verdict and the first-token budget in its outputs and log."""
    run = readme_runs.openai
    assert run.jobs() == {"latency": "success"}, _describe(run)
    outputs = run.outputs("latency")
    assert (outputs.get("verdict"), outputs.get("passed")) == ("PASS", "true"), _describe(run)
    said = _said(run, "latency")
    assert "first-token p95" in said, _describe(run)


def test_openai_workflow_comments_once_without_the_key(readme_runs: ReadmeRuns) -> None:
    """Its pull request gets one comment, which holds no trace of the API key."""
    comments = [c for c in readme_runs.github.all_comments() if "PASS" in c["body"]]
    assert len(comments) >= 1
    for comment in readme_runs.github.all_comments():
        assert OPENAI_KEY not in comment["body"]
        assert OPENAI_KEY[-12:] not in comment["body"]
    assert readme_runs.github.violations == []


def test_http_workflow_passes_and_reads_its_output(readme_runs: ReadmeRuns) -> None:
    """The README's plain HTTP workflow runs: PASS, and its last step echoes the warm p95 from
    the gate step's outputs."""
    run = readme_runs.http
    assert run.jobs() == {"latency": "success"}, _describe(run)
    assert run.outputs("latency").get("verdict") == "PASS", _describe(run)
    assert "warm p95 was 0." in _said(run, "latency"), _describe(run)


# --- a model upgrade: two models at one URL, side by side -----------------------------------


@dataclass(frozen=True)
class UpgradeRun:
    run: ActRun
    github: FakeGitHub
    requests: list[dict[str, object]]


@pytest.fixture(scope="module")
def upgrade_run(
    act_env: ActEnv,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[UpgradeRun]:
    """model-upgrade.yml on a pull request: the Docker action asks a demo endpoint on the bridge
    for the candidate model and for today's (the demo answers both alike), the comment to the
    fake GitHub API; the demo's log of the requests it got (--log) says which model each asked."""
    root = tmp_path_factory.mktemp("act-upgrade")
    repository = _repository_copy(root / "repository")
    workdir = root / "workdir"
    workflow = _workflow(
        workdir,
        "model-upgrade.yml",
        OPENAI_TO_DEMO,
    )
    _commit_all(workdir)
    log = root / "requests.jsonl"
    with FakeGitHub(token=TOKEN, host=act_env.bridge) as github:
        with demo_server(act_env.bridge, "--log", str(log)) as url:
            run = run_act(
                act_env,
                workdir,
                "pull_request",
                workflow,
                *("-e", _pull_request(root), "-s", f"GITHUB_TOKEN={TOKEN}"),
                *("-s", f"OPENAI_API_KEY={OPENAI_KEY}", "--env", f"DEMO_URL={url}"),
                *("--env", f"GITHUB_API_URL={github.url}"),
                *("--env", f"GITHUB_REPOSITORY={REPOSITORY}"),
                *("--local-repository", f"latency-gate/latency-gate@main={repository}"),
            )
        print(f"model-upgrade.yml under act: {run.seconds:.1f} s")
        # The server has stopped: its log is whole.
        requests = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        yield UpgradeRun(run, github, requests)


def test_upgrade_workflow_measures_both_models_and_passes(upgrade_run: UpgradeRun) -> None:
    """The two models, answered alike, are not told apart: PASS, the candidate named against
    today's model in the log, and the cost of an answer on each at its price."""
    run = upgrade_run.run
    assert run.jobs() == {"upgrade": "success"}, _describe(run)
    assert (run.outputs("upgrade").get("verdict"), run.outputs("upgrade").get("passed")) == (
        "PASS",
        "true",
    ), _describe(run)
    said = _said(run, "upgrade")
    assert "candidate gpt-4.1-mini: PASS against gpt-4o-mini" in said, _describe(run)
    assert "the head costs x" in said, _describe(run)


def test_upgrade_workflow_asks_each_model_the_same_prompts(upgrade_run: UpgradeRun) -> None:
    """The endpoint got calls for both models, as many of each, interleaved: the i-th of each
    arm with the same prompt."""
    by_model: dict[object, list[str]] = {}
    for request in upgrade_run.requests:
        body = request["body"]
        assert isinstance(body, dict)
        messages = body["messages"]
        assert isinstance(messages, list)
        by_model.setdefault(body["model"], []).append(str(messages[-1]["content"]))
    assert set(by_model) == {"gpt-4.1-mini", "gpt-4o-mini"}
    head, base = by_model["gpt-4.1-mini"], by_model["gpt-4o-mini"]
    assert len(head) == len(base) > 20
    assert sorted(head) == sorted(base)  # in a burst, the arrival order is the network's


def test_upgrade_workflow_comments_once_naming_both_models(upgrade_run: UpgradeRun) -> None:
    """Its pull request gets one comment that says the upgrade, without the API key."""
    comments = list(upgrade_run.github.all_comments())
    assert len(comments) == 1
    body = comments[0]["body"]
    assert "candidate gpt-4.1-mini" in body
    assert "gpt-4o-mini" in body
    assert OPENAI_KEY not in body
    assert OPENAI_KEY[-12:] not in body
    assert upgrade_run.github.violations == []


# --- main's last result as the baseline, the host form on a loopback target -------------------


@dataclass(frozen=True)
class BaselineRuns:
    push: ActRun
    pull_request: ActRun


@pytest.fixture(scope="module")
def baseline_runs(
    act_env: ActEnv,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[BaselineRuns]:
    """baseline-from-main.yml on a push (saves the baseline in act's cache server), then on a
    pull request (restores it and compares). Its targets file is docs/examples/
    latency-targets.yml with each target's URL a demo's, the local one on 127.0.0.1, which
    only the host form reaches."""
    root = tmp_path_factory.mktemp("act-baseline")
    cache_action = _cache_action_copy(root / "actions-cache")
    repository = _repository_copy(root / "repository")
    workdir = root / "workdir"
    workflow = _workflow(workdir, "baseline-from-main.yml", {})
    event = _pull_request(root)
    push = _event(
        root,
        "push",
        {
            "ref": "refs/heads/main",
            "repository": {"default_branch": "main", "full_name": REPOSITORY},
        },
    )
    with (
        FakeGitHub(token=TOKEN, host="127.0.0.1") as github,
        demo_server("127.0.0.1") as local,
        demo_server("127.0.0.1") as free,
        demo_server("127.0.0.1") as paid,
    ):
        targets = (EXAMPLES / "latency-targets.yml").read_text(encoding="utf-8")
        for example, ours in {
            "http://127.0.0.1:8080/v1/chat/completions": local,
            "https://free.example.com/v1/chat/completions": free,
            "https://api.example.com/v1/chat/completions": paid,
        }.items():
            assert targets.count(example) == 1, example
            targets = targets.replace(example, ours)
        (workdir / ".github" / "latency-targets.yml").write_text(targets, encoding="utf-8")
        _commit_all(workdir)
        common = (
            # runs-on: [self-hosted, linux], the machine that serves the local target.
            *("-P", "self-hosted=-self-hosted", "-P", "linux=-self-hosted"),
            *("--local-repository", f"actions/cache@v5={cache_action}"),
            *("--local-repository", f"latency-gate/latency-gate@main={repository}"),
            *("-s", f"GITHUB_TOKEN={TOKEN}", "--env", f"GITHUB_API_URL={github.url}"),
            *("-s", "FREE_API_KEY=free-key-act-1234", "-s", "PAID_API_KEY=paid-key-act-1234"),
            *("--env", f"GITHUB_REPOSITORY={REPOSITORY}"),
        )
        cache_server = root / "cache-server"
        first = run_act(
            act_env, workdir, "push", workflow, *common, "-e", push, cache_server=cache_server
        )
        second = run_act(
            act_env,
            workdir,
            "pull_request",
            workflow,
            *common,
            "-e",
            event,
            cache_server=cache_server,
        )
        print(f"baseline-from-main.yml under act: {first.seconds:.1f} s, {second.seconds:.1f} s")
        yield BaselineRuns(first, second)


def test_baseline_push_probes_the_loopback_target_and_saves(baseline_runs: BaselineRuns) -> None:
    """The push runs the host form, which reaches the target on 127.0.0.1 (the Docker action
    would refuse it), probes the three targets and saves the result as main's baseline."""
    run = baseline_runs.push
    assert run.jobs() == {"latency": "success"}, _describe(run)
    said = _said(run, "latency")
    assert "this Docker action runs in a container" not in said
    for name in ("local", "free-tier", "paid"):
        assert name in said, name
    assert "Cache saved with key: latency-baseline-" in said, _describe(run)


def test_baseline_pull_request_compares_with_main(baseline_runs: BaselineRuns) -> None:
    """The pull request restores main's result and is compared with it: nothing regressed on
    unchanged endpoints, and it saves nothing."""
    run = baseline_runs.pull_request
    assert run.jobs() == {"latency": "success"}, _describe(run)
    said = _said(run, "latency")
    assert "Cache restored from key: latency-baseline-" in said, _describe(run)
    assert "No baseline" not in said, _describe(run)
    assert "Save main's result" not in run.steps("latency")


# --- a matrix of runners merged into one report ----------------------------------------------


@pytest.fixture(scope="module")
def matrix_run(
    act_env: ActEnv,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
) -> ActRun:
    """matrix-merge.yml on a pull request: two probe jobs (both legs on this machine), their
    results through the artifact stand-ins, one merge job."""
    root = tmp_path_factory.mktemp("act-matrix")
    repository = _repository_copy(root / "repository")
    upload = _stand_in(root, "upload-artifact")
    download = _stand_in(root, "download-artifact")
    artifacts = root / "artifacts"
    artifacts.mkdir()
    workdir = root / "workdir"
    workflow = _workflow(
        workdir,
        "matrix-merge.yml",
        {
            "url: https://preview.example.com/v1/chat/completions": "url: ${{ env.DEMO_URL }}",
            # No GitHub to install from: the same package, from this repository's copy.
            '"latency-gate @ git+https://github.com/latency-gate/latency-gate@main"': (
                f'"latency-gate @ file://{repository}"'
            ),
            # gh talks to github.com only: the comment step says what it would post instead.
            'gh pr comment "$PR" --repo "$GITHUB_REPOSITORY" --body-file merged.md': (
                'echo "would post merged.md on pull request $PR of $GITHUB_REPOSITORY"'
            ),
            "--edit-last --create-if-none": "",
        },
    )
    _commit_all(workdir)
    with demo_server(act_env.bridge) as url:
        run = run_act(
            act_env,
            workdir,
            "pull_request",
            workflow,
            *("-e", _pull_request(root), "-P", "ubuntu-24.04-arm=-self-hosted"),
            *("--local-repository", f"latency-gate/latency-gate@main={repository}"),
            *("--local-repository", f"actions/upload-artifact@v6={upload}"),
            *("--local-repository", f"actions/download-artifact@v7={download}"),
            *("--env", f"LATENCY_GATE_ACT_ARTIFACTS={artifacts}", "--env", f"DEMO_URL={url}"),
            *("--env", f"GITHUB_REPOSITORY={REPOSITORY}"),
        )
    print(f"matrix-merge.yml under act: {run.seconds:.1f} s")
    return run


def test_matrix_jobs_all_succeed(matrix_run: ActRun) -> None:
    """Both probe legs and the merge job succeed: the one verdict is PASS."""
    results = matrix_run.jobs()
    assert set(results.values()) == {"success"}, _describe(matrix_run)
    assert any(job.startswith("merge") for job in results), _describe(matrix_run)
    assert any(job.startswith("probe") for job in results), _describe(matrix_run)


def test_matrix_merge_reads_both_legs(matrix_run: ActRun) -> None:
    """The merge job found both legs' results (x64.json and arm64.json) and merged them."""
    merge = next(job for job in matrix_run.jobs() if job.startswith("merge"))
    said = _said(matrix_run, merge)
    assert "x64.json" in said, _describe(matrix_run)
    assert "arm64.json" in said, _describe(matrix_run)
    assert "would post merged.md on pull request" in said, _describe(matrix_run)
