"""The prebuilt image's pull path, for real: push to a registry, pull it back, run the action.

A released action.yml says `image: docker://ghcr.io/OWNER/latency-gate:VERSION`: the runner
pulls that image and runs it with the same `docker run` shape as a Dockerfile action. Here
Debian's `docker-registry` (the CNCF distribution registry, installed by .ci/setup-registry.sh)
serves on 127.0.0.1 with its storage in a temporary folder; the image is built on the stand-in
base, pushed, removed from the engine, pulled back and run against a demo endpoint started with
`latency-gate demo-server`, as a workflow's earlier step would. dockerd treats 127.0.0.0/8 as an
insecure registry by default, so no TLS or engine configuration is needed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import REPO_ROOT, DockerEnv, _unavailable, free_port
from fake_github import FakeGitHub
from test_container import ActionRun, run_action

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPOSITORY = "latency-gate"
TAG = "test"
MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
START_TIMEOUT = 15.0
DEMO_SECONDS = 300


@dataclass(frozen=True)
class Registry:
    """A running registry: its `host:port` and where it keeps its files."""

    address: str
    storage: Path


@dataclass(frozen=True)
class Pulled:
    """What the push, the removal and the pull of the image left behind."""

    reference: str
    pushed_digest: str
    present_before_pull: bool
    pull_output: str
    manifest_layers: list[str]
    base_layer_count: int


def _wait_until(
    ready: Callable[[], bool], what: str, proc: subprocess.Popen[bytes], log: Path
) -> None:
    """Poll `ready()` every 0.1 s for at most START_TIMEOUT seconds while `proc` is alive."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited {proc.returncode}:\n{log.read_text(errors='replace')}")
        if ready():
            return
        time.sleep(0.1)
    pytest.fail(f"{what} not ready after {START_TIMEOUT:.0f} s:\n{log.read_text(errors='replace')}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process this module started, by its PID: SIGTERM, then SIGKILL after 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code < 500
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """Debian's docker-registry on 127.0.0.1:PORT with its own storage folder, stopped by PID."""
    executable = shutil.which("docker-registry")
    if executable is None:
        _unavailable(
            "docker-registry is not installed: bash .ci/setup-registry.sh",
            "LATENCY_GATE_REQUIRE_DOCKER",
        )
    root = tmp_path_factory.mktemp("registry")
    storage = root / "storage"
    port = free_port()
    config = {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }
    (root / "config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    log = root / "registry.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [executable, "serve", str(root / "config.yml")],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until(lambda: _answers(f"http://127.0.0.1:{port}/v2/"), "docker-registry", proc, log)
        yield Registry(address=f"127.0.0.1:{port}", storage=storage)
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def pulled(docker_env: DockerEnv, registry: Registry) -> Iterator[Pulled]:
    """The image built on the stand-in base, pushed, removed locally, then pulled back."""
    reference = f"{registry.address}/{REPOSITORY}:{TAG}"
    build = docker_env.run(
        "build",
        "--network",
        "host",
        "--build-arg",
        f"BASE_IMAGE={docker_env.base_image}",
        "-t",
        reference,
        "-f",
        str(REPO_ROOT / "Dockerfile"),
        str(REPO_ROOT),
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, f"docker build failed:\n{build.stdout}\n{build.stderr}"
    push = docker_env.run("push", reference, timeout=300)
    digest = re.search(rf"^{TAG}: digest: (sha256:[0-9a-f]{{64}}) size: \d+$", push.stdout, re.M)
    assert digest is not None, push.stdout
    # By ID and forced: every tag of this image goes (the container tests' build of the same
    # commit has the same ID), so its layers above the base must come from the registry.
    image_id = docker_env.run("image", "inspect", "--format", "{{.Id}}", reference).stdout
    docker_env.run("image", "rm", "--force", image_id.strip())
    present = docker_env.run("image", "inspect", reference, check=False).returncode == 0

    manifest = httpx.get(
        f"http://{registry.address}/v2/{REPOSITORY}/manifests/{TAG}",
        headers={"Accept": MANIFEST_V2},
        timeout=10.0,
    )
    manifest.raise_for_status()
    base_layers = docker_env.run(
        "image", "inspect", "--format", "{{len .RootFS.Layers}}", docker_env.base_image
    )
    pull = docker_env.run("pull", reference, timeout=300)
    try:
        yield Pulled(
            reference=reference,
            pushed_digest=digest.group(1),
            present_before_pull=present,
            pull_output=pull.stdout,
            manifest_layers=[layer["digest"] for layer in manifest.json()["layers"]],
            base_layer_count=int(base_layers.stdout),
        )
    finally:
        docker_env.run("image", "rm", reference, check=False)


@pytest.fixture(scope="module")
def registry_run(
    docker_env: DockerEnv, pulled: Pulled, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ActionRun, FakeGitHub]]:
    """The pulled image run as the runner runs a docker:// action, on a pull request."""
    port = free_port()
    root = tmp_path_factory.mktemp("registry-run")
    log = root / "demo-server.log"
    with log.open("wb") as sink:
        demo = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "latency_gate",
                "demo-server",
                "--preset",
                "local",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--duration",
                str(DEMO_SECONDS),
            ],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        _wait_until(lambda: _answers(f"http://127.0.0.1:{port}/"), "demo-server", demo, log)
        with FakeGitHub() as github:
            run = run_action(
                docker_env,
                pulled.reference,
                root,
                {"url": url, "prompt": "Say hello.", "stream": "true", "max-warm-p95": "2s"},
                event_name="pull_request",
                api_url=github.url,
            )
            yield run, github
    finally:
        _stop(demo)


def _short(digest: str) -> str:
    """A layer digest as `docker pull` prints it: the first 12 hex digits."""
    return digest.removeprefix("sha256:")[:12]


def _layers_with_status(output: str, status: str) -> list[str]:
    return re.findall(rf"^([0-9a-f]{{12}}): {status}$", output, re.M)


def test_local_copy_gone_before_pull(pulled: Pulled) -> None:
    """After the push the engine holds no copy of the image, so the run needs the pull."""
    assert pulled.present_before_pull is False


def test_pull_gets_the_pushed_image(pulled: Pulled) -> None:
    """The pull resolves the tag to the digest the push reported."""
    assert f"\nDigest: {pulled.pushed_digest}\n" in pulled.pull_output
    assert f"Status: Downloaded newer image for {pulled.reference}" in pulled.pull_output


def test_pull_downloads_every_layer_above_the_base(pulled: Pulled) -> None:
    """The base's layers are reused; every layer the Dockerfile added comes from the registry."""
    base = pulled.manifest_layers[: pulled.base_layer_count]
    added = pulled.manifest_layers[pulled.base_layer_count :]
    assert len(added) >= 3  # the dependency layer and the two COPY layers, at least
    assert _layers_with_status(pulled.pull_output, "Already exists") == [_short(d) for d in base]
    assert sorted(_layers_with_status(pulled.pull_output, "Pull complete")) == sorted(
        _short(d) for d in added
    )


def test_action_from_pulled_image_exits_zero(
    registry_run: tuple[ActionRun, FakeGitHub],
) -> None:
    """The pulled image, run with the runner's flags, probes the endpoint and passes."""
    run, _ = registry_run
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"


def test_action_from_pulled_image_outputs(registry_run: tuple[ActionRun, FakeGitHub]) -> None:
    """Every declared output is written: PASS, numbers in seconds, the report, the comment URL."""
    run, github = registry_run
    declared = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))["outputs"]
    assert set(run.outputs) == set(declared)
    assert run.outputs["passed"] == "true"
    assert run.outputs["verdict"] == "PASS"
    assert 0.02 < float(run.outputs["warm-p95"]) < 2.0
    assert float(run.outputs["error-rate"]) == 0.0
    assert (run.workspace / run.outputs["report-path"]).is_file()
    (comment,) = github.all_comments()
    assert run.outputs["comment-url"] == comment["html_url"]
