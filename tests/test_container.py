"""The action's container, built from the project's Dockerfile and run as GitHub's runner runs it.

The image is built on the stand-in base (tests/container/, see conftest.docker_env) and started
with the runner's `docker run` shape: --workdir /github/workspace, INPUT_* variables with hyphens
kept, the GITHUB_* variables, and the four mounts (workspace, file_commands, workflow, home).
--network host lets it reach the loopback demo endpoint and the fake GitHub API in this process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, DockerEnv
from fake_github import FakeGitHub, parse_github_output

from latency_gate.demo import EndpointSpec, serve_in_thread

pytestmark = [pytest.mark.docker, pytest.mark.slow]

IMAGE = "localhost/latency-gate-action:test"
REPOSITORY = "octo-org/octo-repo"
TOKEN = "ghs_fake_token"
API_KEY = "sk-container-test-secret-1234"
PR_NUMBER = 42
# A 20 ms endpoint: well inside the default 3 s budgets on a noisy machine, far over 1 ms.
ENDPOINT = EndpointSpec(name="container-demo", latency=0.02, tokens=5, token_interval=0.001)
RUN_TIMEOUT = 180.0


@dataclass(frozen=True)
class ActionRun:
    """What one `docker run` of the action left behind."""

    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    workspace: Path


@pytest.fixture(scope="module")
def action_image(docker_env: DockerEnv) -> Iterator[str]:
    """The project's Dockerfile built on the stand-in base image (the runner's build, plus args),
    untagged when the module ends: another module's build of this commit has the same image ID,
    and tests/loopback_registry.remove_every_copy refuses to remove an image another test tagged.

    LATENCY_GATE_ACTION_IMAGE names an image already built instead: the release workflow tests
    the very image it is about to push (left as it is).
    """
    prebuilt = os.environ.get("LATENCY_GATE_ACTION_IMAGE")
    if prebuilt:
        yield prebuilt
        return
    docker_env.build_action_image(IMAGE)
    try:
        yield IMAGE
    finally:
        docker_env.run("image", "rm", IMAGE, check=False)  # the tag; layers others use stay


def _event(event_name: str) -> dict[str, object]:
    if event_name == "pull_request":
        return {
            "action": "synchronize",
            "number": PR_NUMBER,
            "pull_request": {"number": PR_NUMBER, "head": {"sha": "0" * 40}},
            "repository": {"full_name": REPOSITORY},
        }
    return {"ref": "refs/heads/main", "repository": {"full_name": REPOSITORY}}


def run_action(
    docker_env: DockerEnv,
    image: str,
    root: Path,
    inputs: Mapping[str, str],
    *,
    event_name: str,
    api_url: str,
) -> ActionRun:
    """Run the image once as the runner would, with `inputs` as the step's `with:`."""
    dirs = {name: root / name for name in ("workspace", "file_commands", "workflow", "home")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    # The runner names the command files with a fresh GUID per step and creates them empty.
    step = uuid.uuid4()
    output_file = f"set_output_{step}"
    summary_file = f"step_summary_{step}"
    for name in (output_file, summary_file, f"set_env_{step}", f"add_path_{step}"):
        (dirs["file_commands"] / name).touch()
    (dirs["workflow"] / "event.json").write_text(json.dumps(_event(event_name)), encoding="utf-8")

    env = {
        # The runner passes every declared input, with its default when the step omits it.
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_COMMENT": "auto",
        **{f"INPUT_{name.upper()}": value for name, value in inputs.items()},
        "HOME": "/github/home",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION": "__self",
        "GITHUB_ACTOR": "octocat",
        "GITHUB_API_URL": api_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_GRAPHQL_URL": "https://api.github.com/graphql",
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_REPOSITORY_OWNER": REPOSITORY.split("/", maxsplit=1)[0],
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_WORKFLOW": "latency",
        "GITHUB_JOB": "gate",
        "GITHUB_RUN_ID": "1234567890",
        "GITHUB_RUN_NUMBER": "7",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_SHA": "0" * 40,
        "GITHUB_REF": "refs/pull/42/merge" if event_name == "pull_request" else "refs/heads/main",
        "GITHUB_OUTPUT": f"/github/file_commands/{output_file}",
        "GITHUB_STEP_SUMMARY": f"/github/file_commands/{summary_file}",
        "GITHUB_ENV": f"/github/file_commands/set_env_{step}",
        "GITHUB_PATH": f"/github/file_commands/add_path_{step}",
        "RUNNER_OS": "Linux",
        "RUNNER_ARCH": "X64",
        "RUNNER_NAME": "GitHub Actions 2",
        # Set, but not mounted: the action must not rely on it.
        "RUNNER_TEMP": "/home/runner/work/_temp",
        "RUNNER_TOOL_CACHE": "/opt/hostedtoolcache",
    }
    command = ["run", "--rm", "--network", "host", "--workdir", "/github/workspace"]
    for name, value in env.items():
        command += ["-e", f"{name}={value}"]
    command += [
        "-v",
        f"{dirs['workspace']}:/github/workspace",
        "-v",
        f"{dirs['file_commands']}:/github/file_commands",
        "-v",
        f"{dirs['workflow']}:/github/workflow",
        "-v",
        f"{dirs['home']}:/github/home",
        image,
    ]
    try:
        done = docker_env.run(*command, timeout=RUN_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the action did not finish within {RUN_TIMEOUT:.0f} s: {exc.stdout!r}")
    return ActionRun(
        returncode=done.returncode,
        stdout=done.stdout,
        stderr=done.stderr,
        outputs=parse_github_output(
            (dirs["file_commands"] / output_file).read_text(encoding="utf-8")
        ),
        summary=(dirs["file_commands"] / summary_file).read_text(encoding="utf-8"),
        workspace=dirs["workspace"],
    )


@dataclass(frozen=True)
class PullRequestRuns:
    first: ActionRun
    second: ActionRun
    github: FakeGitHub


@pytest.fixture(scope="module")
def pr_runs(
    docker_env: DockerEnv, action_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PullRequestRuns]:
    """Two runs of the action on the same pull request, within budget, against one fake GitHub."""
    with FakeGitHub() as github, serve_in_thread(ENDPOINT) as servers:
        inputs = {
            "url": servers[0].url,
            "prompt": "Say hello.",
            "stream": "true",
            "api-key": API_KEY,
            "max-warm-p95": "2s",
        }
        first = run_action(
            docker_env,
            action_image,
            tmp_path_factory.mktemp("first"),
            inputs,
            event_name="pull_request",
            api_url=github.url,
        )
        second = run_action(
            docker_env,
            action_image,
            tmp_path_factory.mktemp("second"),
            inputs,
            event_name="pull_request",
            api_url=github.url,
        )
        yield PullRequestRuns(first, second, github)


@pytest.fixture(scope="module")
def breach_run(
    docker_env: DockerEnv, action_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ActionRun, FakeGitHub]]:
    """One run of the action on a push event with an impossible warm p95 budget of 1 ms."""
    with FakeGitHub() as github, serve_in_thread(ENDPOINT) as servers:
        run = run_action(
            docker_env,
            action_image,
            tmp_path_factory.mktemp("breach"),
            {"url": servers[0].url, "prompt": "Say hello.", "max-warm-p95": "1ms"},
            event_name="push",
            api_url=github.url,
        )
        yield run, github


def _describe(run: ActionRun) -> str:
    return f"exit {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"


def test_image_imports_the_package(docker_env: DockerEnv, action_image: str) -> None:
    """The built image runs the package from any working directory, as the runner's workdir."""
    done = docker_env.run(
        "run",
        "--rm",
        "--network",
        "host",
        "--workdir",
        "/github/workspace",
        "--entrypoint",
        "python",
        action_image,
        "-c",
        "import latency_gate, latency_gate.action; print(latency_gate.__version__)",
        timeout=60,
    )
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*\n", done.stdout)


def test_within_budget_exits_zero(pr_runs: PullRequestRuns) -> None:
    """A run within budget exits 0, both times."""
    assert pr_runs.first.returncode == 0, _describe(pr_runs.first)
    assert pr_runs.second.returncode == 0, _describe(pr_runs.second)


def test_within_budget_outputs(pr_runs: PullRequestRuns) -> None:
    """The outputs file holds every output: PASS, the numbers in seconds, paths and comment URL."""
    outputs = pr_runs.first.outputs
    declared = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))["outputs"]
    assert set(outputs) == set(declared)
    assert outputs["passed"] == "true"
    assert outputs["verdict"] == "PASS"
    assert 0.015 < float(outputs["warm-p50"]) < 1.0
    assert 0.015 < float(outputs["warm-p95"]) < 2.0
    assert 0.015 < float(outputs["concurrent-p95"]) < 3.0
    assert float(outputs["error-rate"]) == 0.0


