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
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml
from conftest import REPO_ROOT, DockerEnv
from demo_process import demo_server
from fake_github import FakeGitHub
from loopback_registry import (
    Registry,
    base_layer_count,
    build_and_push,
    loopback_registry,
    manifest_layers,
    remove_every_copy,
    short,
)
from test_container import ActionRun, run_action

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TAG = "test"
DEMO_SECONDS = 300


@dataclass(frozen=True)
class Pulled:
    """What the push, the removal and the pull of the image left behind."""

    reference: str
    pushed_digest: str
    present_before_pull: bool
    pull_output: str
    manifest_layers: list[str]
    base_layer_count: int


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """Debian's docker-registry on 127.0.0.1:PORT with its own storage folder, stopped by PID."""
    with loopback_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture(scope="module")
def pulled(docker_env: DockerEnv, registry: Registry) -> Iterator[Pulled]:
    """The image built on the stand-in base, pushed, removed locally, then pulled back."""
    pushed = build_and_push(docker_env, registry, TAG)
    reference = pushed.reference
    present = remove_every_copy(docker_env, pushed)

    pull = docker_env.run("pull", reference, timeout=300)
    try:
        yield Pulled(
            reference=reference,
            pushed_digest=pushed.digest,
            present_before_pull=present,
            pull_output=pull.stdout,
            manifest_layers=manifest_layers(registry, TAG),
            base_layer_count=base_layer_count(docker_env),
        )
    finally:
        docker_env.run("image", "rm", reference, check=False)


@pytest.fixture(scope="module")
def registry_run(
    docker_env: DockerEnv, pulled: Pulled, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ActionRun, FakeGitHub]]:
    """The pulled image run as the runner runs a docker:// action, on a pull request."""
    root = tmp_path_factory.mktemp("registry-run")
    with (
        demo_server("127.0.0.1", "--preset", "local", "--duration", str(DEMO_SECONDS)) as url,
        FakeGitHub() as github,
    ):
        run = run_action(
            docker_env,
            pulled.reference,
            root,
            {"url": url, "prompt": "Say hello.", "stream": "true", "max-warm-p95": "2s"},
            event_name="pull_request",
            api_url=github.url,
        )
        yield run, github


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
    assert _layers_with_status(pulled.pull_output, "Already exists") == [short(d) for d in base]
    assert sorted(_layers_with_status(pulled.pull_output, "Pull complete")) == sorted(
        short(d) for d in added
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
