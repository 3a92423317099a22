"""A real image registry on loopback, and the action's image built and pushed to it.

Shared by tests/test_registry.py (the pushed image pulled back with `docker pull` and run as the
runner runs it) and tests/test_act.py (the same image named by a `docker://` step and pulled by
act). Debian's `docker-registry` (the CNCF distribution registry, installed by
.ci/setup-registry.sh) serves on 127.0.0.1 with its storage in a temporary folder and is
stopped by PID. dockerd treats 127.0.0.0/8 as an insecure registry by default, so no TLS or
engine configuration is needed.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import DockerEnv, _unavailable, free_port, stop_process

# The repository name the image is pushed under, in every registry the tests start.
REPOSITORY = "latency-gate"
START_TIMEOUT = 15.0
MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"


@dataclass(frozen=True)
class Registry:
    """A running registry: its `host:port` and where it keeps its files."""

    address: str
    storage: Path


@dataclass(frozen=True)
class Pushed:
    """The image as built and pushed: its reference in the registry, digest and image ID."""

    reference: str
    digest: str  # the manifest digest the push reported, sha256:...
    image_id: str


def wait_until(
    ready: Callable[[], bool],
    what: str,
    proc: subprocess.Popen[bytes],
    log: Path,
    give_up: Callable[[], bool] | None = None,
) -> bool:
    """Poll `ready()` every 0.1 s for at most START_TIMEOUT seconds while `proc` is alive.

    True once it is ready. If `proc` exits first, False when `give_up()` says so (the caller
    tries again), else the test fails with the process's log.
    """
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            if give_up is not None and give_up():
                return False
            pytest.fail(f"{what} exited {proc.returncode}:\n{log.read_text(errors='replace')}")
        if ready():
            return True
        time.sleep(0.1)
    pytest.fail(f"{what} not ready after {START_TIMEOUT:.0f} s:\n{log.read_text(errors='replace')}")


# How many ports to try: free_port() names a port nothing listens on now, and a server of
# another test (on another xdist worker) can bind it before the registry does.
START_TRIES = 3


@contextlib.contextmanager
def loopback_registry(root: Path) -> Iterator[Registry]:
    """Debian's docker-registry on 127.0.0.1:PORT with its storage under `root`, stopped by PID.

    The registry cannot be handed a bound socket, so its port is guessed: it is ready only when
    /v2/ answers with the header whose value only this registry knows (a server of another test
    that took the port first would otherwise pass for it), and a registry that could not bind
    its port is started again on another. Skips when it is not installed (fails under
    LATENCY_GATE_REQUIRE_DOCKER=1).
    """
    executable = shutil.which("docker-registry")
    if executable is None:
        _unavailable(
            "docker-registry is not installed: bash .ci/setup-registry.sh",
            "LATENCY_GATE_REQUIRE_DOCKER",
        )
    storage = root / "storage"
    identity = uuid.uuid4().hex
    for attempt in range(1, START_TRIES + 1):
        port = free_port()
        config = {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": True}},
            "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}},
            "http": {"addr": f"127.0.0.1:{port}", "headers": {IDENTITY_HEADER: [identity]}},
        }
        (root / "config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        log = root / f"registry-{attempt}.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [executable, "serve", str(root / "config.yml")],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            ready = wait_until(
                functools.partial(_is_ours, f"http://127.0.0.1:{port}/v2/", identity),
                "docker-registry",
                proc,
                log,
                give_up=functools.partial(_port_taken, log, again=attempt < START_TRIES),
            )
            if ready:
                yield Registry(address=f"127.0.0.1:{port}", storage=storage)
                return
        finally:
            stop_process(proc)


IDENTITY_HEADER = "X-Latency-Gate-Registry"


def _is_ours(url: str, identity: str) -> bool:
    try:
        answer: str | None = httpx.get(url, timeout=1.0).headers.get(IDENTITY_HEADER)
    except httpx.HTTPError:
        return False
    return answer == identity


def _port_taken(log: Path, *, again: bool) -> bool:
    """Whether to start the registry again: it could not bind its port, and tries are left."""
    return again and "address already in use" in log.read_text(errors="replace")


def build_and_push(docker_env: DockerEnv, registry: Registry, tag: str) -> Pushed:
    """The project's Dockerfile built on the stand-in base, tagged in `registry` and pushed."""
    reference = f"{registry.address}/{REPOSITORY}:{tag}"
    docker_env.build_action_image(reference)
    push = docker_env.run("push", reference, timeout=300)
    digest = re.search(rf"^{tag}: digest: (sha256:[0-9a-f]{{64}}) size: \d+$", push.stdout, re.M)
    assert digest is not None, push.stdout
    image_id = docker_env.run("image", "inspect", "--format", "{{.Id}}", reference).stdout.strip()
    return Pushed(reference=reference, digest=digest[1], image_id=image_id)


def remove_every_copy(docker_env: DockerEnv, pushed: Pushed) -> bool:
    """Remove the image by ID, forced, so every tag of it goes; True if it is still there.

    A build of the same commit on the same base has the same ID, and removing by ID would take
    another test's copy with it: each module untags what it built when it ends (test_container's
    `action_image`, this module's callers), and a tag of another test still on this ID fails the
    test here, naming it, instead of removing that test's image under it.
    """
    tags = json.loads(
        docker_env.run("image", "inspect", "--format", "{{json .RepoTags}}", pushed.image_id).stdout
    )
    others = sorted(set(tags or []) - {pushed.reference})
    if others:
        pytest.fail(
            f"image {pushed.image_id[:19]} is also tagged {', '.join(others)}: another test's "
            "build of this commit, which removing the image by ID would take with it"
        )
    docker_env.run("image", "rm", "--force", pushed.image_id)
    by_reference = docker_env.run("image", "inspect", pushed.reference, check=False)
    by_id = docker_env.run("image", "inspect", pushed.image_id, check=False)
    return by_reference.returncode == 0 or by_id.returncode == 0


def manifest_layers(registry: Registry, tag: str) -> list[str]:
    """The digests of the image's layers, bottom first, as the registry's manifest lists them."""
    manifest = httpx.get(
        f"http://{registry.address}/v2/{REPOSITORY}/manifests/{tag}",
        headers={"Accept": MANIFEST_V2},
        timeout=10.0,
    )
    manifest.raise_for_status()
    return [str(layer["digest"]) for layer in manifest.json()["layers"]]


def base_layer_count(docker_env: DockerEnv) -> int:
    """How many layers the stand-in base has: the image's lowest ones, which a pull reuses."""
    layers = docker_env.run(
        "image", "inspect", "--format", "{{len .RootFS.Layers}}", docker_env.base_image
    )
    return int(layers.stdout)


def short(digest: str) -> str:
    """A layer digest as `docker pull` prints it: the first 12 hex digits."""
    return digest.removeprefix("sha256:")[:12]