def test_json_result_written_in_workspace(pr_runs: PullRequestRuns) -> None:
    """report-path names a JSON result inside the mounted workspace, with the five numbers."""
    path = pr_runs.first.workspace / pr_runs.first.outputs["report-path"]
    numbers = json.loads(path.read_text(encoding="utf-8"))["numbers"]
    assert {"cold_start", "warm_p50", "warm_p95", "concurrent_p95", "error_rate"} <= set(numbers)
    assert numbers["warm_p95"] == pytest.approx(float(pr_runs.first.outputs["warm-p95"]), abs=1e-6)


def test_summary_written(pr_runs: PullRequestRuns) -> None:
    """The job summary is Markdown with the verdict and the numbers table."""
    summary = pr_runs.first.summary
    assert summary.startswith("## ✅ latency-gate: PASS\n")
    assert re.search(
        r"^\| warm p95 \| [\d.]+ ms \| [^|]+ \| 2\.00 s \| ✅ PASS \| \d+ \|$", summary, re.M
    )


def test_secret_masked_first_and_never_shown(pr_runs: PullRequestRuns) -> None:
    """The API key is masked before anything else is printed and appears in no report."""
    run = pr_runs.first
    assert run.stdout.splitlines()[0] == f"::add-mask::{API_KEY}"
    assert run.stdout.count(API_KEY) == 1
    assert API_KEY not in run.summary
    result = (run.workspace / run.outputs["report-path"]).read_text(encoding="utf-8")
    assert API_KEY not in result


def test_comment_posted_once_then_updated(pr_runs: PullRequestRuns) -> None:
    """The first run creates one PR comment; the second updates that same comment in place."""
    github = pr_runs.github
    comments = list(github.all_comments())
    assert len(comments) == 1
    writes = [(r.method, r.path) for r in github.requests if r.method in {"POST", "PATCH"}]
    assert writes == [
        ("POST", f"/repos/{REPOSITORY}/issues/{PR_NUMBER}/comments"),
        ("PATCH", f"/repos/{REPOSITORY}/issues/comments/{comments[0]['id']}"),
    ]
    assert pr_runs.first.outputs["comment-url"] == comments[0]["html_url"]
    assert pr_runs.second.outputs["comment-url"] == comments[0]["html_url"]
    assert "<!-- latency-gate:comment:" in comments[0]["body"]


def test_fake_github_saw_only_valid_requests(pr_runs: PullRequestRuns) -> None:
    """Every request the container made to the GitHub API matches GitHub's OpenAPI description."""
    assert pr_runs.github.violations == []
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in pr_runs.github.requests)


def test_breach_exits_one(breach_run: tuple[ActionRun, FakeGitHub]) -> None:
    """A breached budget exits 1 (the hyphenated INPUT_MAX-WARM-P95 reached the code)."""
    run, _ = breach_run
    assert run.returncode == 1, _describe(run)


def test_breach_outputs_and_annotation(breach_run: tuple[ActionRun, FakeGitHub]) -> None:
    """A breach sets passed=false and verdict=FAIL and annotates the breached number."""
    run, _ = breach_run
    assert run.outputs["passed"] == "false"
    assert run.outputs["verdict"] == "FAIL"
    # The runner's escaping: ':' in a property value is written %3A.
    assert "::error title=latency-gate%3A warm p95 over budget::warm p95 is " in run.stdout
    assert run.summary.startswith("## ❌ latency-gate: FAIL")


def test_push_event_makes_no_github_call(breach_run: tuple[ActionRun, FakeGitHub]) -> None:
    """On a push event there is no PR to comment on: the GitHub API is not called."""
    run, github = breach_run
    assert github.requests == []
    assert run.outputs["comment-url"] == ""


def test_bad_input_exits_two(docker_env: DockerEnv, action_image: str, tmp_path: Path) -> None:
    """A malformed input exits 2 with an error annotation naming it, and measures nothing."""
    run = run_action(
        docker_env,
        action_image,
        tmp_path,
        {"url": "http://127.0.0.1:9/", "concurrency": "0"},
        event_name="push",
        api_url="http://127.0.0.1:9",
    )
    assert run.returncode == 2, _describe(run)
    assert "::error title=latency-gate%3A invalid input::" in run.stdout
    assert "concurrency" in run.stdout
    assert run.outputs == {}
